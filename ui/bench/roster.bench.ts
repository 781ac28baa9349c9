// The roster under load: 200 updates/s for 10 s (2,000 `updated` events, one batch per 16 ms
// frame; half of them move their row to the top) on 200, 2,000 and 20,000 sessions. Per batch:
// the time to apply it in the store; the time to apply it and read what a frame of the UI
// reads (the chips' counts, totals, per-root counts, the roster's length and the ~20 lines in
// view); the store's work (index: rows, comparisons; view: rows, comparisons, groups passed).
// Then the same with the Roster component mounted: per batch, the store and the DOM update
// (jsdom lays nothing out: a window of rows as at a 600-pixel view, none measured).
// For comparison, "from scratch": what each batch cost before the view was kept per event
// (a sorted copy, buildView and flatten over every session, and the roster's key map).
// Run: npx vitest bench --run bench/roster.bench.ts  (jsdom, as the tests)

import { flushSync, mount, unmount } from 'svelte';
import { bench, describe } from 'vitest';
import Roster from '../src/components/Roster.svelte';
import { buildView, flatten } from '../src/lib/roster';
import { loadedStore, updateBatches } from '../tests/rosterLoad';

const SIZES = [200, 2000, 20_000];
let first = true;

const pct = (xs: number[], p: number) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => x.toFixed(3).padStart(7);
const mean = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1).padStart(5);
const max = (xs: number[]) => String(Math.max(...xs)).padStart(4);

describe('roster: 200 updates/s for 10 s', () => {
  for (const n of SIZES) {
    bench(
      `${n} sessions`,
      async () => {
        const store = await loadedStore(n);
        const batches = updateBatches(n);
        const apply: number[] = [];
        const frame: number[] = [];
        const scratch: number[] = [];
        const w = { rows: [] as number[], compares: [] as number[], vrows: [] as number[], vcompares: [] as number[], groups: [] as number[] };
        for (const batch of batches) {
          const r = store.work.rows;
          const c = store.work.compares;
          const v = { ...store.linesWork };
          const t0 = performance.now();
          store.receive(batch);
          const t1 = performance.now();
          // What the roster, the status bar and the toolbar read each frame.
          void store.view.counts.all;
          void store.totals.sessions;
          void store.size;
          void store.rootCounts.size;
          const lines = store.lines;
          for (let i = 0, end = Math.min(lines.count, 20); i < end; i++) lines.line(i);
          const t2 = performance.now();
          apply.push(t1 - t0);
          frame.push(t2 - t0);
          w.rows.push(store.work.rows - r);
          w.compares.push(store.work.compares - c);
          w.vrows.push(store.linesWork.rows - v.rows);
          w.vcompares.push(store.linesWork.compares - v.compares);
          w.groups.push(store.linesWork.groups - v.groups);
          // The view as it was made per batch before (not part of the figures above).
          const t3 = performance.now();
          const view = buildView(store.sorted, store.filters, store.collapsed, store.attention);
          const flat = flatten(view.groups, store.collapsed);
          new Map(flat.map((l, i) => [l.key, i]));
          scratch.push(performance.now() - t3);
        }
        report(
          `${String(n).padStart(6)} | ${ms(pct(apply, 50))} ${ms(pct(apply, 95))} | ${ms(pct(frame, 50))} ${ms(pct(frame, 95))} | ${ms(pct(scratch, 50))} ${ms(pct(scratch, 95))} |` +
            ` ${mean(w.rows)} ${max(w.rows)} | ${mean(w.compares)} ${max(w.compares)} | ${mean(w.vrows)} ${max(w.vrows)} | ${mean(w.vcompares)} ${max(w.vcompares)} | ${mean(w.groups)} ${max(w.groups)}`,
        );
      },
      { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
    );
  }
});

describe('the Roster component: 200 updates/s for 10 s', () => {
  for (const n of SIZES) {
    bench(
      `${n} sessions, mounted`,
      async () => {
        const store = await loadedStore(n);
        const target = document.createElement('div');
        document.body.append(target);
        const roster = mount(Roster, { target, props: { store, onopen: () => {} } });
        flushSync();
        const took: number[] = [];
        const changes: number[] = [];
        let rows = 0;
        // The DOM's work, counted: nodes added or removed, attributes and text changed.
        const observer = new MutationObserver(() => {});
        observer.observe(target, { subtree: true, childList: true, attributes: true, characterData: true });
        for (const batch of updateBatches(n)) {
          const t0 = performance.now();
          store.receive(batch);
          flushSync();
          took.push(performance.now() - t0);
          changes.push(observer.takeRecords().reduce((a, r) => a + Math.max(1, r.addedNodes.length + r.removedNodes.length), 0));
          rows = Math.max(rows, target.querySelectorAll('[role=option]').length);
        }
        observer.disconnect();
        unmount(roster);
        target.remove();
        console.log(
          `${String(n).padStart(6)} sessions, Roster mounted | batch + DOM update ms p50 ${ms(pct(took, 50))} p95 ${ms(pct(took, 95))} | DOM changes per batch mean ${mean(changes)} max ${max(changes)} | rows in the DOM ${rows}`,
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
    lines.push(`${b.length} batches, ${b.reduce((a, x) => a + x.length, 0)} updates; per batch, ms p50 p95 and work mean max`);
    lines.push('                   store                        |  index           |  view (lines)');
    lines.push('sessions | apply ms        | apply+frame ms  | from scratch ms | rows   | compares   | rows   | compares   | groups');
  }
  lines.push(row);
  console.log(lines.join('\n'));
}
