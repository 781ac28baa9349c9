import { fireEvent, render, screen } from '@testing-library/svelte';
import Roster from '../src/components/Roster.svelte';
import { RosterStore } from '../src/lib/store.svelte';
import type { Backend, PageChannel } from '../src/lib/backend';
import type { Commands, DoctorReport, Events, RosterSnapshot, SeqEvent, TimelineItem, TrackedSession } from '../src/lib/types';

export function session(id: string, over: Partial<TrackedSession> = {}): TrackedSession {
  return {
    sessionId: id,
    projectId: '-home-me-proj',
    cwd: '/home/me/proj',
    repoRoot: '/home/me/proj',
    branch: 'main',
    goal: `goal of ${id}`,
    summary: null,
    title: null,
    status: 'idle',
    hasPendingToolUse: false,
    pendingTool: null,
    lastActivityAt: '2026-11-01T12:00:00.000Z',
    createdAt: '2026-11-01T11:00:00.000Z',
    model: 'claude-opus-4-8',
    usage: { inputTokens: 1, outputTokens: 2, cacheCreationInputTokens: 3, cacheReadInputTokens: 4 },
    apiError: false,
    compactionCount: 0,
    superseded: false,
    supersededBy: null,
    supersededAt: null,
    workChainId: id,
    workChainName: null,
    source: 'watcher',
    live: true,
    pid: 1,
    transcriptPath: `/home/me/.claude/projects/-home-me-proj/${id}.jsonl`,
    permissionMode: 'default',
    malformedLines: 0,
    malformedFields: 0,
    chainLength: 1,
    supervision: null,
    statusFile: null,
    name: null,
    cost: { estimatedUsd: null, unknownModels: [], pricesAsOf: '2026-11-01', billed: null },
    subagents: 0,
    host: null,
    kind: null,
    job: null,
    ...over,
  };
}

/** A roster snapshot as `roster_snapshot` answers: this machine only, indexed, unless told. */
export function snapshot(over: Partial<RosterSnapshot> = {}): RosterSnapshot {
  return {
    seq: 0,
    sessions: [],
    roots: [],
    demo: false,
    remote: [],
    hosts: [],
    indexing: false,
    progress: { indexing: false, done: 0, total: 0 },
    ...over,
  };
}

/** A doctor's report of one config root with hooks installed, nothing wrong. */
export function doctorReport(over: Partial<DoctorReport> = {}): DoctorReport {
  const hooks = { root: '/x/.claude', settingsPath: '/x/.claude/settings.json', installed: true, partial: false, error: null, missingProgram: null };
  return {
    mimesisVersion: '0.1.0',
    roots: [{ path: '/x/.claude', exists: true, sessionCount: 3, hooks }],
    claudeCode: { path: '/usr/bin/claude', onPath: true, version: '2.1.197 (Claude Code)', seenVersion: '2.1.197', error: null },
    watcher: { ok: true, maxUserWatches: 65536, error: null },
    dataDir: '/x/mimesis',
    dataDirMode: '0700',
    dataDirOpen: null,
    database: { path: '/x/mimesis/fleet.db', health: { state: 'ok' }, sizeBytes: 12_288, sessions: 3, chainLinks: 0, supervisedProcesses: 0, schemaVersion: 1 },
    databaseDeletedUnder: null,
    hookSpool: { path: '/x/mimesis/hooks', files: 0, events: 0, lastEventAt: null },
    supervision: { recordedProcesses: 0, recordedSessions: 0, supervisors: [], metricsPublishers: [], staleMetrics: 0, error: null },
    ...over,
  };
}

export function prompt(i: number, text = `prompt ${i}`): TimelineItem {
  return { kind: 'prompt', uuid: `u${i}`, timestamp: '2026-11-01T12:00:00.000Z', text };
}

let seq = 0;
export function ev(e: Omit<SeqEvent, 'seq'> & { seq?: number }): SeqEvent {
  return { ...e, seq: e.seq ?? ++seq } as SeqEvent;
}

type Handlers = { [K in keyof Commands]?: (args: Commands[K]['args']) => Commands[K]['ret'] | Promise<Commands[K]['ret']> };

/** A scriptable backend: command handlers you pass, events you fire, a log of calls. */
export class MockBackend implements Backend {
  readonly fake = true;
  readonly calls: { cmd: string; args: unknown }[] = [];
  #listeners = new Map<string, Set<(p: unknown) => void>>();

  constructor(public handlers: Handlers = {}) {}

  call: Backend['call'] = ((cmd: keyof Commands, args?: unknown) => {
    this.calls.push({ cmd, args });
    const h = this.handlers[cmd] as ((a: unknown) => unknown) | undefined;
    if (!h) return Promise.reject(new Error(`unexpected command ${cmd}`));
    return Promise.resolve().then(() => h(args));
  }) as Backend['call'];

  /** The roster the page asked for at document start (`earlyRoster`), if any. */
  early: Promise<RosterSnapshot> | null = null;
  earlyRoster(): Promise<RosterSnapshot> | null {
    const e = this.early;
    this.early = null;
    return e;
  }

  /** Listeners are there (their round trips answered) once this resolves. */
  listening: Promise<unknown> = Promise.resolve();

  on<E extends keyof Events>(event: E, handler: (payload: Events[E]) => void): Promise<() => void> {
    return this.listening.then(() => {
      let set = this.#listeners.get(event);
      if (!set) this.#listeners.set(event, (set = new Set()));
      const h = handler as (p: unknown) => void;
      set.add(h);
      return () => set.delete(h);
    });
  }

  /** Each channel made, with `lost` to play a message that never came. */
  readonly channels: (PageChannel & { lost: () => void })[] = [];
  channel(onmessage: (data: ArrayBuffer) => void, onlost: () => void = () => {}): PageChannel {
    const c = { onmessage, held: 0, lose: () => {}, lost: onlost };
    this.channels.push(c);
    return c;
  }

  fire<E extends keyof Events>(event: E, payload: Events[E]): void {
    this.#listeners.get(event)?.forEach((h) => h(payload));
  }

  count(cmd: string): number {
    return this.calls.filter((c) => c.cmd === cmd).length;
  }

  /** How many listeners of each event are held now. */
  held(): Record<string, number> {
    return Object.fromEntries([...this.#listeners].filter(([, set]) => set.size > 0).map(([e, set]) => [e, set.size]));
  }
}

export const flush = () => new Promise((r) => setTimeout(r, 0));

/** jsdom lays nothing out: the scroller of `inner` (a feed is its own scroller), with a view `height` tall and the given content height. */
export function scrollerGeometry(inner: HTMLElement, height: number, content: () => number) {
  const scroller = inner.getAttribute('role') === 'feed' ? inner : (inner.parentElement?.parentElement as HTMLElement);
  let top = 0;
  Object.defineProperty(scroller, 'clientHeight', { configurable: true, get: () => height });
  Object.defineProperty(scroller, 'scrollHeight', { configurable: true, get: content });
  Object.defineProperty(scroller, 'scrollTop', {
    configurable: true,
    get: () => top,
    set: (v: number) => (top = Math.max(0, Math.min(v, content() - height))),
  });
  return {
    get top() {
      return top;
    },
    /** The user scrolls to `y`. */
    scroll: async (y: number) => {
      top = y;
      await fireEvent.scroll(scroller);
    },
  };
}

/** The last activity of the `i`-th most recent session of `mountTwoGroups` (negative: newer than all). */
export const twoGroupsTime = (i: number) => new Date(Date.UTC(2026, 10, 1, 12, 0, 200 - i)).toISOString();

/** The roster of 200 sessions in two groups, alpha (s0…s99) then beta (s100…s199), most
 *  recent first, mounted, with its listbox's scroller 300 pixels tall (two headers of 30
 *  pixels and 200 rows of 58). */
export function mountTwoGroups() {
  const at = twoGroupsTime;
  const store = new RosterStore(new MockBackend());
  const many = Array.from({ length: 200 }, (_, i) => session(`s${i}`, { repoRoot: i < 100 ? '/r/alpha' : '/r/beta', goal: `task ${i}`, lastActivityAt: at(i) }));
  store.applySnapshot(snapshot({ sessions: many }));
  render(Roster, { props: { store, onopen: () => {} } });
  const list = screen.getByRole('listbox', { name: 'Sessions' });
  return { store, list, g: scrollerGeometry(list, 300, () => 60 + 200 * 58) };
}
