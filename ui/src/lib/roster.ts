// Pure roster logic: applying engine events to a session map, filtering, grouping.
// The reactive store (store.svelte.ts) wraps these; keeping them pure keeps them testable
// and keeps every per-event step O(batch) and every derivation O(n log n) at most.

import { basename } from './format';
import type { SeqEvent, Status, TrackedSession } from './types';

/**
 * Running now: a process of Claude Code owns the session (the engine's `live`: its registry,
 * or a supervised process), or its transcript shows a turn at work (the writer of a working
 * transcript is running, whether or not it registers; the demo's sessions do not).
 */
export function running(s: TrackedSession): boolean {
  return s.live || (s.status === 'working' && !s.superseded);
}

export type StatusFilter = 'all' | 'needs_you' | Status;

export interface Filters {
  query: string;
  status: StatusFilter;
  liveOnly: boolean;
  showSuperseded: boolean;
}

export const DEFAULT_FILTERS: Filters = { query: '', status: 'all', liveOnly: false, showSuperseded: false };

/** What `applyEvents` writes through: a session map, or the incremental index (rosterIndex.ts). */
export interface SessionTable {
  get(id: string): TrackedSession | undefined;
  set(id: string, s: TrackedSession): unknown;
  delete(id: string): boolean;
}

/**
 * Applies a batch of events in order. Events with `seq <= lastSeq` were already part of the
 * snapshot (or an earlier batch) and are skipped. Returns the new last seq and whether
 * anything changed. Sessions are replaced, never mutated, so views can compare by identity.
 */
export function applyEvents(
  sessions: SessionTable,
  lastSeq: number,
  events: readonly SeqEvent[],
): { seq: number; changed: boolean; gap: boolean } {
  let seq = lastSeq;
  let changed = false;
  let gap = false;
  for (const ev of events) {
    if (ev.seq <= seq) continue;
    if (ev.seq !== seq + 1) gap = true;
    seq = ev.seq;
    switch (ev.type) {
      case 'discovered':
        sessions.set(ev.session.sessionId, ev.session);
        changed = true;
        break;
      case 'updated': {
        const old = sessions.get(ev.sessionId);
        if (old) {
          sessions.set(ev.sessionId, { ...old, ...ev.changes, sessionId: old.sessionId });
          changed = true;
        }
        break;
      }
      case 'removed':
        changed = sessions.delete(ev.sessionId) || changed;
        break;
    }
  }
  return { seq, changed, gap };
}

/** The project a row belongs to; behind its machine's name for another machine's (`devbox:/srv/api`). */
export function groupKey(s: TrackedSession): string {
  const project = s.repoRoot ?? s.cwd ?? s.projectId;
  return s.host ? `${s.host}:${project}` : project;
}

/** A group's label: the project's folder name, after its machine's for another machine's. */
export function groupLabel(s: TrackedSession): string {
  const name = basename(s.repoRoot ?? s.cwd ?? s.projectId);
  return s.host ? `${s.host} · ${name}` : name;
}

export function activityKey(s: TrackedSession): string {
  return s.lastActivityAt ?? s.createdAt ?? '';
}

/** Most recent first. ISO-8601 UTC strings of one format sort as text. */
export function byActivityDesc(a: TrackedSession, b: TrackedSession): number {
  const ka = activityKey(a);
  const kb = activityKey(b);
  if (ka !== kb) return ka < kb ? 1 : -1;
  return a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0;
}

/**
 * The roster's order: most recent first, or — while the user holds it (the pointer is over
 * the roster) — the order it had then, with sessions new since on top. Rows and groups do
 * not jump under the pointer.
 */
export function rosterOrder(sessions: Iterable<TrackedSession>, held: ReadonlyMap<string, number> | null): TrackedSession[] {
  const all = [...sessions];
  if (!held) return all.sort(byActivityDesc);
  const known = all.filter((s) => held.has(s.sessionId)).sort((a, b) => (held.get(a.sessionId) ?? 0) - (held.get(b.sessionId) ?? 0));
  const fresh = all.filter((s) => !held.has(s.sessionId)).sort(byActivityDesc);
  return [...fresh, ...known];
}

/**
 * `rosterOrder` for an order kept incrementally (`byActivityDesc`) and a held order whose
 * keys are in their held positions (as `RosterStore.hold` builds it): two O(n) walks, no sort.
 */
export function heldOrder(
  order: readonly TrackedSession[],
  sessions: ReadonlyMap<string, TrackedSession>,
  held: ReadonlyMap<string, number>,
): TrackedSession[] {
  const out = order.filter((s) => !held.has(s.sessionId));
  for (const id of held.keys()) {
    const s = sessions.get(id);
    if (s) out.push(s);
  }
  return out;
}

const haystacks = new WeakMap<TrackedSession, string>();
function haystack(s: TrackedSession): string {
  let h = haystacks.get(s);
  if (h === undefined) {
    h = [s.goal, s.title, s.cwd, s.branch, s.sessionId, s.model, s.workChainName, s.repoRoot]
      .filter((x): x is string => !!x)
      .join('\n')
      .toLowerCase();
    haystacks.set(s, h);
  }
  return h;
}

export function matchesQuery(s: TrackedSession, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  const h = haystack(s);
  return q.split(/\s+/).every((term) => h.includes(term));
}

/** `text` split around the search's terms (case-insensitive), for highlighting. */
export function highlight(text: string, query: string): { text: string; hit: boolean }[] {
  const terms = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (!terms.length || !text) return [{ text, hit: false }];
  const lower = text.toLowerCase();
  const hit = new Array<boolean>(text.length).fill(false);
  for (const t of terms) {
    for (let i = lower.indexOf(t); i >= 0; i = lower.indexOf(t, i + 1)) hit.fill(true, i, i + t.length);
  }
  const out: { text: string; hit: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const last = out[out.length - 1];
    if (last && last.hit === hit[i]) last.text += text[i];
    else out.push({ text: text[i], hit: hit[i] });
  }
  return out;
}

/** `attention`: the engine's attention set (session ids), the one meaning of "needs you". */
export function matchesStatus(s: TrackedSession, f: StatusFilter, attention: ReadonlySet<string>): boolean {
  if (f === 'all') return true;
  if (f === 'needs_you') return attention.has(s.sessionId);
  return s.status === f;
}

export type StatusCounts = Record<StatusFilter, number>;

export function emptyCounts(): StatusCounts {
  return { all: 0, needs_you: 0, working: 0, waiting_for_approval: 0, waiting_for_input: 0, idle: 0 };
}

export interface Group {
  key: string;
  label: string;
  sessions: TrackedSession[];
  needsYou: number;
}

export interface RosterView {
  /** Sessions passing every filter except the status filter: what the chips count. */
  counts: StatusCounts;
  groups: Group[];
  /** Visible sessions in display order (collapsed groups excluded): keyboard navigation walks this. */
  order: TrackedSession[];
}

/**
 * Filters, counts and groups `sorted` (already most-recent-first). Groups come out ordered
 * by their most recent session because the input is. O(n): the view from scratch, which the
 * app keeps per event instead (rosterLines.ts); the reference that is tested against.
 */
export function buildView(
  sorted: readonly TrackedSession[],
  f: Filters,
  collapsed: ReadonlySet<string>,
  attention: ReadonlySet<string>,
): RosterView {
  const counts = emptyCounts();
  const groups = new Map<string, Group>();
  for (const s of sorted) {
    if (s.superseded && !f.showSuperseded) continue;
    if (f.liveOnly && !running(s)) continue;
    if (!matchesQuery(s, f.query)) continue;
    counts.all++;
    counts[s.status]++;
    const needs = attention.has(s.sessionId);
    if (needs) counts.needs_you++;
    if (!matchesStatus(s, f.status, attention)) continue;
    const key = groupKey(s);
    let g = groups.get(key);
    if (!g) {
      g = { key, label: groupLabel(s), sessions: [], needsYou: 0 };
      groups.set(key, g);
    }
    g.sessions.push(s);
    if (needs) g.needsYou++;
  }
  const list = [...groups.values()];
  const order: TrackedSession[] = [];
  for (const g of list) if (!collapsed.has(g.key)) order.push(...g.sessions);
  return { counts, groups: list, order };
}

/** One line of the (virtualised) roster list. */
export type RosterLine =
  | { type: 'group'; key: string; group: Group; collapsed: boolean }
  | { type: 'row'; key: string; session: TrackedSession };

export function flatten(groups: readonly Group[], collapsed: ReadonlySet<string>): RosterLine[] {
  const lines: RosterLine[] = [];
  for (const g of groups) {
    const isCollapsed = collapsed.has(g.key);
    lines.push({ type: 'group', key: 'g:' + g.key, group: g, collapsed: isCollapsed });
    if (isCollapsed) continue;
    for (const s of g.sessions) lines.push({ type: 'row', key: s.sessionId, session: s });
  }
  return lines;
}

/**
 * Where a selection on `id` should be: `id` itself, or, when that session was superseded,
 * the head of its chain (following `supersededBy` links; cycles and unknown ids stop the walk).
 */
export function chainHead(sessions: ReadonlyMap<string, TrackedSession>, id: string): string {
  let cur = id;
  const seen = new Set<string>([cur]);
  for (;;) {
    const s = sessions.get(cur);
    const next = s?.superseded ? s.supersededBy : null;
    if (!next || seen.has(next)) return cur;
    seen.add(next);
    cur = next;
    if (!sessions.has(cur)) return cur;
  }
}

/** The sessions an `updated` batch marked as superseded. */
export function newlySuperseded(events: readonly SeqEvent[]): Set<string> {
  const out = new Set<string>();
  for (const ev of events) if (ev.type === 'updated' && (ev.changes.superseded === true || !!ev.changes.supersededBy)) out.add(ev.sessionId);
  return out;
}

/**
 * What waits for a held order to be applied, in words: `all` sessions, `fresh` of them new
 * (the others came into the status filter while the order was held).
 */
export function waitingText(all: number, fresh: number): string {
  const changed = all - fresh;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (changed <= 0) return plural(fresh, 'new session');
  if (fresh <= 0) return `${plural(changed, 'more session')} in this filter`;
  return `${fresh} new, ${changed} more in this filter`;
}
