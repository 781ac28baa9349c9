// The event listeners a store holds. Asking for a listener is a round trip, so a store may be
// stopped while its listeners are still on their way: those that arrive after the stop are
// let go at once instead of being kept by nobody (and one that fails lets go of the others).
import type { Unlisten } from './backend';

export class Listeners {
  #held: Unlisten[] = [];
  #stopped = false;

  /** Holds the listeners once all are there; throws the first failure, holding none of them. */
  async add(...asked: Promise<Unlisten>[]): Promise<void> {
    const got = await Promise.allSettled(asked);
    const failed = got.find((g): g is PromiseRejectedResult => g.status === 'rejected');
    const ok = got.flatMap((g) => (g.status === 'fulfilled' ? [g.value] : []));
    if (failed || this.#stopped) {
      for (const u of ok) u();
      if (failed) throw failed.reason;
      return;
    }
    this.#held.push(...ok);
  }

  /** Lets go of every listener held, and of those still on their way when they arrive. */
  stop(): void {
    this.#stopped = true;
    for (const u of this.#held) u();
    this.#held = [];
  }

  get stopped(): boolean {
    return this.#stopped;
  }
}
