// The one roster store: fed by the engine's `store:events`, re-read on `store:resync`.
// Components read it; they change it only through its methods.

import type { Backend, Unlisten } from './backend';
import { SNAPSHOT } from './marks';
import {
  DEFAULT_FILTERS,
  applyEvents,
  buildView,
  chainHead,
  heldOrder,
  newlySuperseded,
  flatten,
  type SessionTable,
  type Filters,
  type RosterLine,
  type RosterView,
} from './roster';
import { RosterIndex, type IndexWork } from './rosterIndex';
import type { HostInfo, IndexProgress, RemoteEvent, RootInfo, RosterSnapshot, SeqEvent, TrackedSession } from './types';

/** The later of two reports of the same index: more files read, or it ended. */
export function laterProgress(a: IndexProgress, b: IndexProgress): IndexProgress {
  if (a.done !== b.done) return a.done > b.done ? a : b;
  return a.indexing ? b : a;
}

export interface Totals {
  sessions: number;
  live: number;
  needsYou: number;
}

export class RosterStore {
  // The sessions, their order and counts, kept incrementally per event (rosterIndex.ts);
  // mutated in place for speed, `version` tells the views it changed.
  #index = new RosterIndex();
  #seq = 0;
  #buffer: SeqEvent[] | null = [];
  #unlisten: Unlisten[] = [];
  #backend: Backend;

  version = $state(0);
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
  readonly view: RosterView = $derived(buildView(this.sorted, this.filters, this.collapsed, this.attention));
  readonly lines: RosterLine[] = $derived(flatten(this.view.groups, this.collapsed));
  // Counted per event by the index: reading them is O(1) (O(roots) for the per-root counts).
  readonly totals: Totals = $derived.by(() => {
    void this.version;
    return { sessions: this.#index.current, live: this.#index.live, needsYou: this.attention.size };
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
   * at once.
   */
  constructor(backend: Backend, opts: { schedule?: (apply: () => void) => void } = {}) {
    this.#backend = backend;
    this.#schedule = opts.schedule ?? null;
  }

  #schedule: ((apply: () => void) => void) | null;
  #queue: SeqEvent[] = [];
  #scheduled = false;

  /** Holds the roster's order while the user looks at it (`true`), re-sorts on release. */
  hold(on: boolean): void {
    if (on === (this.#held !== null)) return;
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- built once, never mutated
    this.#held = on ? new Map(this.sorted.map((s, i) => [s.sessionId, i])) : null;
  }

  /** Re-sorts now (an explicit key), holding the new order if it was held. */
  resort(): void {
    const held = this.#held !== null;
    this.#held = null;
    if (held) this.hold(true);
  }

  get seq(): number {
    return this.#seq;
  }

  get(id: string): TrackedSession | undefined {
    return this.#index.get(id);
  }

  /** The work the index has done so far (rows touched, comparisons): the benchmark diffs it per batch. */
  get work(): Readonly<IndexWork> {
    return this.#index.work;
  }

  /** Listens first, then fetches the snapshot, so no event falls between the two. */
  async start(): Promise<void> {
    this.#unlisten.push(
      await this.#backend.on('store:events', (p) => this.receive(p.events)),
      await this.#backend.on('remote:events', (p) => this.receiveRemote(p.events)),
      await this.#backend.on('hosts:changed', (p) => (this.hosts = p.hosts)),
      await this.#backend.on('store:resync', () => void this.resync()),
      await this.#backend.on('store:progress', (p) => (this.progress = laterProgress(this.progress, p))),
      await this.#backend.on('attention:changed', (a) => {
        // eslint-disable-next-line svelte/prefer-svelte-reactivity -- replaced, never mutated
        this.attention = new Set(a.sessionIds);
        this.attentionTitle = a.title ?? 'Mimesis';
      }),
    );
    await this.resync();
  }

  stop(): void {
    for (const u of this.#unlisten) u();
    this.#unlisten = [];
  }

  /** Fetches a fresh snapshot; events arriving meanwhile are held and applied after it. */
  async resync(): Promise<void> {
    this.#buffer ??= [];
    try {
      performance.mark('mimesis:snapshot-asked');
      const snap = await this.#backend.call('roster_snapshot');
      performance.mark(SNAPSHOT);
      this.applySnapshot(snap);
      this.error = null;
    } catch (e) {
      this.error = `Could not read the session list: ${String(e)}`;
      this.#buffer = null;
    }
  }

  applySnapshot(snap: RosterSnapshot): void {
    const held = this.#buffer ?? [];
    this.#buffer = null;
    this.#index.setRoots(snap.roots.map((r) => r.path));
    this.#index.reset([...snap.sessions, ...(snap.remote ?? [])]);
    if (snap.hosts) this.hosts = snap.hosts;
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
    this.version++;
  }

  #remoteHeld: RemoteEvent[] = [];

  /** One `remote:events` batch: other machines' changes, in the order they came (no seq). */
  receiveRemote(events: RemoteEvent[]): void {
    if (this.#buffer) {
      this.#remoteHeld.push(...events);
      return;
    }
    if (!this.#schedule) {
      if (applyRemote(this.#index, events)) this.version++;
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
      else if (applyRemote(this.#index, queued)) this.version++;
    });
  }

  #remoteQueue: RemoteEvent[] = [];
  #remoteScheduled = false;

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
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(() => {
      this.#scheduled = false;
      const queued = this.#queue;
      this.#queue = [];
      // A snapshot may have come meanwhile: events it holds are skipped by their seq.
      if (this.#buffer) this.#buffer.push(...queued);
      else this.#apply(queued);
    });
  }

  #apply(events: SeqEvent[]): void {
    const r = applyEvents(this.#index, this.#seq, events);
    if (r.gap) {
      // seq grows by one per event: a hole means we lost some. Start over from a snapshot.
      void this.resync();
      return;
    }
    this.#seq = r.seq;
    if (r.changed) this.version++;
    this.#followChains(events);
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
    // A new search lands on its first match (the roster scrolls to the selection).
    if (key === 'query' && String(value).trim()) this.selectedId = this.view.order[0]?.sessionId ?? this.selectedId;
  }

  toggleGroup(key: string): void {
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a fresh copy that replaces the state
    const next = new Set(this.collapsed);
    if (!next.delete(key)) next.add(key);
    this.collapsed = next;
  }

  select(id: string | null): void {
    this.selectedId = id;
  }

  /** Moves the cursor by `delta` rows among the visible ones (clamped). */
  move(delta: number): void {
    const order = this.view.order;
    if (order.length === 0) return;
    const i = this.selectedId ? order.findIndex((s) => s.sessionId === this.selectedId) : -1;
    const next = i < 0 ? (delta > 0 ? 0 : order.length - 1) : Math.min(order.length - 1, Math.max(0, i + delta));
    this.selectedId = order[next].sessionId;
  }

  moveTo(edge: 'first' | 'last'): void {
    const order = this.view.order;
    if (order.length) this.selectedId = order[edge === 'first' ? 0 : order.length - 1].sessionId;
  }

  openSession(id: string | null): void {
    if (id) this.selectedId = id;
    this.openId = id;
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
