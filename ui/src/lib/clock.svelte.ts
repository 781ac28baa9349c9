// One shared "now" for every relative time on screen. It wakes the page only while something
// on screen reads it, and only when what is shown changes: every second for values shown to
// the second (countdowns, uptimes); for a relative time ("3 min ago", "22 d ago") when its
// text next changes (a roster of old sessions: not for hours). Each wake-up costs the web
// process far more than its few lines of script (WebKit collects garbage after it: 80 ms with
// 2,000 sessions, the window bench), so an idle window must not wake on a fixed beat.

import { createSubscriber } from 'svelte/reactivity';
import { relativeTimeChangesAt } from './format';

function ticker(ms: number): () => void {
  return createSubscriber((update) => {
    const timer = setInterval(update, ms);
    return () => clearInterval(timer);
  });
}

/** The longest one wait lasts: a machine that slept sees its times again within this (or at focus). */
const LONGEST_WAIT_MS = 3_600_000;

class Clock {
  #fine = ticker(1000);
  #coarse = ticker(30_000);
  // The relative times' wake-up: one timer, for the earliest change any reader asked for.
  #update: (() => void) | null = null;
  #due = Infinity;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #changes = createSubscriber((update) => {
    this.#update = update;
    this.#arm();
    // Back from sleep or another window: the times may all be stale.
    const refresh = () => update();
    window.addEventListener('focus', refresh);
    document.addEventListener('visibilitychange', refresh);
    return () => {
      window.removeEventListener('focus', refresh);
      document.removeEventListener('visibilitychange', refresh);
      this.#update = null;
      this.#disarm();
    };
  });

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

  /** Now, for `relativeTime(iso, …)`: read again when that text next changes. */
  near(iso: string | null): number {
    const now = Date.now();
    const at = relativeTimeChangesAt(iso, now);
    if (at === null) return now;
    // Counting seconds: the shared one-second beat.
    if (at - now <= 1000) return this.now;
    this.#changes();
    if (at < this.#due) {
      this.#due = at;
      this.#arm();
    }
    return now;
  }

  #arm(): void {
    const update = this.#update;
    if (!update || this.#due === Infinity) return;
    if (this.#timer) clearTimeout(this.#timer);
    const wait = Math.max(0, Math.min(this.#due - Date.now(), LONGEST_WAIT_MS));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      // The readers run again and ask for their next change.
      this.#due = Infinity;
      update();
    }, wait);
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#due = Infinity;
  }
}

export const clock = new Clock();
