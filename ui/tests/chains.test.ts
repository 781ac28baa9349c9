// C6: one row per chain by default, a toggle for superseded rows, and the selection moving to
// the successor by itself.
import { describe, expect, it } from 'vitest';
import { DEFAULT_FILTERS, buildView, chainHead } from '../src/lib/roster';
import { RosterStore } from '../src/lib/store.svelte';
import type { TrackedSession } from '../src/lib/types';
import { MockBackend, session, snapshot } from './helpers';

const at = (m: number) => `2026-11-01T12:${String(m).padStart(2, '0')}:00.000Z`;

describe('chains in the roster', () => {
  const a = session('a', { superseded: true, supersededBy: 'b', workChainId: 'a', chainLength: 3, lastActivityAt: at(1) });
  const b = session('b', { superseded: true, supersededBy: 'c', workChainId: 'a', chainLength: 3, lastActivityAt: at(2) });
  const c = session('c', { workChainId: 'a', chainLength: 3, lastActivityAt: at(3) });
  const other = session('d', { lastActivityAt: at(0) });

  it('shows one row per chain unless superseded rows are asked for', () => {
    const sorted = [c, b, a, other];
    const ids = (showSuperseded: boolean) => buildView(sorted, { ...DEFAULT_FILTERS, showSuperseded }, new Set(), new Set()).order.map((s) => s.sessionId);
    expect(ids(false)).toEqual(['c', 'd']);
    expect(ids(true)).toEqual(['c', 'b', 'a', 'd']);
  });

  it('finds the head of a chain, and stops on cycles and unknown successors', () => {
    const m = new Map<string, TrackedSession>([a, b, c, other].map((s) => [s.sessionId, s]));
    expect(chainHead(m, 'a')).toBe('c');
    expect(chainHead(m, 'c')).toBe('c');
    expect(chainHead(m, 'd')).toBe('d');
    m.set('c', { ...c, superseded: true, supersededBy: 'a' });
    expect(['a', 'b', 'c']).toContain(chainHead(m, 'a'));
    m.set('c', { ...c, superseded: true, supersededBy: 'not-yet-seen' });
    expect(chainHead(m, 'a')).toBe('not-yet-seen');
  });
});

describe('RosterStore follows a superseded selection', () => {
  async function setup() {
    const backend = new MockBackend({
      roster_snapshot: () => snapshot({ seq: 1, sessions: [session('A', { lastActivityAt: at(1) }), session('X', { lastActivityAt: at(0) })], roots: [], demo: false }),
    });
    const store = new RosterStore(backend);
    await store.start();
    return { backend, store };
  }

  it('moves the open and selected session to its successor when it becomes superseded', async () => {
    const { backend, store } = await setup();
    store.openSession('A');
    backend.fire('store:events', {
      events: [
        { type: 'discovered', session: session('B', { workChainId: 'A', chainLength: 2, lastActivityAt: at(2) }), seq: 2 },
        { type: 'updated', sessionId: 'A', changes: { superseded: true, supersededBy: 'B', supersededAt: at(2), chainLength: 2 }, seq: 3 },
      ],
    });
    expect(store.openId).toBe('B');
    expect(store.selectedId).toBe('B');
    expect(store.view.order.map((s) => s.sessionId)).toEqual(['B', 'X']);
  });

  it('leaves the selection alone when another session is superseded', async () => {
    const { backend, store } = await setup();
    store.openSession('X');
    backend.fire('store:events', {
      events: [
        { type: 'discovered', session: session('B', { lastActivityAt: at(2) }), seq: 2 },
        { type: 'updated', sessionId: 'A', changes: { superseded: true, supersededBy: 'B' }, seq: 3 },
      ],
    });
    expect(store.openId).toBe('X');
  });

  it('moves the keyboard cursor even when nothing is open', async () => {
    const { backend, store } = await setup();
    store.select('A');
    backend.fire('store:events', { events: [{ type: 'updated', sessionId: 'A', changes: { superseded: true, supersededBy: 'B' }, seq: 2 }] });
    expect(store.selectedId).toBe('B');
    expect(store.openId).toBeNull();
  });
});
