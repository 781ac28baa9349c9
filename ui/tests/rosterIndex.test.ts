import { describe, expect, it } from 'vitest';
import { byActivityDesc, running } from '../src/lib/roster';
import { RosterIndex } from '../src/lib/rosterIndex';
import type { TrackedSession } from '../src/lib/types';
import { session } from './helpers';
import { loadedStore, updateBatches } from './rosterLoad';

const iso = (m: number) => new Date(Date.UTC(2026, 10, 1) + m * 60_000).toISOString();

describe('RosterIndex', () => {
  it('keeps the order, totals and per-root counts a full recount gives, through random changes', () => {
    let seed = 7;
    const rand = (k: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % k);
    const ix = new RosterIndex();
    ix.setRoots(['/a', '/b/']);
    const ref = new Map<string, TrackedSession>();
    const make = (id: string) =>
      session(id, {
        lastActivityAt: iso(rand(5) === 0 ? 0 : rand(30)),
        createdAt: iso(rand(30)),
        superseded: rand(4) === 0,
        live: rand(2) === 0,
        status: rand(2) === 0 ? 'working' : 'idle',
        transcriptPath: ['/a/x.jsonl', '/b/y.jsonl', '/c/z.jsonl'][rand(3)],
        host: rand(3) === 0 ? 'devbox' : null,
      });
    for (const s of [make('p'), make('q')]) ref.set(s.sessionId, s);
    ix.reset(ref.values());
    for (let step = 0; step < 2000; step++) {
      const id = `s${rand(60)}`;
      if (rand(5) === 0) {
        expect(ix.delete(id)).toBe(ref.delete(id));
      } else {
        const s = make(id);
        ix.set(id, s);
        ref.set(id, s);
      }
      if (step % 50 !== 0) continue;
      const all = [...ref.values()];
      expect(ix.order.map((s) => s.sessionId)).toEqual(all.sort(byActivityDesc).map((s) => s.sessionId));
      expect(ix.current).toBe(all.filter((s) => !s.superseded).length);
      expect(ix.live).toBe(all.filter((s) => !s.superseded && running(s)).length);
      expect(ix.liveByHost.get('devbox') ?? 0).toBe(all.filter((s) => !s.superseded && running(s) && s.host === 'devbox').length);
      expect(ix.rootCounts.get('/a')).toBe(all.filter((s) => s.transcriptPath.startsWith('/a/')).length);
      expect(ix.rootCounts.get('/b/')).toBe(all.filter((s) => s.transcriptPath.startsWith('/b/')).length);
    }
  });

  it('takes a snapshot in the engine\'s order as it is, and sorts one that is not', () => {
    const a = session('a', { lastActivityAt: iso(3) });
    const b = session('b', { lastActivityAt: iso(2) });
    const c = session('c', { lastActivityAt: undefined, createdAt: iso(1) });
    const ix = new RosterIndex();
    ix.reset([a, b, c]);
    expect(ix.order).toEqual([a, b, c]);
    // Out of order anywhere (another machine's rows come after the snapshot's): sorted.
    ix.reset([b, c, a]);
    expect(ix.order).toEqual([a, b, c]);
    ix.reset([a, c, b]);
    expect(ix.order).toEqual([a, b, c]);
  });

  it('replaces a row whose activity did not change in its place, without moving any other', () => {
    const ix = new RosterIndex();
    ix.reset([session('a', { lastActivityAt: iso(3) }), session('b', { lastActivityAt: iso(2) }), session('c', { lastActivityAt: iso(1) })]);
    const before = ix.order.slice();
    const b2 = { ...before[1], status: 'working' as const };
    ix.set('b', b2);
    expect(ix.order).toEqual([before[0], b2, before[2]]);
  });

  it('does the same work per batch at 500 and at 8,000 sessions (rows touched; comparisons grow as log n only)', async () => {
    // The same stream at both sizes: it touches only sessions both rosters hold.
    const batches = updateBatches(500, 200, 2);
    const perBatch = async (n: number) => {
      const store = await loadedStore(n);
      return batches.map((batch) => {
        const rows = store.work.rows;
        const compares = store.work.compares;
        store.receive(batch);
        return { rows: store.work.rows - rows, compares: store.work.compares - compares, n: batch.length };
      });
    };
    const small = await perBatch(500);
    const large = await perBatch(8000);
    expect(large.map((w) => w.rows)).toEqual(small.map((w) => w.rows));
    expect(large.map((w) => w.rows)).toEqual(batches.map((b) => b.length));
    // Per event: at most two binary searches and two root checks per root, with 2 roots.
    const bound = (n: number, events: number) => events * (2 * Math.ceil(Math.log2(n + 1)) + 4);
    for (const w of large) expect(w.compares).toBeLessThanOrEqual(bound(8000, w.n));
    for (const w of small) expect(w.compares).toBeLessThanOrEqual(bound(500, w.n));
  });
});
