// One shared "now" for every relative time on screen. It ticks only while something on
// screen reads it, and only as often as what is shown can change: every second for values
// shown to the second ("12 s ago", countdowns), every 30 s for the rest ("3 min ago",
// "22 d ago"). An idle window with old sessions wakes twice a minute, not every second.

import { createSubscriber } from 'svelte/reactivity';

function ticker(ms: number): () => void {
  return createSubscriber((update) => {
    const timer = setInterval(update, ms);
    return () => clearInterval(timer);
  });
}

/** Within this long of a time, it is shown to the second. */
const FINE_WITHIN_MS = 2 * 60_000;

class Clock {
  #fine = ticker(1000);
  #coarse = ticker(30_000);

  /** Now, for a value shown to the second: read again every second while it is on screen. */
  get now(): number {
    this.#fine();
    return Date.now();
  }

  /** Now, for a value shown to the minute or coarser: read again every 30 s. */
  get coarse(): number {
    this.#coarse();
    return Date.now();
  }

  /** Now, as precise as a relative time of `iso` needs: to the second near it, else coarse. */
  near(iso: string | null): number {
    const t = iso ? Date.parse(iso) : NaN;
    return Number.isFinite(t) && Math.abs(Date.now() - t) < FINE_WITHIN_MS ? this.now : this.coarse;
  }
}

export const clock = new Clock();
