// Terminal output plumbing: bytes from `pty_attach`'s channel are collected and written to
// xterm once per animation frame, and never faster than xterm parses them (its write
// callback), so a flood of output costs one write per frame and the UI stays responsive.

/** The channel's payload as bytes: an ArrayBuffer inside Tauri; tolerate the other shapes a bridge may give. */
export function toBytes(data: unknown): Uint8Array | null {
  if (data instanceof Uint8Array) return data;
  // By tag, not instanceof: buffers may come from another realm (the IPC bridge, workers).
  if (Object.prototype.toString.call(data) === '[object ArrayBuffer]') return new Uint8Array(data as ArrayBuffer);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (Array.isArray(data)) return Uint8Array.from(data as number[]);
  if (typeof data === 'string') return new TextEncoder().encode(data);
  return null;
}

export type Schedule = (fn: () => void) => void;

/**
 * xterm parses each write in one go and yields only between writes (after 12 ms of them):
 * keep them small. With 64 KB, one write could hold the page for 20–60 ms during a flood
 * (the DOM renderer on a software-rendered screen); 8 KB keeps its tasks near 12 ms.
 */
export const MAX_WRITE = 8 * 1024;


export class OutputBatcher {
  #chunks: Uint8Array[] = [];
  #size = 0;
  #scheduled = false;
  #writing = false;
  #disposed = false;
  /** Bytes received so far, and handed to the terminal so far (for tests and throughput figures). */
  received = 0;
  /** Channel messages received. */
  messages = 0;
  written = 0;
  writes = 0;
  /** The largest single write into xterm (the throughput benchmark tries others). */
  maxWrite = MAX_WRITE;

  constructor(
    private readonly write: (bytes: Uint8Array, done: () => void) => void,
    private readonly schedule: Schedule = (fn) => void requestAnimationFrame(fn),
  ) {}

  push(data: unknown): void {
    const bytes = toBytes(data);
    if (!bytes || bytes.length === 0 || this.#disposed) return;
    this.received += bytes.length;
    this.messages++;
    this.#chunks.push(bytes);
    this.#size += bytes.length;
    this.#kick();
  }

  #kick(): void {
    if (this.#scheduled || this.#writing || this.#disposed) return;
    this.#scheduled = true;
    this.schedule(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#disposed || this.#size === 0) return;
    const out = this.#chunks.length === 1 ? this.#chunks[0] : new Uint8Array(this.#size);
    if (this.#chunks.length > 1) {
      let at = 0;
      for (const c of this.#chunks) {
        out.set(c, at);
        at += c.length;
      }
    }
    this.#chunks = [];
    this.#size = 0;
    this.#writing = true;
    this.written += out.length;
    this.writes++;
    const done = () => {
      this.#writing = false;
      if (this.#size > 0) this.#kick();
    };
    for (let at = 0; at < out.length; at += this.maxWrite) {
      const end = Math.min(out.length, at + this.maxWrite);
      this.write(out.subarray(at, end), end === out.length ? done : () => {});
    }
  }

  /** Bytes waiting for the next frame. */
  get pending(): number {
    return this.#size;
  }

  dispose(): void {
    this.#disposed = true;
    this.#chunks = [];
    this.#size = 0;
  }
}

/** Flow control (`pty_ack`): tell the backend how far xterm has parsed this often… */
export const ACK_BYTES = 64 * 1024;
/** …or at the latest this long after the last parse, so the backend learns the page caught up. */
export const ACK_DELAY_MS = 50;

/**
 * An ack with no answer after this long no longer holds the next one back: the backend waits
 * for acks, so one lost call must not stop the terminal for good. (Acks are totals, so a
 * second one in flight is harmless.)
 */
export const ACK_STUCK_MS = 2_000;

/**
 * Acknowledges the bytes xterm has parsed (in all, since the attachment began), so the backend
 * never has more than its high-water mark in the page. Light on IPC: one call per
 * `ACK_BYTES` parsed, or one `ACK_DELAY_MS` after parsing stops, and never two in flight
 * (unless the first has gone unanswered for `ACK_STUCK_MS`).
 * Acks wait until the attachment is known (`pty_attach` returned).
 */
export class ParseAcker {
  #parsed = 0;
  #acked = 0;
  #inflight = false;
  /** When the ack in flight went, and which one it is (a late answer to an older one is ignored). */
  #sentAt = 0;
  #seq = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #disposed = false;
  #send: ((parsed: number) => Promise<unknown>) | null = null;
  /** Acks sent (for tests). */
  sent = 0;
  /** Parsed bytes per ack (the throughput benchmark tries others). */
  ackBytes = ACK_BYTES;

  constructor(
    // Arrows: the browser's timers throw when called as another object's method.
    private readonly setTimer: (fn: () => void, ms: number) => ReturnType<typeof setTimeout> = (fn, ms) => setTimeout(fn, ms),
    private readonly clearTimer: (t: ReturnType<typeof setTimeout>) => void = (t) => clearTimeout(t),
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The total last sent (for tests and the terminal's stats). */
  get acked(): number {
    return this.#acked;
  }

  /** Acks from now on go through `send`. */
  start(send: (parsed: number) => Promise<unknown>): void {
    this.#send = send;
    this.#check();
  }

  /** xterm has parsed `n` more bytes. */
  parsed(n: number): void {
    this.#parsed += n;
    this.#check();
  }

  /** An ack is in flight and still has time to be answered. */
  #waiting(): boolean {
    return this.#inflight && this.now() - this.#sentAt < ACK_STUCK_MS;
  }

  #check(): void {
    if (this.#disposed || !this.#send || this.#parsed === this.#acked) return;
    if (this.#parsed - this.#acked >= this.ackBytes && !this.#waiting()) {
      this.#flush();
    } else if (!this.#timer) {
      const wait = this.#inflight ? Math.max(ACK_DELAY_MS, ACK_STUCK_MS - (this.now() - this.#sentAt)) : ACK_DELAY_MS;
      this.#timer = this.setTimer(() => {
        this.#timer = null;
        // An answer checks again; an ack unanswered for too long is not waited for.
        if (this.#waiting()) this.#check();
        else this.#flush();
      }, wait);
    }
  }

  #flush(): void {
    const send = this.#send;
    if (this.#disposed || !send || this.#parsed === this.#acked) return;
    if (this.#timer) {
      this.clearTimer(this.#timer);
      this.#timer = null;
    }
    const value = this.#parsed;
    this.#acked = value;
    this.#inflight = true;
    this.#sentAt = this.now();
    const seq = ++this.#seq;
    this.sent++;
    void send(value)
      .catch(() => {})
      .finally(() => {
        if (seq !== this.#seq) return; // a later ack went meanwhile
        this.#inflight = false;
        // A timer set to wait for this answer is not the pause after parsing: set that afresh.
        if (this.#timer) this.clearTimer(this.#timer);
        this.#timer = null;
        this.#check();
      });
  }

  dispose(): void {
    this.#disposed = true;
    if (this.#timer) this.clearTimer(this.#timer);
    this.#timer = null;
  }
}

/**
 * Keystrokes in order: one `pty_input` in flight per session; what is typed meanwhile is sent
 * together when it returns. (Commands may run concurrently on the other side, so two calls in
 * flight could overtake each other; this also batches fast typing and pastes.)
 */
export class InputSender {
  #inflight = false;
  /** What waits, in order: runs of text and of binary (xterm's `onBinary`: one byte per character). */
  #pending: { data: string; binary: boolean }[] = [];

  constructor(private readonly send: (data: string, binary: boolean) => Promise<void>) {}

  push(data: string, binary = false): void {
    if (this.#inflight) {
      const last = this.#pending[this.#pending.length - 1];
      if (last && last.binary === binary) last.data += data;
      else this.#pending.push({ data, binary });
      return;
    }
    this.#inflight = true;
    void this.send(data, binary).finally(() => {
      this.#inflight = false;
      const next = this.#pending.shift();
      if (next) this.push(next.data, next.binary);
    });
  }
}
