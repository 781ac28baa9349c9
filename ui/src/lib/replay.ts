// A backend that replays what the real app recorded (./record.ts, scripts/record-ui): the
// UI's tests and the browser preview meet the engine's own replies and events instead of an
// imitation of it.
//
// A recording is a script of scenes separated by what the user did. Commands that change
// something (start the demo, create, stop or resume a session…) are the user's actions: the
// replay plays the recorded events up to the next action and waits there until the page makes
// that call, then answers it as the engine did and plays on to the action after. Commands that
// only read (the roster, a timeline page, the settings) are answered with the reply recorded
// in the same scene, else the one nearest before, else the next one. Arguments must match
// what was recorded; an unrecorded call is refused with an error that names it.
//
// What no recording can hold, and a small fake stands in for:
// - the terminal's bytes (`pty_attach`'s channel is not recorded): ./fake/fakePty.ts draws
//   one, and `pty_input`, `pty_resize`, `pty_ack` and `pty_detach` go to it (so typing is
//   never answered `queued: true`: input kept for a suspended session is not replayed);
// - the system's folder picker (`pick_folder`) and the system's browser (`open_link`).

import type { Backend, PageChannel, Unlisten } from './backend';
import type { ByteChannel, Commands, Events } from './types';
import { FakePty } from './fake/fakePty';

export type Entry =
  | { t: number; load: string; at?: string }
  | { t: number; call: string; args?: unknown; sent?: number; ok?: unknown; err?: string }
  | { t: number; event: string; payload: unknown };

type Call = Extract<Entry, { call: string }>;
type Ev = Extract<Entry, { event: string }>;

export function parseRecording(text: string): Entry[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Entry);
}

/** Commands that only read: answered from the nearest recorded reply, they move nothing on. */
const READS = new Set<string>([
  'roster_snapshot',
  'open_timeline',
  'timeline_range',
  'timeline_item',
  'close_timeline',
  'hooks_status',
  'doctor',
  'settings_get',
  'settings_in_effect',
  'approvals_pending',
  'resources',
  'spend_view',
  'search_history',
  'search_host',
  'search_progress',
  'timeline_find',
  'hosts_list',
  'folder_check',
  'gpu_available',
  'set_viewing',
  'pty_dialog',
]);

/** The terminal's commands: the terminal fake answers them (see the head of this file). */
const TERMINAL = new Set<string>(['pty_attach', 'pty_input', 'pty_resize', 'pty_ack', 'pty_detach']);

/** What of a command's arguments must match: the terminal's size does not (a test has none). */
function key(cmd: string, args: unknown): string {
  let a = args as Record<string, unknown> | undefined;
  if (cmd === 'pty_create' && a) a = { cwd: a.cwd, resume: a.resume ?? null, ...(a.host ? { host: a.host } : {}) };
  return JSON.stringify(a ?? null, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : 1))) : v));
}

export interface ReplayOptions {
  /** Named in errors: which recording this is. */
  name?: string;
  /** Which page load of the recording to replay, from 1 (a recording may reload the page). */
  load?: number;
  /** Play the events by themselves (the default); when false, only `step`, `play` and `flush` do. */
  auto?: boolean;
  /** 0: as fast as timers allow (tests, the default); 1: at the recorded pace. */
  pace?: number;
  /** Megabytes of build log the first terminal attach streams (a throughput check). */
  floodMb?: number;
}

type Handler = (payload: unknown) => void;

export class ReplayBackend implements Backend {
  readonly fake = true;
  readonly name: string;
  readonly #entries: Entry[];
  /** The wall time the recording's page loaded, in ms; null when not recorded. */
  readonly #loadedAt: number | null;
  #cursor = 0;
  readonly #used = new Set<number>();
  readonly #handlers = new Map<string, Set<Handler>>();
  readonly #auto: boolean;
  readonly #pace: number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #started = false;
  readonly #ptys = new Map<string, FakePty>();
  #attachments = 0;
  #floodMb: number;
  /** Every call the page made, in order (for tests). */
  readonly calls: { cmd: string; args: unknown }[] = [];

  constructor(entries: Entry[], opts: ReplayOptions = {}) {
    this.name = opts.name ?? 'the recording';
    const loads = entries.flatMap((e, i) => ('load' in e ? [i] : []));
    const n = opts.load ?? 1;
    if (loads.length > 0 && (n < 1 || n > loads.length)) throw new Error(`${this.name} has ${loads.length} page loads, not ${n}`);
    const from = loads.length ? loads[n - 1] + 1 : 0;
    const to = loads.length > n ? loads[n] : entries.length;
    this.#entries = entries.slice(from, to);
    const load = loads.length ? (entries[loads[n - 1]] as { at?: string }) : {};
    this.#loadedAt = load.at ? Date.parse(load.at) : null;
    this.#auto = opts.auto ?? true;
    this.#pace = opts.pace ?? 0;
    this.#floodMb = opts.floodMb ?? 0;
  }

  // ---- what a test can ask ----

  /** The next recorded action the replay waits for (`cmd` and its arguments), or null at the end. */
  get next(): { cmd: string; args: unknown } | null {
    for (let i = this.#cursor; i < this.#entries.length; i++) {
      const e = this.#entries[i];
      if ('call' in e && this.#isAction(i)) return { cmd: e.call, args: e.args };
    }
    return null;
  }

  /** Plays one event (none when the next thing is the user's action); true if it did. */
  step(): boolean {
    return this.#step() !== null;
  }

  #step(): Ev | null {
    for (;;) {
      if (this.#waits(this.#cursor)) return null;
      const e = this.#entries[this.#cursor++];
      if ('event' in e) {
        this.#emit(e);
        return e;
      }
    }
  }

  /**
   * Plays events up to and including the first that `until` accepts, or without `until` up
   * to the user's next action; resolves once the page had a turn. True if `until` matched.
   * With `until`, an action on the way is waited for (the page may be about to take it: a
   * click's command goes out a turn later), for up to two seconds.
   */
  async play(until?: (event: string, payload: unknown) => boolean): Promise<boolean> {
    const deadline = Date.now() + 2000;
    let matched = false;
    for (;;) {
      const e = this.#step();
      if (e) {
        if (until?.(e.event, e.payload)) {
          matched = true;
          break;
        }
        continue;
      }
      if (!until || this.#cursor >= this.#entries.length || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 0));
    return matched;
  }

  /** Plays every event up to the user's next action; resolves once the page had a turn. */
  async flush(): Promise<void> {
    await this.play();
  }

  /** The events of `name` the recording holds, in order (for tests that check against them). */
  recorded<E extends keyof Events>(name: E): Events[E][] {
    return this.#entries.filter((e): e is Ev => 'event' in e && e.event === name).map((e) => e.payload as Events[E]);
  }

  /** The replies of `cmd` the recording holds, in order. */
  replies<K extends keyof Commands>(cmd: K): { args: Commands[K]['args']; ok?: Commands[K]['ret']; err?: string }[] {
    return this.#entries.filter((e): e is Call => 'call' in e && e.call === cmd).map((e) => ({ args: e.args as Commands[K]['args'], ok: e.ok as Commands[K]['ret'], err: e.err }));
  }

  // ---- the Backend ----

  channel(onmessage: (data: ArrayBuffer) => void): PageChannel {
    return { onmessage, held: 0, lose: () => {} };
  }

  on<E extends keyof Events>(event: E, handler: (payload: Events[E]) => void): Promise<Unlisten> {
    let set = this.#handlers.get(event);
    if (!set) this.#handlers.set(event, (set = new Set()));
    const h = handler as Handler;
    set.add(h);
    // An event held for want of a listener may go now.
    this.#schedule();
    return Promise.resolve(() => set.delete(h));
  }

  call: Backend['call'] = ((cmd: string, args?: unknown) => {
    this.calls.push({ cmd, args });
    // The page listens before it first asks: from here on, events may flow.
    this.#started = true;
    return new Promise<unknown>((resolve, reject) => {
      setTimeout(() => {
        try {
          const r = this.#answer(cmd, args);
          if (r.err !== undefined) reject(r.err);
          else resolve(this.#now(r.ok, 't' in r ? (r as Call).t : null));
        } catch (e) {
          reject(e instanceof Error ? e.message : String(e));
        }
        this.#schedule();
      }, 0);
    });
  }) as Backend['call'];

  // ---- inside ----

  /**
   * The replay must wait at entry `i`: it is the user's next action, or an event that came
   * while that action's command was under way (its answer is noted after it).
   */
  #waits(i: number): boolean {
    const e = this.#entries[i];
    if (!e) return true;
    if (this.#isAction(i)) return true;
    if (!('event' in e)) return false;
    for (let j = i + 1; j < this.#entries.length; j++) {
      const c = this.#entries[j];
      if (!('call' in c) || !this.#isAction(j)) continue;
      return c.sent !== undefined && e.t >= c.sent;
    }
    return false;
  }

  #isAction(i: number): boolean {
    const e = this.#entries[i];
    return 'call' in e && !READS.has(e.call) && !TERMINAL.has(e.call) && !this.#used.has(i);
  }

  #answer(cmd: string, args: unknown): { ok?: unknown; err?: string } {
    if (TERMINAL.has(cmd)) return { ok: this.#terminal(cmd, args as Record<string, unknown>) };
    if (cmd === 'pick_folder') return { ok: (args as { start: string | null }).start };
    if (cmd === 'open_link') return { ok: null };
    // The page telling the app it is shown (recordings made before it have none).
    if (cmd === 'roster_shown') return { ok: null };
    const k = key(cmd, args);
    const matches = (i: number) => {
      const e = this.#entries[i];
      return 'call' in e && e.call === cmd && key(cmd, e.args) === k;
    };
    if (READS.has(cmd)) {
      // The reply of this scene (up to the next action) first: a read that followed the
      // user's action (the roster after the demo started) is the one recorded after it.
      let i = this.#cursor;
      for (; i < this.#entries.length && !this.#isAction(i); i++) {
        if (!this.#used.has(i) && matches(i)) {
          this.#used.add(i);
          return this.#entries[i] as Call;
        }
      }
      for (let j = this.#cursor - 1; j >= 0; j--) if (matches(j)) return this.#entries[j] as Call;
      for (; i < this.#entries.length; i++) if (matches(i)) return this.#entries[i] as Call;
      const page = this.#timeline(cmd, args as Record<string, unknown>);
      if (page) return { ok: page };
    } else {
      for (let i = this.#cursor; i < this.#entries.length; i++) {
        if (this.#used.has(i) || !matches(i)) continue;
        // What happened before the user acted, the page sees before the answer.
        while (this.#cursor < i) {
          const e = this.#entries[this.#cursor++];
          if ('event' in e) this.#emit(e);
        }
        this.#used.add(i);
        this.#cursor = i + 1;
        const e = this.#entries[i] as Call;
        if (cmd === 'pty_create' || cmd === 'pty_resume' || cmd === 'pty_restart') this.#restartTerminal(e);
        return e;
      }
    }
    const next = this.next;
    throw new Error(
      `${this.name} has no reply to ${cmd}(${JSON.stringify(args ?? null)})` +
        (next ? `; it next expects ${next.cmd}(${JSON.stringify(next.args ?? null)})` : '; it has no action left') +
        '. Re-record with scripts/record-ui if the UI now asks otherwise.',
    );
  }

  /**
   * A timeline page the recording holds the items of, though not as this call: the UI asked
   * for another range (a window of another height).
   */
  #timeline(cmd: string, a: Record<string, unknown>): unknown {
    if (cmd !== 'open_timeline' && cmd !== 'timeline_range' && cmd !== 'timeline_item') return null;
    const id = a.sessionId as string;
    const items = new Map<number, unknown>();
    let total: number | null = null;
    this.#entries.forEach((e, i) => {
      const seen = (t: number) => {
        if (total === null || i < this.#cursor) total = t;
      };
      if ('call' in e && (e.call === 'open_timeline' || e.call === 'timeline_range') && e.ok && (e.args as { sessionId: string }).sessionId === id) {
        const p = e.ok as { total: number; start: number; items: unknown[] };
        p.items.forEach((it, k) => items.set(p.start + k, it));
        seen(p.total);
      } else if ('event' in e && e.event === 'timeline:update') {
        const u = e.payload as { sessionId: string; total: number; reset: boolean; changed: { index: number; item: unknown }[] };
        if (u.sessionId !== id || u.reset) return;
        u.changed.forEach((c) => items.set(c.index, c.item));
        seen(u.total);
      }
    });
    if (total === null) return null;
    const n: number = total;
    if (cmd === 'timeline_item') return items.get(a.index as number) ?? null;
    const start = cmd === 'open_timeline' ? Math.max(0, n - (a.tail as number)) : Math.max(0, a.start as number);
    const end = cmd === 'open_timeline' ? n : Math.min(n, a.end as number);
    const out: unknown[] = [];
    for (let i = start; i < end; i++) {
      if (!items.has(i)) return null;
      out.push(items.get(i));
    }
    return { sessionId: id, total: n, start, items: out };
  }

  #emit(e: Ev): void {
    const set = this.#handlers.get(e.event);
    set?.forEach((h) => h(this.#now(e.payload, e.t)));
  }

  /**
   * A copy of `value` with its timestamps moved as if recorded `t` ms after the page loaded
   * were now: "2 min ago", a deadline's time left and a warning's age read as they did then.
   */
  #now(value: unknown, t: number | null): unknown {
    if (this.#loadedAt === null || t === null) return structuredClone(value);
    const shift = Date.now() - (this.#loadedAt + t);
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
    const move = (v: unknown): unknown => {
      if (typeof v === 'string') return iso.test(v) ? new Date(Date.parse(v) + shift).toISOString() : v;
      if (Array.isArray(v)) return v.map(move);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, move(x)]));
      return v;
    };
    return move(value);
  }

  #schedule(): void {
    if (!this.#auto || !this.#started || this.#timer) return;
    if (this.#waits(this.#cursor)) return;
    const e = this.#entries[this.#cursor];
    const prev = this.#entries[this.#cursor - 1];
    const wait = this.#pace > 0 && prev ? Math.max(0, (e.t - prev.t) * this.#pace) : 0;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      const next = this.#entries[this.#cursor];
      // An event nobody listens to yet waits for its listener (the page is still starting).
      if (next && 'event' in next && !this.#handlers.get(next.event)?.size) return;
      this.step();
      this.#schedule();
    }, wait);
  }

  // ---- the terminal fake ----

  #restartTerminal(e: Call): void {
    const id = (e.ok as { sessionId?: string } | undefined)?.sessionId ?? (e.args as { sessionId?: string }).sessionId;
    if (!id || e.err !== undefined) return;
    const pty = this.#pty(id);
    pty.welcome(e.call !== 'pty_create' || (e.args as { resume?: string | null }).resume != null);
  }

  #pty(id: string): FakePty {
    let pty = this.#ptys.get(id);
    if (!pty) {
      const cwd = this.replies('pty_create').find((r) => r.ok?.sessionId === id)?.args.cwd ?? '~';
      this.#ptys.set(id, (pty = new FakePty(cwd)));
    }
    return pty;
  }

  #terminal(cmd: string, a: Record<string, unknown>): unknown {
    const pty = this.#pty(a.sessionId as string);
    switch (cmd) {
      case 'pty_attach':
        pty.attach(a.onData as ByteChannel);
        if (this.#floodMb > 0) pty.flood(this.#floodMb);
        this.#floodMb = 0;
        return { cols: pty.cols, rows: pty.rows, attachment: ++this.#attachments };
      case 'pty_input':
        pty.input(a.data as string);
        return { queued: false };
      case 'pty_resize':
        pty.cols = a.cols as number;
        pty.rows = a.rows as number;
        return null;
      case 'pty_detach':
        pty.detach();
        return null;
      default:
        return null;
    }
  }
}
