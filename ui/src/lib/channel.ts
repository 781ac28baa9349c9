// The page's end of `pty_attach`'s byte channel: Tauri's channel protocol (`{ index, message }`,
// then `{ index, end }`), read here rather than by Tauri's own `Channel` so that a message that
// never comes is noticed. (Small: it loads with the page, as lib/backend does.)
import { SERIALIZE_TO_IPC_FN, transformCallback } from '@tauri-apps/api/core';
import type { ByteChannel } from './types';

/**
 * A gap in a channel's messages that lasts this long means a message was lost on the way
 * (Tauri fetches each large message separately, and a fetch that fails is only logged):
 * everything after it would wait forever.
 */
export const GAP_MS = 3_000;

/**
 * The page's end of a byte channel (Tauri's `{ index, message }` protocol): messages are
 * delivered in their order, and a gap that stays open `GAP_MS` is reported once (`onlost`)
 * instead of holding the rest back unseen. `lose` drops the messages it picks, as a failed
 * fetch would (for tests).
 */
export class InOrder<T> {
  #next = 0;
  #held = new Map<number, T>();
  #gapSince: number | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #reported = false;
  #end: number | null = null;
  lose: ((index: number, message: T) => boolean) | null = null;

  constructor(
    public deliver: (message: T) => void,
    private readonly onlost: () => void,
    private readonly onend: () => void = () => {},
    private readonly setTimer: (fn: () => void, ms: number) => ReturnType<typeof setTimeout> = (fn, ms) => setTimeout(fn, ms),
    private readonly clearTimer: (t: ReturnType<typeof setTimeout>) => void = (t) => clearTimeout(t),
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Messages waiting behind a missing one. */
  get held(): number {
    return this.#held.size;
  }

  receive(index: number, message: T): void {
    if (index < this.#next || this.#reported || this.lose?.(index, message)) return;
    this.#held.set(index, message);
    const before = this.#next;
    while (this.#held.has(this.#next)) {
      const m = this.#held.get(this.#next) as T;
      this.#held.delete(this.#next);
      this.#next++;
      this.#safely(m);
    }
    // A gap that remains is a new one.
    if (this.#next !== before) this.#gapSince = null;
    this.#watch();
  }

  /** The sender is gone after `index` messages. */
  end(index: number): void {
    this.#end = index;
    this.#watch();
  }

  dispose(): void {
    this.#reported = true;
    this.#held.clear();
    if (this.#timer) this.clearTimer(this.#timer);
    this.#timer = null;
  }

  #safely(m: T): void {
    try {
      this.deliver(m);
    } catch (e) {
      // A throwing handler must not stop the channel; the error is still reported.
      queueMicrotask(() => {
        throw e;
      });
    }
  }

  #watch(): void {
    if (this.#end !== null && this.#next >= this.#end) {
      this.dispose();
      this.onend();
      return;
    }
    const gap = this.#held.size > 0 || (this.#end !== null && this.#next < this.#end);
    if (!gap) {
      this.#gapSince = null;
      return;
    }
    this.#gapSince ??= this.now();
    if (this.#timer) return;
    this.#timer = this.setTimer(() => {
      this.#timer = null;
      if (this.#reported || this.#gapSince === null) return;
      if (this.now() - this.#gapSince >= GAP_MS) {
        this.dispose();
        this.onlost();
      } else this.#watch();
    }, Math.max(1, GAP_MS - (this.now() - this.#gapSince)));
  }
}

/** A one-shot pick of the first message of at least `over` bytes (for tests). */
export function firstOver(over: number): (index: number, message: ArrayBuffer) => boolean {
  let done = false;
  return (_index, message) => {
    if (done) return false;
    done = message.byteLength >= over;
    return done;
  };
}

/** The page's end of a byte channel. */
export interface PageChannel extends ByteChannel {
  /** Messages waiting behind a missing one (for the terminal's stats). */
  readonly held: number;
  /**
   * Drops the first message of at least `over` bytes, as a failed fetch would (for tests;
   * by size, not by index, whatever number of messages came before it).
   */
  lose(over: number): void;
}

/**
 * Tauri's `Channel` on the page, but a message that never comes (its fetch failed: Tauri
 * only logs that) is noticed after `GAP_MS` instead of holding every later one back forever.
 */
export function byteChannel(onmessage: (data: ArrayBuffer) => void, onlost: () => void): PageChannel {
  const internals = (window as unknown as { __TAURI_INTERNALS__: { unregisterCallback(id: number): void } }).__TAURI_INTERNALS__;
  let id = 0;
  const forget = () => internals.unregisterCallback(id);
  const order = new InOrder<ArrayBuffer>(
    onmessage,
    () => {
      forget();
      onlost();
    },
    forget,
  );
  id = transformCallback((raw: { index: number; message?: ArrayBuffer; end?: boolean }) => {
    if (raw.end) order.end(raw.index);
    else order.receive(raw.index, raw.message as ArrayBuffer);
  });
  const wire = () => `__CHANNEL__:${id}`;
  return {
    get onmessage() {
      return order.deliver;
    },
    set onmessage(h) {
      order.deliver = h;
    },
    get held() {
      return order.held;
    },
    lose: (over) => (order.lose = firstOver(over)),
    toJSON: wire,
    [SERIALIZE_TO_IPC_FN]: wire,
  } as PageChannel;
}
