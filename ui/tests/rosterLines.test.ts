// The roster's view kept per event (lib/rosterLines.ts) against the same view built from
// scratch (buildView + flatten), after every batch of a random stream; and its work per batch.
import { describe, expect, it } from 'vitest';
import { buildView, flatten, type RosterLine } from '../src/lib/roster';
import { RosterStore } from '../src/lib/store.svelte';
import type { SeqEvent, Status, TrackedSession } from '../src/lib/types';
import { MockBackend, session, snapshot } from './helpers';
import { loadedStore, updateBatches } from './rosterLoad';

const STATUSES: Status[] = ['working', 'idle', 'waiting_for_input', 'waiting_for_approval'];
const iso = (s: number) => new Date(Date.UTC(2026, 10, 1) + s * 1000).toISOString();

/** What the roster shows, as text: `[label n!k]` for a header (n rows, k need you, + collapsed), ids for rows. */
function shown(lines: readonly RosterLine[]): string[] {
  return lines.map((l) => (l.type === 'group' ? `[${l.group.label} ${l.group.sessions.length}!${l.group.needsYou}${l.collapsed ? '+' : ''}]` : l.key));
}

function kept(store: RosterStore): string[] {
  const lines = store.lines;
  return shown(Array.from({ length: lines.count }, (_, i) => lines.line(i)));
}

function scratch(store: RosterStore, attention: ReadonlySet<string>): string[] {
  // New sessions wait off the list while the order is held (they are counted, not listed),
  // and the rows listed when it was taken stay listed, whatever their status does.
  const members = store.lines.members;
  const v = members
    ? buildView(
        store.sorted.filter((s) => members.has(s.sessionId) && !store.deferred.has(s.sessionId)),
        { ...store.filters, status: 'all', liveOnly: false, showSuperseded: true, query: '' },
        store.collapsed,
        attention,
      )
    : buildView(store.sorted.filter((s) => !store.deferred.has(s.sessionId)), store.filters, store.collapsed, attention);
  return shown(flatten(v.groups, store.collapsed));
}

describe('the roster view kept per event', () => {
  it('equals the view built from scratch after every batch, through filters, collapsing, attention and a held order', () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
    const store = new RosterStore(new MockBackend());
    const start = Array.from({ length: 60 }, (_, i) =>
      session(`s${i}`, { repoRoot: `/r/p${i % 7}`, lastActivityAt: iso(i), status: pick(STATUSES), live: rand() < 0.5, superseded: rand() < 0.1 }),
    );
    store.applySnapshot(snapshot({ sessions: start }));
    let seq = 0;
    let next = 60;
    let clock = 100;
    let attention = new Set<string>();
    const ids = () => store.sorted.map((s) => s.sessionId);

    for (let round = 0; round < 400; round++) {
      const r = rand();
      if (r < 0.05) store.setFilter('status', pick(['all', 'needs_you', ...STATUSES] as const));
      else if (r < 0.08) store.setFilter('liveOnly', rand() < 0.3);
      else if (r < 0.1) store.setFilter('showSuperseded', rand() < 0.5);
      else if (r < 0.12) store.setFilter('query', pick(['', 'p3', 's1', 'goal']));
      else if (r < 0.16) store.toggleGroup(pick(['/r/p0', '/r/p1', '/r/p2', '/r/p5']));
      else if (r < 0.2) store.hold(rand() < 0.6);
      else if (r < 0.22) store.resort();
      else if (r < 0.3) {
        attention = new Set(ids().filter(() => rand() < 0.2));
        store.setAttention([...attention]);
      } else {
        const batch: SeqEvent[] = [];
        for (let k = Math.floor(rand() * 5); k >= 0; k--) {
          const x = rand();
          const known = ids();
          if (x < 0.15 || known.length === 0) {
            batch.push({ type: 'discovered', seq: ++seq, session: session(`s${next++}`, { repoRoot: `/r/p${Math.floor(rand() * 9)}`, lastActivityAt: iso(clock++), status: pick(STATUSES) }) });
          } else if (x < 0.25) {
            batch.push({ type: 'removed', seq: ++seq, sessionId: pick(known) });
          } else {
            const changes: Partial<TrackedSession> = { status: pick(STATUSES), live: rand() < 0.5 };
            if (rand() < 0.5) changes.lastActivityAt = iso(clock++);
            if (rand() < 0.05) changes.superseded = true;
            if (rand() < 0.05) changes.repoRoot = `/r/p${Math.floor(rand() * 9)}`;
            batch.push({ type: 'updated', seq: ++seq, sessionId: pick(known), changes });
          }
        }
        store.receive(batch);
      }
      expect(kept(store), `round ${round}`).toEqual(scratch(store, attention));
      expect(store.view.counts).toEqual(buildView(store.sorted, store.filters, store.collapsed, attention).counts);
      // The options are numbered over all of them, headers are not options.
      const lines = store.lines;
      const places = Array.from({ length: lines.count }, (_, i) => lines.posinset(i)).filter((p) => p > 0);
      expect(places).toEqual(places.map((_, i) => i + 1));
      expect(lines.options).toBe(places.length);
    }
    store.setFilter('status', 'all');
    expect(store.view.order.length).toBeGreaterThan(0);
  });

  it('lays the lines out one height per kind: offsets, the line at a pixel, a measured kind', () => {
    const store = new RosterStore(new MockBackend());
    store.applySnapshot(
      snapshot({
        sessions: [session('a1', { repoRoot: '/r/a', lastActivityAt: iso(9) }), session('a2', { repoRoot: '/r/a', lastActivityAt: iso(8) }), session('b1', { repoRoot: '/r/b', lastActivityAt: iso(7) })],
      }),
    );
    const l = store.lines;
    // [a] a1 a2 [b] b1
    expect([0, 1, 2, 3, 4, 5].map((i) => l.offset(i))).toEqual([0, 30, 88, 146, 176, 234]);
    expect(l.total()).toBe(234);
    expect([0, 29, 30, 87, 88, 145, 146, 175, 176, 500].map((y) => l.indexAt(y))).toEqual([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    expect(l.set(1, 60)).toBe(6);
    expect(l.offset(4)).toBe(30 + 120 + 30);
    expect(l.set(2, 60)).toBe(0);
  });
});

describe('work per batch', () => {
  it('is the same at 200 and at 20,000 sessions: rows touched, comparisons growing as log n, groups passed', async () => {
    // The same stream at both sizes: it touches only sessions both rosters hold.
    const batches = updateBatches(200, 200, 2);
    const perBatch = async (n: number) => {
      const store = await loadedStore(n);
      return batches.map((batch) => {
        const w = { ...store.linesWork };
        store.receive(batch);
        // What a frame reads: the chips' counts, the list's length and its lines in view.
        void store.view.counts.all;
        for (let i = 0; i < Math.min(20, store.lines.count); i++) store.lines.line(i);
        return { rows: store.linesWork.rows - w.rows, compares: store.linesWork.compares - w.compares, groups: store.linesWork.groups - w.groups, n: batch.length };
      });
    };
    const small = await perBatch(200);
    const large = await perBatch(20_000);
    expect(large.map((w) => w.rows)).toEqual(small.map((w) => w.rows));
    expect(large.map((w) => w.groups)).toEqual(small.map((w) => w.groups));
    // Per event: a search to take it out of its group and one to put it back, and one among the 50 groups.
    const bound = (n: number, events: number) => events * (2 * Math.ceil(Math.log2(n / 50 + 1)) + 2 * Math.ceil(Math.log2(51)));
    for (const w of large) expect(w.compares).toBeLessThanOrEqual(bound(20_000, w.n));
    for (const w of small) expect(w.compares).toBeLessThanOrEqual(bound(200, w.n));
  });
});
