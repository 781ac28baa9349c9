import { describe, expect, it } from 'vitest';
import { BUSY_APPLY_MS, IDLE_RESORT_MS, INDEXING_APPLY_MS, RosterStore } from '../src/lib/store.svelte';
import type { RosterSnapshot } from '../src/lib/types';
import { MockBackend, flush, session, snapshot } from './helpers';

const at = (m: number) => `2026-11-01T12:${String(m).padStart(2, '0')}:00.000Z`;

/** Timers that only record what was asked (each wait's callback run by hand) and its clearing. */
function fakeTimers() {
  const waits: { fn: () => void; ms: number; cleared: boolean }[] = [];
  const timers = {
    set: (fn: () => void, ms: number) => {
      const t = { fn, ms, cleared: false };
      waits.push(t);
      return t;
    },
    clear: (t: unknown) => {
      (t as { cleared: boolean }).cleared = true;
    },
  };
  return { waits, timers };
}

function setup(snap: Partial<RosterSnapshot> = {}) {
  let current: RosterSnapshot = snapshot({ seq: 5, sessions: [], roots: [{ path: '/home/me/.claude', exists: true, sessionCount: 0 }], demo: false, ...snap });
  const b = new MockBackend({ roster_snapshot: () => current, start_demo: () => null, stop_demo: () => null });
  const store = new RosterStore(b);
  return { b, store, setSnapshot: (s: RosterSnapshot) => (current = s) };
}

describe('RosterStore', () => {
  it('loads the snapshot, then applies only events newer than it', async () => {
    const { b, store } = setup({ sessions: [session('a', { lastActivityAt: at(1) })] });
    await store.start();
    expect(store.loaded).toBe(true);
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['a']);

    b.fire('store:events', {
      events: [
        { type: 'discovered', session: session('old'), seq: 4 },
        { type: 'discovered', session: session('b', { lastActivityAt: at(2) }), seq: 6 },
        { type: 'updated', sessionId: 'a', changes: { status: 'working', lastActivityAt: at(3) }, seq: 7 },
      ],
    });
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['a', 'b']);
    expect(store.get('a')?.status).toBe('working');
    expect(store.seq).toBe(7);

    // A repeated batch changes nothing.
    const v = store.version;
    b.fire('store:events', { events: [{ type: 'removed', sessionId: 'a', seq: 7 }] });
    expect(store.version).toBe(v);
    expect(store.get('a')).toBeDefined();

    b.fire('store:events', { events: [{ type: 'removed', sessionId: 'a', seq: 8 }] });
    expect(store.get('a')).toBeUndefined();
    expect(store.totals).toEqual({ sessions: 1, live: 1, needsYou: 0 });
  });

  it('holds events that arrive while the snapshot is in flight', async () => {
    const b = new MockBackend();
    let release: (s: RosterSnapshot) => void = () => {};
    b.handlers.roster_snapshot = () => new Promise<RosterSnapshot>((r) => (release = r));
    const store = new RosterStore(b);
    const started = store.start();
    await flush();
    b.fire('store:events', {
      events: [
        { type: 'discovered', session: session('x'), seq: 3 },
        { type: 'discovered', session: session('y'), seq: 4 },
      ],
    });
    release(snapshot({ seq: 3, sessions: [session('x')], roots: [], demo: false }));
    await started;
    expect(store.sorted.map((s) => s.sessionId).sort()).toEqual(['x', 'y']);
    expect(store.seq).toBe(4);
  });

  it('holds the order while held: moved rows stay and are marked, new ones wait off the list, removed ones go; resort and release re-sort', async () => {
    const { b, store } = setup({
      sessions: [session('a', { lastActivityAt: at(3) }), session('b', { lastActivityAt: at(2) }), session('c', { lastActivityAt: at(1) })],
    });
    await store.start();
    const ids = () => store.sorted.map((s) => s.sessionId);
    const listed = () => store.lines.order().map((s) => s.sessionId);
    const moved = (id: string) => store.sorted.some((s) => s.sessionId === id && store.movedSince(s));
    store.hold(true);
    b.fire('store:events', {
      events: [
        { type: 'updated', sessionId: 'c', changes: { lastActivityAt: at(9), status: 'working' }, seq: 6 },
        { type: 'discovered', session: session('n', { lastActivityAt: at(8) }), seq: 7 },
        { type: 'removed', sessionId: 'b', seq: 8 },
      ],
    });
    // Nothing is inserted above a row the user may be on: the new one waits, counted.
    expect(listed()).toEqual(['a', 'c']);
    expect(store.waiting).toBe(1);
    expect(store.view.counts.all).toBe(3);
    expect(ids()).toEqual(['n', 'a', 'c']);
    expect(store.get('c')?.status).toBe('working');
    expect(store.sorted[2]).toBe(store.get('c'));
    // c had activity: marked in place; a did not.
    expect(moved('c')).toBe(true);
    expect(moved('a')).toBe(false);
    store.resort();
    expect(listed()).toEqual(['c', 'n', 'a']);
    expect(store.waiting).toBe(0);
    expect(moved('c')).toBe(false);
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'a', changes: { lastActivityAt: at(10) }, seq: 9 }] });
    expect(ids()).toEqual(['c', 'n', 'a']);
    store.hold(false);
    expect(ids()).toEqual(['a', 'c', 'n']);
    expect(listed()).toEqual(['a', 'c', 'n']);
    // Per-root counts follow transcript paths as sessions come and go.
    expect(store.rootCounts.get('/home/me/.claude')).toBe(3);
  });

  it('under a status filter, held: a row that leaves the filter stays in place, one that comes into it waits; applied on release', async () => {
    const { b, store } = setup({
      sessions: [
        session('a', { lastActivityAt: at(5), status: 'waiting_for_approval' }),
        session('b', { lastActivityAt: at(4), status: 'waiting_for_approval' }),
        session('c', { lastActivityAt: at(3), status: 'working' }),
        session('d', { lastActivityAt: at(2), status: 'waiting_for_approval' }),
      ],
    });
    await store.start();
    store.setFilter('status', 'waiting_for_approval');
    const listed = () => store.lines.order().map((s) => s.sessionId);
    expect(listed()).toEqual(['a', 'b', 'd']);
    store.hold(true);
    b.fire('store:events', {
      events: [
        // a is answered (leaves the filter), c comes to ask (comes into it).
        { type: 'updated', sessionId: 'a', changes: { status: 'working', lastActivityAt: at(9) }, seq: 6 },
        { type: 'updated', sessionId: 'c', changes: { status: 'waiting_for_approval', lastActivityAt: at(8) }, seq: 7 },
      ],
    });
    await flush();
    // Nothing moved under the pointer: a keeps its row (marked), c waits, counted.
    expect(listed()).toEqual(['a', 'b', 'd']);
    expect(store.view.counts.waiting_for_approval).toBe(3);
    expect([store.waiting, store.waitingNew]).toEqual([1, 0]);
    expect(store.sorted.some((s) => s.sessionId === 'a' && store.movedSince(s))).toBe(true);
    // Left again: c is no longer waiting to be shown.
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'c', changes: { status: 'working', lastActivityAt: at(10) }, seq: 8 } ] });
    await flush();
    expect(store.waiting).toBe(0);
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'c', changes: { status: 'waiting_for_approval', lastActivityAt: at(11) }, seq: 9 } ] });
    await flush();
    expect(listed()).toEqual(['a', 'b', 'd']);
    store.hold(false);
    expect(listed()).toEqual(['c', 'b', 'd']);
    expect(store.waiting).toBe(0);
  });

  it('under the needs-you filter, held: the attention set changing moves no row', async () => {
    const { store } = setup({
      sessions: [session('a', { lastActivityAt: at(3) }), session('b', { lastActivityAt: at(2) }), session('c', { lastActivityAt: at(1) })],
    });
    await store.start();
    store.setAttention(['a', 'b']);
    store.setFilter('status', 'needs_you');
    const listed = () => store.lines.order().map((s) => s.sessionId);
    expect(listed()).toEqual(['a', 'b']);
    store.hold(true);
    store.setAttention(['b', 'c']);
    expect(listed()).toEqual(['a', 'b']);
    expect(store.view.counts.needs_you).toBe(2);
    expect(store.waiting).toBe(1);
    store.resort();
    expect(listed()).toEqual(['b', 'c']);
    expect(store.waiting).toBe(0);
  });

  it('a session opened from elsewhere gets its row: the search, filters and collapsed group that hid it give way', async () => {
    const { store } = setup({
      sessions: [session('a', { lastActivityAt: at(3), goal: 'fix the parser' }), session('b', { lastActivityAt: at(2), repoRoot: '/r/b', status: 'idle' })],
    });
    await store.start();
    store.setFilter('query', 'parser');
    store.setFilter('status', 'working');
    store.toggleGroup('/r/b');
    const listed = () => store.lines.order().map((s) => s.sessionId);
    store.showSession('b');
    expect(store.openId).toBe('b');
    expect(store.filters).toMatchObject({ query: '', status: 'all', liveOnly: false });
    expect(listed()).toContain('b');
    // One already listed: nothing the user chose changes.
    store.setFilter('query', 'parser');
    store.showSession('a');
    expect(store.filters.query).toBe('parser');
  });

  it('a session waiting off a held list is shown by applying the order, the filter kept', async () => {
    const { b, store } = setup({ sessions: [session('a', { lastActivityAt: at(3) }), session('b', { lastActivityAt: at(2) })] });
    await store.start();
    store.setFilter('status', 'waiting_for_approval');
    store.hold(true);
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'b', changes: { status: 'waiting_for_approval', lastActivityAt: at(9) }, seq: 6 }] });
    await flush();
    expect(store.waiting).toBe(1);
    store.showSession('b');
    expect(store.filters.status).toBe('waiting_for_approval');
    expect(store.lines.order().map((s) => s.sessionId)).toEqual(['b']);
    expect(store.openId).toBe('b');
  });

  it('holds the order while the pointer or the focus is in the roster, until both leave', async () => {
    const { b, store } = setup({ sessions: [session('a', { lastActivityAt: at(3) }), session('b', { lastActivityAt: at(2) })] });
    await store.start();
    const listed = () => store.lines.order().map((s) => s.sessionId);
    store.hold(true, 'focus');
    store.hold(true, 'pointer');
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'b', changes: { lastActivityAt: at(9) }, seq: 6 }] });
    store.hold(false, 'pointer');
    // The keyboard focus is still there: the cursor's row does not move.
    expect(listed()).toEqual(['a', 'b']);
    store.hold(false, 'focus');
    expect(listed()).toEqual(['b', 'a']);
  });

  it('applies a held order after the user has left the roster untouched for a while, on its injected timer', async () => {
    const timers: { fn: () => void; ms: number; live: boolean }[] = [];
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 5, sessions: [session('a', { lastActivityAt: at(3) }), session('b', { lastActivityAt: at(2) })] }) });
    const store = new RosterStore(b, {
      timers: {
        set: (fn, ms) => {
          const t = { fn, ms, live: true };
          timers.push(t);
          return t;
        },
        clear: (t) => void ((t as { live: boolean }).live = false),
      },
    });
    await store.start();
    const listed = () => store.lines.order().map((s) => s.sessionId);
    const fire = () => {
      const live = timers.filter((t) => t.live);
      expect(live).toHaveLength(1);
      expect(live[0].ms).toBe(IDLE_RESORT_MS);
      live[0].live = false;
      live[0].fn();
    };
    store.hold(true);
    // Untouched with nothing changed: the order stays, the wait starts again.
    fire();
    expect(listed()).toEqual(['a', 'b']);
    b.fire('store:events', {
      events: [
        { type: 'updated', sessionId: 'b', changes: { lastActivityAt: at(9) }, seq: 6 },
        { type: 'discovered', session: session('n', { lastActivityAt: at(8) }), seq: 7 },
      ],
    });
    // A touch restarts the wait; the order holds meanwhile.
    store.touch();
    expect(timers.filter((t) => t.live)).toHaveLength(1);
    expect(listed()).toEqual(['a', 'b']);
    fire();
    // Applied, and held again (the pointer is still there).
    expect(listed()).toEqual(['b', 'n', 'a']);
    expect(store.waiting).toBe(0);
    b.fire('store:events', { events: [{ type: 'updated', sessionId: 'a', changes: { lastActivityAt: at(10) }, seq: 8 }] });
    expect(listed()).toEqual(['b', 'n', 'a']);
    // Released: no wait is left behind.
    store.hold(false);
    expect(timers.filter((t) => t.live)).toHaveLength(0);
    expect(listed()).toEqual(['a', 'b', 'n']);
  });

  it('shows the roster asked for at document start before its listeners are there, then says it listens', async () => {
    const { b, store } = setup();
    b.handlers.roster_listening = () => null;
    b.early = Promise.resolve(snapshot({ seq: 5, sessions: [session('a', { lastActivityAt: at(1) })] }));
    let listen: (v?: unknown) => void = () => {};
    b.listening = new Promise((r) => (listen = r));
    const started = store.start();
    await flush();
    // Rows on screen; the app holds what changed since until the page listens.
    expect(store.loaded).toBe(true);
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['a']);
    expect(b.count('roster_listening')).toBe(0);
    listen();
    await started;
    expect(b.count('roster_listening')).toBe(1);
    expect(b.count('roster_snapshot')).toBe(0);
    // What was held comes after it: only the newer events count.
    b.fire('store:events', { events: [{ type: 'discovered', session: session('b', { lastActivityAt: at(2) }), seq: 6 }] });
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['b', 'a']);
  });

  it('shows an early roster that came already before any listener, and one on its way only once started', async () => {
    const { b, store } = setup();
    b.handlers.roster_listening = () => null;
    b.early = Promise.resolve(snapshot({ seq: 5, sessions: [session('a', { lastActivityAt: at(1) })] }));
    expect(await store.showEarly()).toBe(true);
    // On screen before anything was asked of the app.
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['a']);
    expect(b.calls).toEqual([]);
    await store.start();
    // Listening, it releases the held events; the roster is not read again.
    expect(b.count('roster_listening')).toBe(1);
    expect(b.count('roster_snapshot')).toBe(0);

    const later = setup();
    later.b.handlers.roster_listening = () => null;
    let arrive: (s: RosterSnapshot) => void = () => {};
    later.b.early = new Promise((r) => (arrive = r));
    expect(await later.store.showEarly()).toBe(false);
    expect(later.store.loaded).toBe(false);
    const started = later.store.start();
    arrive(snapshot({ seq: 5, sessions: [session('b')] }));
    await started;
    expect(later.store.sorted.map((s) => s.sessionId)).toEqual(['b']);
    expect(later.b.count('roster_listening')).toBe(1);
    expect(later.b.count('roster_snapshot')).toBe(0);
  });

  it('asks for the roster itself when the early one failed, or its events could not be released', async () => {
    for (const fail of ['early', 'listening'] as const) {
      const { b, store } = setup({ seq: 9, sessions: [session('now')] });
      b.early = fail === 'early' ? Promise.reject(new Error('refused')) : Promise.resolve(snapshot({ seq: 5, sessions: [session('early')] }));
      b.handlers.roster_listening = () => {
        throw new Error('refused');
      };
      await store.start();
      expect(b.count('roster_snapshot'), fail).toBe(1);
      expect(store.sorted.map((s) => s.sessionId), fail).toEqual(['now']);
      expect(store.error, fail).toBeNull();
    }
  });

  it('a roster asked for again while the early one was on its way is not replaced by it', async () => {
    const { b, store, setSnapshot } = setup();
    b.handlers.roster_listening = () => null;
    let early: (s: RosterSnapshot) => void = () => {};
    b.early = new Promise((r) => (early = r));
    const started = store.start();
    await flush();
    // The app asks the page to read its roster again before the early one arrived.
    setSnapshot(snapshot({ seq: 20, sessions: [session('fresh')] }));
    b.fire('store:resync', {});
    await flush();
    early(snapshot({ seq: 5, sessions: [session('stale')] }));
    await started;
    await flush();
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['fresh']);
    expect(store.seq).toBe(20);
    expect(b.count('roster_snapshot')).toBe(1);
  });

  it('refetches the snapshot on store:resync and on a hole in seq', async () => {
    const { b, store, setSnapshot } = setup({ sessions: [session('a')] });
    await store.start();
    setSnapshot(snapshot({ seq: 20, sessions: [session('fresh')], roots: [], demo: true }));
    b.fire('store:resync', {});
    await flush();
    await flush();
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['fresh']);
    expect(store.demo).toBe(true);
    expect(b.count('roster_snapshot')).toBe(2);

    b.fire('store:events', { events: [{ type: 'removed', sessionId: 'fresh', seq: 25 }] });
    await flush();
    await flush();
    expect(b.count('roster_snapshot')).toBe(3);
  });

  it('counts needs-you, filters, and moves the keyboard cursor over visible rows', async () => {
    const { store, b } = setup({
      sessions: [
        session('w', { status: 'working', lastActivityAt: at(5) }),
        session('p', { status: 'waiting_for_approval', lastActivityAt: at(4) }),
        session('i', { status: 'waiting_for_input', lastActivityAt: at(3), live: false }),
        session('s', { status: 'idle', lastActivityAt: at(2), superseded: true }),
      ],
    });
    await store.start();
    // "Needs you" is the engine's attention set, sent as `attention:changed`.
    expect(store.totals.needsYou).toBe(0);
    b.fire('attention:changed', { count: 2, sessionIds: ['p', 'i'], title: 'Mimesis — 2 need you' });
    await flush();
    expect(store.totals).toEqual({ sessions: 3, live: 2, needsYou: 2 });
    expect(store.view.counts.needs_you).toBe(2);

    store.setFilter('status', 'needs_you');
    expect(store.view.order.map((s) => s.sessionId)).toEqual(['p', 'i']);
    store.move(1);
    expect(store.selectedId).toBe('p');
    store.move(1);
    store.move(1);
    expect(store.selectedId).toBe('i');
    store.moveTo('first');
    expect(store.selectedId).toBe('p');

    store.setFilter('status', 'all');
    store.setFilter('liveOnly', true);
    expect(store.view.order.map((s) => s.sessionId)).toEqual(['w', 'p']);
    store.setFilter('showSuperseded', true);
    store.setFilter('liveOnly', false);
    expect(store.view.order.map((s) => s.sessionId)).toEqual(['w', 'p', 'i', 's']);

    // Running: a process owns it, or its turn is at work (the demo's sessions register none).
    b.fire('store:events', { events: [{ seq: 6, type: 'updated', sessionId: 'w', changes: { live: false } }, { seq: 7, type: 'updated', sessionId: 'p', changes: { live: false } }] });
    await flush();
    expect(store.totals.live).toBe(1);
    store.setFilter('liveOnly', true);
    expect(store.view.order.map((s) => s.sessionId)).toEqual(['w', 's']);
  });

  it('opens a session and forgets it when it is removed', async () => {
    const { b, store } = setup({ sessions: [session('a')] });
    await store.start();
    store.openSession('a');
    expect(store.open?.sessionId).toBe('a');
    b.fire('store:events', { events: [{ type: 'removed', sessionId: 'a', seq: 6 }] });
    expect(store.open).toBeNull();
  });

  it('re-reads the snapshot after starting and stopping the demo', async () => {
    const { b, store, setSnapshot } = setup();
    await store.start();
    setSnapshot(snapshot({ seq: 9, sessions: [session('demo-1')], roots: [], demo: true }));
    await store.startDemo();
    expect(store.demo).toBe(true);
    expect(b.calls.map((c) => c.cmd)).toEqual(['roster_snapshot', 'start_demo', 'roster_snapshot']);
  });
});

describe('other machines (issue 13)', () => {
  it('holds their rows beside the local ones, keyed host:id, grouped under the host, with no seq', async () => {
    const remote = session('devbox:r1', { host: 'devbox', cwd: '/srv/api', repoRoot: '/srv/api', lastActivityAt: at(1) });
    const { b, store } = setup({
      sessions: [session('r1', { cwd: '/srv/api', repoRoot: '/srv/api', lastActivityAt: at(2) })],
      remote: [remote],
      hosts: [{ host: 'devbox', state: 'live', message: null, lastSeen: at(1), sessions: 1, version: '0.1.0', retryInSecs: null }],
    });
    await store.start();
    // The same id on two machines: two rows, two groups.
    expect(store.sorted.map((s) => s.sessionId)).toEqual(['r1', 'devbox:r1']);
    expect(store.view.groups.map((g) => [g.key, g.label])).toEqual([
      ['/srv/api', 'api'],
      ['devbox:/srv/api', 'devbox · api'],
    ]);
    expect(store.hosts[0].state).toBe('live');

    // Their events carry no seq and never make the local stream look holed.
    const seq = store.seq;
    b.fire('remote:events', { events: [{ type: 'updated', sessionId: 'devbox:r1', changes: { status: 'working', host: 'other' } }] });
    expect(store.get('devbox:r1')?.status).toBe('working');
    expect(store.get('devbox:r1')?.host).toBe('devbox');
    expect(store.seq).toBe(seq);
    b.fire('remote:events', { events: [{ type: 'discovered', session: session('devbox:r2', { host: 'devbox' }) }] });
    b.fire('remote:events', { events: [{ type: 'removed', sessionId: 'devbox:r1' }] });
    expect(store.sorted.map((s) => s.sessionId).sort()).toEqual(['devbox:r2', 'r1']);

    b.fire('remote:events', { events: [{ type: 'updated', sessionId: 'devbox:r2', changes: { status: 'working' } }] });
    const running = store.totals.live;
    b.fire('hosts:changed', { hosts: [{ host: 'devbox', state: 'stale', message: 'the connection was closed', lastSeen: at(3), sessions: 1, version: '0.1.0', retryInSecs: 2 }] });
    expect(store.hosts[0].state).toBe('stale');
    expect(store.get('devbox:r2')).toBeDefined();
    // Its last state was "working", but a machine that is away runs nothing the user can see.
    expect(store.totals.live).toBe(running - 1);
    b.fire('hosts:changed', { hosts: [{ host: 'devbox', state: 'live', message: null, lastSeen: at(4), sessions: 1, version: '0.1.0', retryInSecs: null }] });
    expect(store.totals.live).toBe(running);
  });

  it('a machine\'s state that changed while the snapshot was read is not taken back by it', async () => {
    const host = (state: 'live' | 'helper_missing') => ({ host: 'devbox', state, message: null, lastSeen: at(1), sessions: 0, version: null, retryInSecs: null });
    let answer: (s: RosterSnapshot) => void = () => {};
    const b = new MockBackend({ roster_snapshot: () => new Promise<RosterSnapshot>((r) => (answer = r)) });
    const store = new RosterStore(b);
    const started = store.start();
    await flush();
    b.fire('hosts:changed', { hosts: [host('live')] });
    // Read before the change, answered after its event.
    answer(snapshot({ seq: 1, sessions: [], roots: [], demo: false, hosts: [host('helper_missing')] }));
    await started;
    expect(store.hosts[0].state).toBe('live');
    // A later snapshot, with nothing heard meanwhile, is taken.
    const again = store.resync();
    await flush();
    answer(snapshot({ seq: 2, sessions: [], roots: [], demo: false, hosts: [host('helper_missing')] }));
    await again;
    expect(store.hosts[0].state).toBe('helper_missing');
  });
});

describe('search', () => {
  it('a new search lands on its first match', async () => {
    const b = new MockBackend({
      roster_snapshot: () =>
        snapshot({
          seq: 0,
          sessions: [session('a', { goal: 'alpha', lastActivityAt: '2026-11-01T12:00:02.000Z' }), session('b', { goal: 'beta' })],
          roots: [],
          demo: false,
        }),
    });
    const store = new RosterStore(b);
    await store.start();
    store.select('a');
    store.setFilter('query', 'beta');
    expect(store.selectedId).toBe('b');
  });
});

describe('RosterStore with a frame scheduler', () => {
  it('applies the batches of a frame together: one roster rebuild per frame, whatever the burst', async () => {
    const frames: (() => void)[] = [];
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('a'), session('b')], roots: [], demo: false }) });
    const store = new RosterStore(b, { schedule: (fn) => frames.push(fn) });
    await store.start();
    const version = store.version;
    for (let i = 1; i <= 50; i++) b.fire('store:events', { events: [{ seq: i, type: 'updated', sessionId: i % 2 ? 'a' : 'b', changes: { goal: `g${i}` } }] });
    expect(frames).toHaveLength(1);
    expect(store.version).toBe(version);
    frames[0]();
    expect(store.version).toBe(version + 1);
    expect(store.get('a')?.goal).toBe('g49');
    expect(store.get('b')?.goal).toBe('g50');
    expect(store.seq).toBe(50);
  });

  it('calls the index finished only once the events that came before its end are applied', async () => {
    const frames: (() => void)[] = [];
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('a')], roots: [], demo: false, progress: { indexing: true, done: 0, total: 3 } }) });
    const store = new RosterStore(b, { schedule: (fn) => frames.push(fn) });
    await store.start();
    b.fire('store:events', { events: [{ seq: 1, type: 'discovered', session: session('b') }, { seq: 2, type: 'discovered', session: session('c') }] });
    b.fire('store:progress', { indexing: false, done: 3, total: 3 });
    expect(store.progress.indexing).toBe(true);
    expect(store.size).toBe(1);
    frames.splice(0).forEach((f) => f());
    expect(store.size).toBe(3);
    expect(store.progress).toEqual({ indexing: false, done: 3, total: 3 });
    // With nothing waiting, an end (said again) applies at once; it never goes back.
    b.fire('store:progress', { indexing: true, done: 2, total: 3 });
    expect(store.progress.indexing).toBe(false);
  });

  it('while the first index runs, applies its batches and progress a few times a second, and its end at the next frame', async () => {
    const frames: (() => void)[] = [];
    const { waits, timers } = fakeTimers();
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('a')], roots: [], demo: false, progress: { indexing: true, done: 0, total: 4 } }) });
    const store = new RosterStore(b, { schedule: (fn) => frames.push(fn), indexingEvery: INDEXING_APPLY_MS, timers });
    await store.start();
    const version = store.version;
    b.fire('store:events', { events: [{ seq: 1, type: 'discovered', session: session('b') }] });
    b.fire('store:progress', { indexing: true, done: 1, total: 4 });
    b.fire('store:events', { events: [{ seq: 2, type: 'discovered', session: session('c') }] });
    b.fire('store:progress', { indexing: true, done: 2, total: 4 });
    // One wait for the lot, and no frame asked for yet: nothing applied.
    expect(waits.map((w) => w.ms)).toEqual([INDEXING_APPLY_MS]);
    expect(frames).toHaveLength(0);
    expect(store.version).toBe(version);
    expect(store.progress.done).toBe(0);
    waits[0].fn();
    expect(frames).toHaveLength(1);
    frames.splice(0).forEach((f) => f());
    expect(store.version).toBe(version + 1);
    expect(store.size).toBe(3);
    expect(store.progress).toEqual({ indexing: true, done: 2, total: 4 });
    // The last part, then the end: the end does not wait, and comes with the events before it.
    b.fire('store:events', { events: [{ seq: 3, type: 'discovered', session: session('d') }] });
    b.fire('store:progress', { indexing: true, done: 4, total: 4 });
    b.fire('store:progress', { indexing: false, done: 4, total: 4 });
    expect(waits).toHaveLength(2);
    expect(waits[1].cleared).toBe(true);
    expect(store.progress.indexing).toBe(true);
    expect(frames).toHaveLength(1);
    frames.splice(0).forEach((f) => f());
    expect(store.size).toBe(4);
    expect(store.progress).toEqual({ indexing: false, done: 4, total: 4 });
    // Once the index has ended, a batch is applied at the next frame again.
    b.fire('store:events', { events: [{ seq: 4, type: 'discovered', session: session('e') }] });
    expect(waits).toHaveLength(2);
    expect(frames).toHaveLength(1);
    frames.splice(0).forEach((f) => f());
    expect(store.size).toBe(5);
  });

  it('after the index, applies a batch within a busy spell once the spell is over, and a call to approve or a question at the next frame', async () => {
    const frames: (() => void)[] = [];
    const { waits, timers } = fakeTimers();
    let now = 1_000;
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('a')], roots: [], demo: false }) });
    const store = new RosterStore(b, { schedule: (fn) => frames.push(fn), indexingEvery: INDEXING_APPLY_MS, busyEvery: BUSY_APPLY_MS, timers, now: () => now });
    await store.start();
    const run = () => frames.splice(0).forEach((f) => f());
    // After a quiet spell: the next frame.
    b.fire('store:events', { events: [{ seq: 1, type: 'discovered', session: session('b') }] });
    expect(waits).toHaveLength(0);
    expect(frames).toHaveLength(1);
    run();
    expect(store.size).toBe(2);
    // 50 ms later, and again: one wait for the rest of the spell, nothing applied meanwhile.
    now += 50;
    b.fire('store:events', { events: [{ seq: 2, type: 'discovered', session: session('c') }] });
    now += 10;
    b.fire('store:events', { events: [{ seq: 3, type: 'discovered', session: session('d') }] });
    expect(waits.map((w) => w.ms)).toEqual([BUSY_APPLY_MS - 50]);
    expect(frames).toHaveLength(0);
    expect(store.size).toBe(2);
    now += BUSY_APPLY_MS;
    waits[0].fn();
    run();
    expect(store.size).toBe(4);
    // Within the next spell, a session that starts waiting for approval: the wait is cut
    // short, and it goes with what waited.
    now += 20;
    b.fire('store:events', { events: [{ seq: 4, type: 'discovered', session: session('e') }] });
    expect(waits).toHaveLength(2);
    expect(frames).toHaveLength(0);
    b.fire('store:events', { events: [{ seq: 5, type: 'updated', sessionId: 'b', changes: { status: 'waiting_for_approval' } }] });
    expect(waits[1].cleared).toBe(true);
    expect(frames).toHaveLength(1);
    run();
    expect(store.size).toBe(5);
    expect(store.get('b')?.status).toBe('waiting_for_approval');
    // Right after, a question: at the next frame too.
    now += 5;
    b.fire('store:events', { events: [{ seq: 6, type: 'updated', sessionId: 'c', changes: { status: 'waiting_for_input', pendingTool: { tool: 'AskUserQuestion', target: '' } } }] });
    expect(waits).toHaveLength(2);
    expect(frames).toHaveLength(1);
    run();
    expect(store.get('c')?.status).toBe('waiting_for_input');
    // A finished turn (waiting for input, nothing pending) blocks nothing: it waits its turn.
    now += 5;
    b.fire('store:events', { events: [{ seq: 7, type: 'updated', sessionId: 'd', changes: { status: 'waiting_for_input' } }] });
    expect(waits.map((w) => w.ms)).toEqual([BUSY_APPLY_MS - 50, BUSY_APPLY_MS - 20, BUSY_APPLY_MS - 5]);
    expect(frames).toHaveLength(0);
    now += BUSY_APPLY_MS;
    waits[2].fn();
    run();
    expect(store.get('d')?.status).toBe('waiting_for_input');
  });

  it('applies other machines\' batches of a frame together too', async () => {
    const frames: (() => void)[] = [];
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [], roots: [], demo: false }) });
    const store = new RosterStore(b, { schedule: (fn) => frames.push(fn) });
    await store.start();
    const version = store.version;
    for (let h = 0; h < 10; h++) b.fire('remote:events', { events: [{ type: 'discovered', session: session(`m${h}:s`, { host: `m${h}` }) }] });
    expect(frames).toHaveLength(1);
    expect(store.version).toBe(version);
    frames[0]();
    expect(store.version).toBe(version + 1);
    expect(store.sorted).toHaveLength(10);
  });
});
