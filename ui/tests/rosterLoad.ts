// A roster under load, shared by the work-per-batch test and the benchmark (bench/roster.bench.ts):
// n sessions in 50 projects under two roots, and a stream of `updated` events as the app gets
// them, one batch per 16 ms frame.

import { MockBackend, session, snapshot } from './helpers';
import { RosterStore } from '../src/lib/store.svelte';
import type { SeqEvent, Status, TrackedSession } from '../src/lib/types';

const ROOTS = ['/home/me/.claude', '/home/me/.claude-work'];
const STATUSES: Status[] = ['working', 'idle', 'waiting_for_input', 'waiting_for_approval'];

const iso = (ms: number) => new Date(Date.UTC(2026, 10, 1) + ms).toISOString();

export function sessions(n: number): TrackedSession[] {
  const out: TrackedSession[] = [];
  for (let i = 0; i < n; i++) {
    const id = `s${String(i).padStart(5, '0')}`;
    const cwd = `/home/me/proj${i % 50}`;
    out.push(
      session(id, {
        cwd,
        repoRoot: cwd,
        lastActivityAt: iso(-i * 60_000),
        createdAt: iso(-i * 60_000 - 3_600_000),
        status: STATUSES[i % 4],
        live: i % 3 === 0,
        transcriptPath: `${ROOTS[i % 2]}/projects/${id}.jsonl`,
      }),
    );
  }
  return out;
}

/** A store (applying each batch at once) loaded with `n` sessions. */
export async function loadedStore(n: number): Promise<RosterStore> {
  const b = new MockBackend({
    roster_snapshot: () => snapshot({ seq: 0, sessions: sessions(n), roots: ROOTS.map((path) => ({ path, exists: true, sessionCount: 0 })), demo: false }),
  });
  const store = new RosterStore(b);
  await store.resync();
  return store;
}

/**
 * `rate` updates a second for `seconds`, grouped per 16 ms frame (200/s: 3 or 4 a frame).
 * Half of them are new activity (the row moves to the top), half only a status and usage
 * change. They touch the first `among` sessions, chosen by a fixed pseudo-random sequence.
 */
export function updateBatches(among: number, rate = 200, seconds = 10): SeqEvent[][] {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const frames = Math.round((seconds * 1000) / 16);
  const batches: SeqEvent[][] = [];
  let seq = 0;
  let sent = 0;
  for (let f = 1; f <= frames; f++) {
    const due = Math.round((f * 16 * rate) / 1000);
    const batch: SeqEvent[] = [];
    for (; sent < due; sent++) {
      const id = `s${String(Math.floor(rand() * among)).padStart(5, '0')}`;
      const changes: Partial<TrackedSession> = {
        status: STATUSES[Math.floor(rand() * 4)],
        usage: { inputTokens: sent, outputTokens: 2, cacheCreationInputTokens: 3, cacheReadInputTokens: 4 },
      };
      if (rand() < 0.5) changes.lastActivityAt = iso(f * 16 + sent);
      batch.push({ type: 'updated', sessionId: id, changes, seq: ++seq });
    }
    batches.push(batch);
  }
  return batches;
}
