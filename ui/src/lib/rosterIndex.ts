// The roster's sessions kept in order, with their totals and per-root counts, as events come.
// An event costs O(log n) comparisons and O(roots) prefix checks, never a pass over every
// session: a batch of k events does the same work at 500 sessions as at 8,000. Full passes
// happen only on a snapshot (`reset`) or when the watched roots change (`setRoots`).
// Pure: no runes; the store (store.svelte.ts) signals the changes to the views.

import { activityKey, byActivityDesc, running, type SessionTable } from './roster';
import type { TrackedSession } from './types';

/** Work counted since the index was made (diff two readings for one batch). */
export interface IndexWork {
  /** Rows put, replaced or removed. */
  rows: number;
  /** Comparisons: order comparisons of the binary searches, plus root-prefix checks. */
  compares: number;
}

export class RosterIndex implements SessionTable {
  readonly sessions = new Map<string, TrackedSession>();
  /** Every session, most recent first (`byActivityDesc`, a total order: ids break ties). */
  order: TrackedSession[] = [];
  /** Sessions not superseded. */
  current = 0;
  /** Sessions not superseded that are running (`running`). */
  live = 0;
  /** Of those, the ones of each other machine (`host`): a machine that is away shows its rows'
   * last state, which is not running now. */
  readonly liveByHost = new Map<string, number>();
  readonly rootCounts = new Map<string, number>();
  readonly work: IndexWork = { rows: 0, compares: 0 };
  #roots: { path: string; prefix: string }[] = [];

  /** Starts over from a snapshot: one sort, one count. */
  reset(sessions: Iterable<TrackedSession>): void {
    this.sessions.clear();
    for (const s of sessions) this.sessions.set(s.sessionId, s);
    this.order = inOrder([...this.sessions.values()]);
    this.#recount();
  }

  /** The watched roots (`RootInfo.path`); recounts everything, so only when they change. */
  setRoots(paths: readonly string[]): void {
    const same = paths.length === this.#roots.length && paths.every((p, i) => p === this.#roots[i].path);
    if (same) return;
    this.#roots = paths.map((path) => ({ path, prefix: path.replace(/\/+$/, '') + '/' }));
    this.#recount();
  }

  get(id: string): TrackedSession | undefined {
    return this.sessions.get(id);
  }

  /** Adds or replaces a session: its row keeps its place unless its activity key changed. */
  set(id: string, s: TrackedSession): this {
    this.work.rows++;
    const old = this.sessions.get(id);
    this.sessions.set(id, s);
    if (old) {
      this.#count(old, -1);
      const i = this.#find(old);
      if (activityKey(old) === activityKey(s) && old.sessionId === s.sessionId) this.order[i] = s;
      else {
        this.order.splice(i, 1);
        this.#insert(s);
      }
    } else this.#insert(s);
    this.#count(s, 1);
    return this;
  }

  delete(id: string): boolean {
    const old = this.sessions.get(id);
    if (!old) return false;
    this.work.rows++;
    this.sessions.delete(id);
    this.#count(old, -1);
    this.order.splice(this.#find(old), 1);
    return true;
  }

  /** Where `s` is (or would go) in the order: a binary search. */
  #search(s: TrackedSession): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      this.work.compares++;
      const c = byActivityDesc(this.order[mid], s);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #find(s: TrackedSession): number {
    const i = this.#search(s);
    if (this.order[i] === s) return i;
    // Unreachable while every change goes through `set`/`delete`; kept correct if not.
    this.work.compares += this.order.length;
    return this.order.findIndex((x) => x.sessionId === s.sessionId);
  }

  #insert(s: TrackedSession): void {
    this.order.splice(this.#search(s), 0, s);
  }

  #count(s: TrackedSession, sign: 1 | -1): void {
    if (!s.superseded) {
      this.current += sign;
      if (running(s)) {
        this.live += sign;
        if (s.host) this.liveByHost.set(s.host, (this.liveByHost.get(s.host) ?? 0) + sign);
      }
    }
    for (const r of this.#roots) {
      this.work.compares++;
      if (s.transcriptPath.startsWith(r.prefix)) this.rootCounts.set(r.path, (this.rootCounts.get(r.path) ?? 0) + sign);
    }
  }

  #recount(): void {
    this.current = 0;
    this.live = 0;
    this.liveByHost.clear();
    this.rootCounts.clear();
    for (const r of this.#roots) this.rootCounts.set(r.path, 0);
    for (const s of this.sessions.values()) this.#count(s, 1);
  }
}

/**
 * `all` most recent first: the engine sends its rows in that order already, which one pass
 * confirms (2,000 comparisons, not the sort's 22,000 in a launch's cold code); sorted if not.
 */
function inOrder(all: TrackedSession[]): TrackedSession[] {
  for (let i = 1; i < all.length; i++) if (byActivityDesc(all[i - 1], all[i]) > 0) return all.sort(byActivityDesc);
  return all;
}
