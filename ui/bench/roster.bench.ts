// The roster under load: 200 updates/s for 10 s (2,000 `updated` events, one batch per 16 ms
// frame) on 500, 2,000 and 8,000 sessions. Per batch: the time to apply it in the store, the
// time to re-derive what a frame of the UI reads (sorted, view, lines, totals, per-root
// counts), and the store's work (rows touched, comparisons).
// Run: npx vitest bench --run bench/roster.bench.ts  (jsdom, as the tests)

import { bench, describe } from 'vitest';
import { loadedStore, updateBatches } from '../tests/rosterLoad';

const SIZES = [500, 2000, 8000];
let first = true;

const pct = (xs: number[], p: number) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => x.toFixed(3).padStart(8);

describe('roster: 200 updates/s for 10 s', () => {
  for (const n of SIZES) {
    bench(
      `${n} sessions`,
      async () => {
        const store = await loadedStore(n);
        const batches = updateBatches(n);
        const apply: number[] = [];
        const frame: number[] = [];
        const touched: number[] = [];
        const compared: number[] = [];
        for (const batch of batches) {
          const r = store.work.rows;
          const c = store.work.compares;
          const t0 = performance.now();
          store.receive(batch);
          const t1 = performance.now();
          // What the roster, the status bar and the toolbar read each frame.
          void store.sorted.length;
          void store.view.counts.all;
          void store.lines.length;
          void store.totals.sessions;
          void store.rootCounts.size;
          const t2 = performance.now();
          apply.push(t1 - t0);
          frame.push(t2 - t0);
          touched.push(store.work.rows - r);
          compared.push(store.work.compares - c);
        }
        const mean = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1).padStart(6);
        report(
          `${String(n).padStart(6)} | ${ms(pct(apply, 50))} ${ms(pct(apply, 95))} | ${ms(pct(frame, 50))} ${ms(pct(frame, 95))} | ${mean(touched)} ${String(Math.max(...touched)).padStart(4)} | ${mean(compared)} ${String(Math.max(...compared)).padStart(4)}`,
        );
      },
      { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
    );
  }
});

function report(row: string): void {
  const lines: string[] = [];
  if (first) {
    first = false;
    const b = updateBatches(1);
    lines.push(`${b.length} batches, ${b.reduce((a, x) => a + x.length, 0)} updates`);
    lines.push('sessions | apply ms p50      p95 | apply+views ms p50  p95 | rows/batch mean max | compares/batch mean max');
  }
  lines.push(row);
  console.log(lines.join('\n'));
}
