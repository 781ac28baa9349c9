// The one roster store: fed by the engine's `store:events`, re-read on `store:resync`.
// Components read it; they change it only through its methods.

import type { Backend } from './backend';
import { Listeners } from './listeners';
import { SNAPSHOT } from './marks';
import { chainCosts } from './spend';
import { DEFAULT_FILTERS, activityKey, applyEvents, byActivityDesc, chainHead, groupKey, heldOrder, newlySuperseded, type SessionTable, type Filters, type RosterView } from './roster';
import { RosterIndex, type IndexWork } from './rosterIndex';
import { RosterLines, heldCompare, type LinesWork } from './rosterLines';
import type { HostInfo, IndexProgress, RemoteEvent, RootInfo, RosterSnapshot, SeqEvent, TrackedSession } from './types';

/** The later of two reports of the same index: more files read, or it ended. */
export function laterProgress(a: IndexProgress, b: IndexProgress): IndexProgress {
  if (a.done !== b.done) return a.done > b.done ? a : b;
  return a.indexing ? b : a;
}

/**
 * While the first index runs, the least time between two applications of its batches (and
 * of its progress): up to 16 parts of 128 sessions come within a second, and each applied
 * one cost the page a re-render of the rows in view, a frame's style, layout and paint, and
 * a status line. The rows are on screen already; their figures fill in a few times a second.
 */
export const INDEXING_APPLY_MS = 250;

/**
 * After the first index, the least time between two applications while batches keep coming:
 * a batch after a quiet spell goes at the next frame, one within this time of the last
 * application waits for the rest of it (a call to approve or a question never waits). Under
 * 200 appends a second, each moving its row to the top, the page re-sorted and redrew the
 * roster at every frame: frames of 57 ms at the median and the web process at a whole core
 * (the window bench's roster under load), so a click or a scroll waited as long.
 */
export const BUSY_APPLY_MS = 250;

/** How long the user leaves the roster untouched before a held order is applied anyway. */
export const IDLE_RESORT_MS = 20_000;

export interface Totals {
  sessions: number;
  live: number;
  needsYou: number;
}

export class RosterStore {
  // The sessions, their order and counts, kept incrementally per event (rosterIndex.ts);
  // mutated in place for speed, `version` tells the views it changed.
  #index = new RosterIndex();
  // What the roster shows (counts, groups, lines), kept per event too (rosterLines.ts);
  // `shown` tells the views it changed.
  #lines = new RosterLines(byActivityDesc);
  /** Every session change goes to both: the index (order, totals) and the lines (the view). */
  #table: SessionTable = {
    get: (id) => this.#index.get(id),
    set: (id, s) => {
      const old = this.#index.get(id);
      // While the order is held, a new session waits off the list: nothing is inserted above
      // the row under the pointer or the cursor. It comes when the order is applied.
      if (!old && this.#held && !this.#held.has(id)) this.#deferred.add(id);
      this.#index.set(id, s);
      this.#lines.change(old, s);
      return this.#table;
    },
    delete: (id) => {
      const old = this.#index.get(id);
      if (!old) return false;
      this.#index.delete(id);
      this.#lines.change(old, undefined);
      this.#deferred.delete(id);
      return true;
    },
  };
  #seq = 0;
  #buffer: SeqEvent[] | null = [];
  #listeners = new Listeners();
  #backend: Backend;

  version = $state(0);
  /** Bumped whenever `lines` (and so `view`) changed. */
  shown = $state(0);
  roots = $state.raw<RootInfo[]>([]);
  demo = $state(false);
  loaded = $state(false);
  error = $state<string | null>(null);
  filters = $state<Filters>({ ...DEFAULT_FILTERS });
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- replaced, never mutated
  collapsed = $state.raw<ReadonlySet<string>>(new Set());
  /** The row the keyboard cursor is on. */
  selectedId = $state<string | null>(null);
  /** The session whose timeline is shown. */
  openId = $state<string | null>(null);

  /** The order held while the user looks at the roster (session id → position), or null. */
  #held = $state.raw<ReadonlyMap<string, number> | null>(null);
  /** Each held session's activity when the order was taken: a later one is marked in place. */
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- read through `shown`
  #heldActivity = new Map<string, string>();
  /** Sessions new since the order was held: off the list until it is applied. */
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- read through `waiting`
  #deferred = new Set<string>();
  /** Who holds the order: the pointer over the roster, the keyboard focus in it. */
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- not read by views
  #holders = new Set<'pointer' | 'focus'>();
  /** Something changed since the order was held: applying it would move rows. */
  #stale = false;
  #idleTimer: unknown = null;
  // No sort here: the index keeps the order as events come (a copy, so the views see a new array).
  readonly sorted: TrackedSession[] = $derived.by(() => {
    void this.version;
    return this.#held ? heldOrder(this.#index.order, this.#index.sessions, this.#held) : this.#index.order.slice();
  });
  /** The window's title for the attention set, as the engine words it. */
  attentionTitle = $state('Mimesis');
  /** Other machines and their connections (`hosts:changed`), in the configured order. */
  hosts = $state.raw<HostInfo[]>([]);
  /** How far the engine's initial index has come (`store:progress`). */
  progress = $state<IndexProgress>({ indexing: true, done: 0, total: 0 });
  /** The engine's attention set (`attention:changed`): the one source of "needs you". */
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- replaced, never mutated
  attention = $state.raw<ReadonlySet<string>>(new Set());
  /** What the chips count and the roster groups; `order` is built when read (O(n)). */
  readonly view: RosterView = $derived.by(() => {
    void this.shown;
    const lines = this.#lines;
    let order: RosterView['order'] | undefined;
    return {
      counts: { ...lines.counts },
      groups: lines.groups.slice(),
      get order() {
        return (order ??= lines.order());
      },
    };
  });
  // Counted per event by the index: reading them is O(1) (O(roots) for the per-root counts).
  readonly totals: Totals = $derived.by(() => {
    void this.version;
    // A machine that is away: its rows are the last state seen, not sessions running now.
    let away = 0;
    for (const h of this.hosts) if (h.state !== 'live') away += this.#index.liveByHost.get(h.host) ?? 0;
    return { sessions: this.#index.current, live: this.#index.live - away, needsYou: this.attention.size };
  });
  /** Sessions per root, counted live from transcript paths (the snapshot's count goes stale). */
  readonly rootCounts: Map<string, number> = $derived.by(() => {
    void this.version;
    void this.roots;
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a copy per derivation, never mutated after
    return new Map(this.#index.rootCounts);
  });
  readonly selected: TrackedSession | null = $derived.by(() => {
    void this.version;
    return this.selectedId ? (this.#index.get(this.selectedId) ?? null) : null;
  });
  readonly open: TrackedSession | null = $derived.by(() => {
    void this.version;
    return this.openId ? (this.#index.get(this.openId) ?? null) : null;
  });

  /**
   * `schedule`: when to apply the event batches received meanwhile (the app: the next frame,
   * so a burst re-sorts and re-counts the roster once per frame, not once per batch); none:
   * at once. `indexingEvery`: while the first index runs, batches and progress wait this
   * long (ms, on `timers`) before they are scheduled; its end is applied at the next frame.
   * `busyEvery`: after it, a batch within this long (ms, on `now`) of the last application
   * waits for the rest of that time, unless it holds a call to approve or a question.
   */
  constructor(
    backend: Backend,
    opts: {
      schedule?: (apply: () => void) => void;
      indexingEvery?: number;
      busyEvery?: number;
      timers?: { set: (fn: () => void, ms: number) => unknown; clear: (t: unknown) => void };
      now?: () => number;
    } = {},
  ) {
    this.#backend = backend;
    this.#schedule = opts.schedule ?? null;
    this.#indexingEvery = opts.indexingEvery ?? 0;
    this.#busyEvery = opts.busyEvery ?? 0;
    this.#now = opts.now ?? (() => performance.now());
    this.#timers = opts.timers ?? { set: (fn, ms) => setTimeout(fn, ms), clear: (t) => clearTimeout(t as ReturnType<typeof setTimeout>) };
  }

  #timers: { set: (fn: () => void, ms: number) => unknown; clear: (t: unknown) => void };

  #schedule: ((apply: () => void) => void) | null;
  #indexingEvery: number;
  #busyEvery: number;
  #now: () => number;
  /** When the last batch was applied (on `now`), or null. */
  #appliedAt: number | null = null;
  #queue: SeqEvent[] = [];
  #scheduled = false;
  /** The wait before a scheduled application while the first index runs, or null. */
  #due: unknown = null;
  /** The first index's latest progress, applied with the next batch. */
  #progressNext: IndexProgress | null = null;

  /**
   * How many sessions wait for the held order to be applied to be listed: new ones
   * (`waitingNew`), and ones that came into the status filter meanwhile.
   */
  waiting = $state(0);
  waitingNew = $state(0);

  /**
   * Holds the roster's order while the user is in it (the pointer over it, the keyboard focus
   * in it), re-sorts when the last one leaves. While held, rows keep their places, changed
   * ones are marked (`movedSince`), new sessions wait (`waiting`), and after `IDLE_RESORT_MS`
   * without a `touch` the new order is applied anyway.
   */
  hold(on: boolean, who: 'pointer' | 'focus' = 'pointer'): void {
    if (on) this.#holders.add(who);
    else this.#holders.delete(who);
    const want = this.#holders.size > 0;
    if (want === (this.#held !== null)) {
      if (want) this.touch();
      return;
    }
    if (want) {
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- built once, never mutated
      const held = new Map(this.sorted.map((s, i) => [s.sessionId, i]));
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- read through `shown`
      this.#heldActivity = new Map(this.sorted.map((s) => [s.sessionId, activityKey(s)]));
      this.#held = held;
      this.#stale = false;
      // The lines are in this order already: only later changes follow the held one, and
      // the rows listed now stay listed whatever their status does meanwhile.
      this.#lines.setOrder(heldCompare(held, byActivityDesc));
      this.#lines.freeze();
      this.touch();
    } else {
      this.#release();
      this.#rebuild();
    }
  }

  /** The user did something in the roster: the held order waits again for them to pause. */
  touch(): void {
    if (this.#idleTimer !== null) this.#timers.clear(this.#idleTimer);
    this.#idleTimer = this.#held
      ? this.#timers.set(() => {
          this.#idleTimer = null;
          if (this.#stale) this.resort();
          else this.touch();
        }, IDLE_RESORT_MS)
      : null;
  }

  /** The sessions waiting off the list for the held order to be applied (read-only). */
  get deferred(): ReadonlySet<string> {
    return this.#deferred;
  }

  /** Whether `s` has had activity since the order was held (it would have moved): marked in place. */
  movedSince(s: TrackedSession): boolean {
    void this.shown;
    const was = this.#held ? this.#heldActivity.get(s.sessionId) : undefined;
    return was !== undefined && activityKey(s) !== was;
  }

  #release(): void {
    this.#held = null;
    this.#heldActivity.clear();
    this.#deferred.clear();
    this.#stale = false;
    this.waiting = 0;
    this.waitingNew = 0;
    if (this.#idleTimer !== null) this.#timers.clear(this.#idleTimer);
    this.#idleTimer = null;
  }

  /** The lines' source: the whole view again, from the kept order. O(n): user actions and snapshots only. */
  #rebuild(): void {
    const held = this.#held;
    const sorted = held ? heldOrder(this.#index.order, this.#index.sessions, held) : this.#index.order;
    this.#lines.rebuild(sorted, {
      filters: { ...this.filters },
      collapsed: this.collapsed,
      attention: this.attention,
      deferred: this.#deferred,
      order: held ? heldCompare(held, byActivityDesc) : byActivityDesc,
    });
    // (Held, with other filters: what they list now is what stays listed.)
    if (held) this.#lines.freeze();
    this.shown++;
  }

  /** The roster's lines, for its virtual list. Not reactive: read `shown` to follow it. */
  get lines(): RosterLines {
    return this.#lines;
  }

  /** The view's work so far (sessions put or taken, comparisons, groups passed): the benchmark diffs it. */
  get linesWork(): Readonly<LinesWork> {
    return this.#lines.work;
  }

  /** How many sessions there are, superseded ones included (O(1), unlike `sorted.length`). */
  get size(): number {
    void this.version;
    return this.#index.sessions.size;
  }

  /** Re-sorts now (an explicit key), holding the new order if it was held. */
  resort(): void {
    if (this.#held === null) return;
    const holders = [...this.#holders];
    this.#holders.clear();
    this.#release();
    this.#rebuild();
    for (const who of holders) this.hold(true, who);
  }

  get seq(): number {
    return this.#seq;
  }

  get(id: string): TrackedSession | undefined {
    return this.#index.get(id);
  }

  #chainCosts: ReadonlyMap<string, number> = chainCosts([]);
  #chainCostsAt = -1;

  /** A work chain's cost, its sessions' summed (worked out once a roster change, when asked). */
  chainCost(chainId: string): number | null {
    const v = this.version;
    if (this.#chainCostsAt !== v) {
      this.#chainCosts = chainCosts(this.#index.sessions.values());
      this.#chainCostsAt = v;
    }
    return this.#chainCosts.get(chainId) ?? null;
  }

  /** The work the index has done so far (rows touched, comparisons): the benchmark diffs it per batch. */
  get work(): Readonly<IndexWork> {
    return this.#index.work;
  }

  /** Listens first, then fetches the snapshot, so no event falls between the two. (The
   *  listeners are asked for side by side: each is a round trip, and a launch waits for them.)
   *  A snapshot the page asked for at document start (`Backend.earlyRoster`) is shown as soon
   *  as it is there, before the listeners are: its events wait in the app until the page
   *  says it listens (`roster_listening`). */
  async start(): Promise<void> {
    const early = this.#early ?? this.#backend.earlyRoster?.() ?? null;
    this.#early = null;
    this.#listeners.stop();
    const listeners = (this.#listeners = new Listeners());
    const listening = listeners.add(
      this.#backend.on('store:events', (p) => this.receive(p.events)),
      this.#backend.on('remote:events', (p) => this.receiveRemote(p.events)),
      this.#backend.on('hosts:changed', (p) => {
        // (Newer than the snapshot being read, if one is: that one's hosts are dropped.)
        if (this.#buffer) this.#hostsHeard = true;
        this.hosts = p.hosts;
      }),
      this.#backend.on('store:resync', () => void this.resync()),
      this.#backend.on('store:progress', (p) => this.receiveProgress(p)),
      this.#backend.on('attention:changed', (a) => this.setAttention(a.sessionIds, a.title ?? undefined)),
    );
    const snap = early ? await early.catch(() => null) : null;
    // (Not when a listener asked for a newer one meanwhile: `store:resync`.)
    if (snap && !this.loaded && !this.#asked) {
      performance.mark(SNAPSHOT);
      this.applySnapshot(snap);
      this.error = null;
    }
    await listening;
    // (Stopped while starting: nothing more is asked for.)
    if (listeners.stopped) return;
    // (Refused: its events stay held; a snapshot asked for now starts them again.)
    const released = snap ? await this.#backend.call('roster_listening').then(() => true, () => false) : false;
    // No early snapshot, or it failed: asked for now, the listeners being there.
    if (!this.#asked && (!this.loaded || (snap && !released))) await this.resync();
  }

  /** The engine's attention set (`attention:changed`); only the sessions that came in or left it move in the view. */
  setAttention(ids: readonly string[], title = 'Mimesis'): void {
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- replaced, never mutated
    const next = new Set(ids);
    this.#lines.setAttention(next, (id) => this.#index.get(id));
    this.attention = next;
    this.attentionTitle = title;
    // (Held: a row that came into the status filter waits off the list, one that left stays.)
    if (this.#held) this.#heldChanged();
    this.shown++;
  }

  /** The next session that needs the user after `current`, cycling through the attention set in its order. */
  nextAttention(current: string | null): string | null {
    const ids = [...this.attention];
    if (ids.length === 0) return null;
    const i = current ? ids.indexOf(current) : -1;
    return ids[(i + 1) % ids.length];
  }

  stop(): void {
    this.#listeners.stop();
  }

  /** Fetches a fresh snapshot; events arriving meanwhile are held and applied after it. */
  async resync(): Promise<void> {
    this.#buffer ??= [];
    this.#asked = true;
    try {
      performance.mark('mimesis:snapshot-asked');
      const snap = await this.#backend.call('roster_snapshot');
      performance.mark(SNAPSHOT);
      this.applySnapshot(snap);
      this.error = null;
    } catch (e) {
      this.error = `Could not read the session list: ${String(e)}`;
      this.#buffer = null;
      this.#hostsHeard = false;
    }
  }

  /** A snapshot was asked for (newer than the page's early one, if any). */
  #asked = false;

  /** The early snapshot, taken by `showEarly` for `start` (which says the page listens). */
  #early: Promise<RosterSnapshot> | null = null;

  /**
   * Shows the snapshot the page asked for at document start if it is here already, before
   * anything else is asked of the app (each listener is a round trip): the page's first
   * frame is the roster's. True when shown; `start` then listens and releases its events.
   */
  async showEarly(): Promise<boolean> {
    const early = (this.#early = this.#backend.earlyRoster?.() ?? null);
    if (!early) return false;
    // (An early snapshot that has come already wins the race: its reaction is queued first.
    // One on its way, or failed, is `start`'s to wait for.)
    const snap = await Promise.race([early, Promise.resolve(null)]).catch(() => null);
    if (!snap || this.loaded || this.#asked) return false;
    performance.mark(SNAPSHOT);
    this.applySnapshot(snap);
    this.error = null;
    return true;
  }

  applySnapshot(snap: RosterSnapshot): void {
    const held = this.#buffer ?? [];
    this.#buffer = null;
    this.#index.setRoots(snap.roots.map((r) => r.path));
    this.#index.reset([...snap.sessions, ...(snap.remote ?? [])]);
    performance.mark('mimesis:indexed');
    if (snap.hosts && !this.#hostsHeard) this.hosts = snap.hosts;
    this.#hostsHeard = false;
    this.#seq = snap.seq;
    this.roots = snap.roots;
    this.demo = snap.demo;
    // A progress event may have come first: never go back to an earlier state.
    this.progress = laterProgress(this.progress, snap.progress ?? { indexing: false, done: 0, total: 0 });
    this.loaded = true;
    this.#seq = applyEvents(this.#index, this.#seq, held).seq;
    // Other machines' changes that came meanwhile: the snapshot may hold them already,
    // and applying one twice changes nothing.
    applyRemote(this.#index, this.#remoteHeld);
    this.#remoteHeld = [];
    this.#releaseProgress();
    this.version++;
    this.#rebuild();
    performance.mark('mimesis:applied');
  }

  #remoteHeld: RemoteEvent[] = [];
  /** A `hosts:changed` came while a snapshot was being read: it is newer than the snapshot's hosts. */
  #hostsHeard = false;

  /** One `remote:events` batch: other machines' changes, in the order they came (no seq). */
  receiveRemote(events: RemoteEvent[]): void {
    if (this.#buffer) {
      this.#remoteHeld.push(...events);
      return;
    }
    if (!this.#schedule) {
      if (applyRemote(this.#table, events)) this.#changed();
      return;
    }
    // Ten machines connecting at once send many batches: one roster rebuild per frame.
    this.#remoteQueue.push(...events);
    if (this.#remoteScheduled) return;
    this.#remoteScheduled = true;
    this.#schedule(() => {
      this.#remoteScheduled = false;
      const queued = this.#remoteQueue;
      this.#remoteQueue = [];
      if (this.#buffer) this.#remoteHeld.push(...queued);
      else if (applyRemote(this.#table, queued)) this.#changed();
    });
  }

  #remoteQueue: RemoteEvent[] = [];
  #remoteScheduled = false;

  /** The end of the first index, held until the events that came before it are applied. */
  #progressHeld: IndexProgress | null = null;

  /**
   * One `store:progress`. Its end (`indexing: false`) comes after the index's last events;
   * while those wait for the next frame (or for a snapshot being read), so does the end:
   * the roster is never called complete with sessions still on their way.
   */
  receiveProgress(p: IndexProgress): void {
    if (!p.indexing && (this.#buffer || this.#scheduled)) {
      this.#progressHeld = laterProgress(this.#progressHeld ?? p, p);
      this.#hurry();
      return;
    }
    if (p.indexing && this.#slow() && !this.#buffer) {
      // Said with the next batch, a few times a second.
      this.#progressNext = laterProgress(this.#progressNext ?? p, p);
      this.#kick();
      return;
    }
    this.progress = laterProgress(this.progress, p);
  }

  /** Whether applications wait `indexingEvery` now: the first index runs. */
  #slow(): boolean {
    return this.#schedule !== null && this.#indexingEvery > 0 && this.progress.indexing;
  }

  #releaseProgress(): void {
    if (!this.#progressHeld) return;
    this.progress = laterProgress(this.progress, this.#progressHeld);
    this.#progressHeld = null;
  }

  /** One `store:events` batch. */
  receive(events: SeqEvent[]): void {
    if (this.#buffer) {
      this.#buffer.push(...events);
      return;
    }
    if (!this.#schedule) {
      this.#apply(events);
      return;
    }
    this.#queue.push(...events);
    if (!this.#slow() && events.some(blocksOnTheUser)) {
      // Said at the next frame, with what waited for the busy spell's end.
      if (this.#scheduled) this.#hurry();
      else this.#kick(true);
      return;
    }
    this.#kick();
  }

  /**
   * Schedules the application of what is queued, unless it is: after `indexingEvery` while
   * the first index runs, after the rest of `busyEvery` since the last application else
   * (`now`: at the next frame regardless).
   */
  #kick(now = false): void {
    if (this.#scheduled || !this.#schedule) return;
    this.#scheduled = true;
    const wait = this.#slow() ? this.#indexingEvery : now ? 0 : this.#busyWait();
    if (wait <= 0) {
      this.#schedule(() => this.#flush());
      return;
    }
    this.#due = this.#timers.set(() => {
      this.#due = null;
      this.#schedule?.(() => this.#flush());
    }, wait);
  }

  /** How much longer a batch waits now: the rest of `busyEvery` since the last application. */
  #busyWait(): number {
    if (this.#busyEvery <= 0 || this.#appliedAt === null) return 0;
    return this.#busyEvery - (this.#now() - this.#appliedAt);
  }

  /** What waits (for `indexingEvery`, or a busy spell's end) goes at the next frame instead: the first index ended, or a call to approve or a question came. */
  #hurry(): void {
    if (this.#due === null) return;
    this.#timers.clear(this.#due);
    this.#due = null;
    this.#schedule?.(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    const queued = this.#queue;
    this.#queue = [];
    // A snapshot may have come meanwhile: events it holds are skipped by their seq.
    if (this.#buffer) this.#buffer.push(...queued);
    else if (queued.length) {
      this.#apply(queued);
      this.#appliedAt = this.#now();
    }
    if (this.#progressNext) {
      this.progress = laterProgress(this.progress, this.#progressNext);
      this.#progressNext = null;
    }
    if (!this.#buffer) this.#releaseProgress();
  }

  #apply(events: SeqEvent[]): void {
    const r = applyEvents(this.#table, this.#seq, events);
    if (r.gap) {
      // seq grows by one per event: a hole means we lost some. Start over from a snapshot.
      void this.resync();
      return;
    }
    this.#seq = r.seq;
    if (r.changed) this.#changed();
    this.#followChains(events);
  }

  #changed(): void {
    if (this.#held) this.#heldChanged();
    this.version++;
    this.shown++;
  }

  /** Something changed while the order is held: applying it would move rows; what waits to be shown. */
  #heldChanged(): void {
    this.#stale = true;
    this.waitingNew = this.#deferred.size;
    this.waiting = this.waitingNew + this.#lines.outside.size;
  }

  /** C6: when the selected or open session is superseded, the selection moves to its successor by itself. */
  #followChains(events: readonly SeqEvent[]): void {
    const gone = newlySuperseded(events);
    if (gone.size === 0) return;
    if (this.openId && gone.has(this.openId)) {
      const head = chainHead(this.#index.sessions, this.openId);
      if (head !== this.openId) this.openSession(head);
    }
    if (this.selectedId && gone.has(this.selectedId)) this.selectedId = chainHead(this.#index.sessions, this.selectedId);
  }

  setFilter<K extends keyof Filters>(key: K, value: Filters[K]): void {
    this.filters[key] = value;
    this.#rebuild();
    // A new search lands on its first match (the roster scrolls to the selection).
    if (key === 'query' && String(value).trim() && this.#lines.options > 0) this.selectedId = this.#lines.optionAt(0).sessionId;
  }

  toggleGroup(key: string): void {
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a fresh copy that replaces the state
    const next = new Set(this.collapsed);
    if (!next.delete(key)) next.add(key);
    this.collapsed = next;
    this.#lines.setCollapsed(next);
    this.shown++;
  }

  select(id: string | null): void {
    this.selectedId = id;
  }

  /** Moves the cursor by `delta` rows among the visible ones (clamped). */
  move(delta: number): void {
    const n = this.#lines.options;
    if (n === 0) return;
    const s = this.selectedId ? this.#index.get(this.selectedId) : undefined;
    const i = s ? this.#lines.optionOf(s) : -1;
    const next = i < 0 ? (delta > 0 ? 0 : n - 1) : Math.min(n - 1, Math.max(0, i + delta));
    this.selectedId = this.#lines.optionAt(next).sessionId;
  }

  moveTo(edge: 'first' | 'last'): void {
    const n = this.#lines.options;
    if (n) this.selectedId = this.#lines.optionAt(edge === 'first' ? 0 : n - 1).sessionId;
  }

  openSession(id: string | null): void {
    if (id) this.selectedId = id;
    this.openId = id;
  }

  /**
   * Opens `id` from elsewhere (Spend, Resources, the history search, a notification) and has
   * the roster list it: a search or filter that hides it is cleared, its group expanded, a
   * held order applied. Opened behind a filter, the session was shown with no row of its own.
   */
  showSession(id: string): void {
    const s = this.#index.get(id);
    const hidden = () => !!s && this.#lines.indexOf(s) < 0;
    if (s && hidden()) {
      if (this.#deferred.has(id) || this.#lines.outside.has(id)) this.resort();
      const f = this.filters;
      if (hidden() && (f.query || f.status !== 'all' || f.liveOnly || (s.superseded && !f.showSuperseded))) {
        this.filters = { ...f, query: '', status: 'all', liveOnly: false, showSuperseded: f.showSuperseded || s.superseded };
        this.#rebuild();
      }
      if (this.collapsed.has(groupKey(s))) this.toggleGroup(groupKey(s));
    }
    this.openSession(id);
  }

  async startDemo(): Promise<void> {
    await this.#backend.call('start_demo');
    await this.resync();
  }

  async stopDemo(): Promise<void> {
    await this.#backend.call('stop_demo');
    await this.resync();
  }
}

/** Applies other machines' store events (keyed `host:id`); true when something changed. */
export function applyRemote(sessions: SessionTable, events: readonly RemoteEvent[]): boolean {
  let changed = false;
  for (const ev of events) {
    if (ev.type === 'discovered') {
      sessions.set(ev.session.sessionId, ev.session);
      changed = true;
    } else if (ev.type === 'updated') {
      const old = sessions.get(ev.sessionId);
      if (old) {
        sessions.set(ev.sessionId, { ...old, ...ev.changes, sessionId: old.sessionId, host: old.host });
        changed = true;
      }
    } else {
      changed = sessions.delete(ev.sessionId) || changed;
    }
  }
  return changed;
}

/**
 * Whether an event stops a session on the user: a call to approve, or a question (a pending
 * call that waits for input). A finished turn waits for input too, but nothing is blocked
 * on it: under a load of many sessions working, half the events are ones.
 */
function blocksOnTheUser(e: SeqEvent): boolean {
  const s = e.type === 'discovered' ? e.session : e.type === 'updated' ? e.changes : null;
  if (!s) return false;
  return s.status === 'waiting_for_approval' || (s.status === 'waiting_for_input' && !!s.pendingTool);
}
