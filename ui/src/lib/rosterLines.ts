// What the roster shows — the chips' counts, the groups, and the lines of its virtual list —
// kept in step with the sessions one change at a time. A change costs a binary search in its
// group and O(groups) to re-place that group; only `rebuild` walks every session, and it runs
// when the user changes what is shown (filters, the held order) or a snapshot comes.
// Lines are never materialised: `line(i)` answers from the groups. Heights are one per kind
// (group header, row), measured by the list, so a row moving to the top moves no heights.
// Pure: no runes; the store (store.svelte.ts) signals the changes to the views.

import type { Sizes } from './heights';
import {
  DEFAULT_FILTERS,
  emptyCounts,
  groupKey,
  groupLabel,
  matchesQuery,
  matchesStatus,
  running,
  type Filters,
  type Group,
  type RosterLine,
  type StatusCounts,
} from './roster';
import type { TrackedSession } from './types';

/** The roster's order: a total order on sessions (ties broken by id). */
export type Order = (a: TrackedSession, b: TrackedSession) => number;

/**
 * The held order as a comparison: sessions new since it was taken first (most recent first),
 * then the held ones in their held places (what `heldOrder` lists).
 */
export function heldCompare(held: ReadonlyMap<string, number>, fresh: Order): Order {
  return (a, b) => {
    const ha = held.get(a.sessionId);
    const hb = held.get(b.sessionId);
    if (ha === undefined) return hb === undefined ? fresh(a, b) : -1;
    return hb === undefined ? 1 : ha - hb;
  };
}

export interface LinesWork {
  /** Sessions put in or taken out of the view (a rebuild counts every session). */
  rows: number;
  /** Order comparisons of the binary searches. */
  compares: number;
  /** Groups passed over to re-place a group or to lay the groups out. */
  groups: number;
}

interface LiveGroup extends Group {
  collapsed: boolean;
  /** The group's place in `groups`, valid while the layout is fresh. */
  at: number;
}

export interface Shown {
  filters: Filters;
  collapsed: ReadonlySet<string>;
  attention: ReadonlySet<string>;
  order: Order;
  /** Sessions kept off the list for now (new while the order is held); counted, not listed. */
  deferred?: ReadonlySet<string>;
  /**
   * While the order is held: the sessions listed, whatever their status does meanwhile (set by
   * `freeze`). A row that leaves the status filter stays in its place, one that comes into it
   * waits off the list (`outside`), so no row moves under the pointer or the cursor.
   */
  members?: ReadonlySet<string>;
}

export class RosterLines implements Sizes {
  /** The groups, ordered by their first session (the most recent one first). */
  groups: LiveGroup[] = [];
  /** Sessions passing every filter except the status filter: what the chips count. */
  counts: StatusCounts = emptyCounts();
  readonly work: LinesWork = { rows: 0, compares: 0, groups: 0 };
  /** While frozen: sessions that now pass every filter but were not listed when it froze (not listed). */
  readonly outside = new Set<string>();
  /** A group header's height and a row's, in pixels (estimates until the list measures one). */
  head: number;
  row: number;

  #byKey = new Map<string, LiveGroup>();
  #shown: Shown;
  // Per group, laid out again (O(groups)) after a change: its header's line, the options
  // before it, its top in pixels. Index `groups.length` holds the totals.
  #fresh = false;
  #starts = new Int32Array(1);
  #opts = new Int32Array(1);
  #tops = new Float64Array(1);

  constructor(order: Order, sizes: { head: number; row: number } = { head: 30, row: 58 }) {
    this.#shown = { filters: DEFAULT_FILTERS, collapsed: new Set(), attention: new Set(), order };
    this.head = sizes.head;
    this.row = sizes.row;
  }

  /** Starts over from `sorted`, which must be in `shown.order`. O(n). */
  rebuild(sorted: Iterable<TrackedSession>, shown: Shown): void {
    this.#shown = shown;
    this.groups = [];
    this.#byKey.clear();
    this.counts = emptyCounts();
    // (Not frozen any more: what waited outside the frozen list is listed or filtered now.)
    this.outside.clear();
    for (const s of sorted) {
      this.work.rows++;
      const counted = this.#counted(s);
      if (counted) this.#count(s, 1);
      if (!this.#listed(s, counted)) continue;
      let g = this.#byKey.get(groupKey(s));
      if (!g) {
        g = this.#group(s);
        this.groups.push(g);
      }
      g.sessions.push(s);
      if (shown.attention.has(s.sessionId)) g.needsYou++;
    }
    this.#fresh = false;
  }

  /** One session added (`old` undefined), replaced, or removed (`next` undefined). */
  change(old: TrackedSession | undefined, next: TrackedSession | undefined): void {
    if (old) this.#take(old);
    if (next) this.#put(next);
  }

  /** The attention set changed: only the sessions that came in or left it move. */
  setAttention(next: ReadonlySet<string>, get: (id: string) => TrackedSession | undefined): void {
    const before = this.#shown.attention;
    const moved: TrackedSession[] = [];
    for (const id of before) if (!next.has(id)) push(get(id));
    for (const id of next) if (!before.has(id)) push(get(id));
    for (const s of moved) this.#take(s);
    this.#shown = { ...this.#shown, attention: next };
    for (const s of moved) this.#put(s);
    function push(s: TrackedSession | undefined): void {
      if (s) moved.push(s);
    }
  }

  /**
   * Keeps the sessions listed now listed, and no others, until the next `rebuild`: while the
   * order is held (`Shown.members`). O(n).
   */
  freeze(): void {
    const members = new Set<string>();
    for (const g of this.groups) for (const s of g.sessions) members.add(s.sessionId);
    this.#shown = { ...this.#shown, members };
    this.outside.clear();
  }

  /** The sessions kept listed while frozen (`freeze`), else undefined. */
  get members(): ReadonlySet<string> | undefined {
    return this.#shown.members;
  }

  /** A new order that the lines are already in (the held order, taken from this one). */
  setOrder(order: Order): void {
    this.#shown = { ...this.#shown, order };
  }

  setCollapsed(collapsed: ReadonlySet<string>): void {
    this.#shown = { ...this.#shown, collapsed };
    for (const g of this.groups) g.collapsed = collapsed.has(g.key);
    this.work.groups += this.groups.length;
    this.#fresh = false;
  }

  /** Visible sessions in display order (collapsed groups excluded). O(n): for tests and rare reads. */
  order(): TrackedSession[] {
    const out: TrackedSession[] = [];
    for (const g of this.groups) if (!g.collapsed) out.push(...g.sessions);
    return out;
  }

  // --- the lines ---

  /** How many lines: a header per group, a line per session of an expanded group. */
  get count(): number {
    return this.#layout().starts[this.groups.length];
  }

  /** How many options (rows) there are: the listbox's `aria-setsize`. */
  get options(): number {
    return this.#layout().opts[this.groups.length];
  }

  line(i: number): RosterLine {
    const g = this.groups[this.#groupAt(i)];
    const j = i - this.#starts[g.at];
    if (j === 0) return { type: 'group', key: 'g:' + g.key, group: g, collapsed: g.collapsed };
    const s = g.sessions[j - 1];
    return { type: 'row', key: s.sessionId, session: s };
  }

  /** The header line of the group line `i` is in. */
  groupLine(i: number): number {
    return this.#starts[this.#groupAt(i)];
  }

  /** Line `i`'s 1-based place among the options (`aria-posinset`); 0 on a header. */
  posinset(i: number): number {
    const g = this.#groupAt(i);
    const j = i - this.#starts[g];
    return j === 0 ? 0 : this.#opts[g] + j;
  }

  /** The line showing `s`, or -1 (filtered out, or its group is collapsed). */
  indexOf(s: TrackedSession): number {
    const g = this.#byKey.get(groupKey(s));
    if (!g || g.collapsed) return -1;
    const i = this.#find(g.sessions, s);
    return i < 0 ? -1 : this.#layout().starts[g.at] + 1 + i;
  }

  /** The header line of the group `key` (`groupKey`), or -1. */
  groupIndexOf(key: string): number {
    const g = this.#byKey.get(key);
    return g ? this.#layout().starts[g.at] : -1;
  }

  /** The line of a `RosterLine` key (a header's `g:…`, a row's session id), or -1. */
  indexOfKey(key: string, get: (id: string) => TrackedSession | undefined): number {
    if (key.startsWith('g:') && this.#byKey.has(key.slice(2))) return this.groupIndexOf(key.slice(2));
    const s = get(key);
    return s ? this.indexOf(s) : -1;
  }

  /** `s`'s 0-based place among the options, or -1. */
  optionOf(s: TrackedSession): number {
    const line = this.indexOf(s);
    return line < 0 ? -1 : this.posinset(line) - 1;
  }

  /** The session at 0-based option `p` (in [0, options)). */
  optionAt(p: number): TrackedSession {
    const { opts } = this.#layout();
    // The last group with at most p options before it has rows (collapsed ones add none).
    let lo = 0;
    let hi = this.groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (opts[mid] <= p) lo = mid;
      else hi = mid - 1;
    }
    return this.groups[lo].sessions[p - opts[lo]];
  }

  // --- Sizes, for the virtual list ---

  offset(i: number): number {
    const { starts, tops } = this.#layout();
    if (i >= starts[this.groups.length]) return tops[this.groups.length];
    if (i <= 0) return 0;
    const g = this.#groupAt(i);
    const j = i - starts[g];
    return tops[g] + (j === 0 ? 0 : this.head + (j - 1) * this.row);
  }

  total(): number {
    return this.#layout().tops[this.groups.length];
  }

  indexAt(y: number): number {
    const { starts, tops } = this.#layout();
    const n = this.groups.length;
    if (n === 0 || y <= 0) return 0;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (tops[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    const rows = starts[lo + 1] - starts[lo] - 1;
    const into = y - tops[lo] - this.head;
    const j = into < 0 ? 0 : 1 + Math.min(rows - 1, Math.floor(into / this.row));
    return Math.min(starts[lo] + Math.max(0, j), starts[n] - 1);
  }

  /** A measured line: its kind's height becomes that (every row is as tall as every other). */
  set(i: number, height: number): number {
    if (i < 0 || i >= this.count || height <= 0) return 0;
    const head = this.posinset(i) === 0;
    if (height === (head ? this.head : this.row)) return 0;
    const before = this.total();
    if (head) this.head = height;
    else this.row = height;
    this.#fresh = false;
    return this.total() - before;
  }

  // --- inside ---

  #counted(s: TrackedSession): boolean {
    const f = this.#shown.filters;
    if (s.superseded && !f.showSuperseded) return false;
    if (f.liveOnly && !running(s)) return false;
    return matchesQuery(s, f.query);
  }

  /** Whether `s` has a row (`counted`: whether it passes the filters but the status one). */
  #listed(s: TrackedSession, counted: boolean): boolean {
    if (this.#shown.deferred?.has(s.sessionId)) return false;
    const members = this.#shown.members;
    if (members) return members.has(s.sessionId);
    return counted && matchesStatus(s, this.#shown.filters.status, this.#shown.attention);
  }

  #count(s: TrackedSession, sign: 1 | -1): void {
    this.counts.all += sign;
    this.counts[s.status] += sign;
    if (this.#shown.attention.has(s.sessionId)) this.counts.needs_you += sign;
  }

  #group(s: TrackedSession): LiveGroup {
    const key = groupKey(s);
    const g: LiveGroup = { key, label: groupLabel(s), sessions: [], needsYou: 0, collapsed: this.#shown.collapsed.has(key), at: 0 };
    this.#byKey.set(key, g);
    return g;
  }

  #take(s: TrackedSession): void {
    const counted = this.#counted(s);
    if (counted) {
      this.work.rows++;
      this.#count(s, -1);
    }
    this.outside.delete(s.sessionId);
    if (!this.#listed(s, counted)) return;
    const g = this.#byKey.get(groupKey(s));
    const i = g ? this.#find(g.sessions, s) : -1;
    if (!g || i < 0) return;
    g.sessions.splice(i, 1);
    if (this.#shown.attention.has(s.sessionId)) g.needsYou--;
    this.#fresh = false;
    if (g.sessions.length === 0) {
      this.work.groups += this.groups.length;
      this.groups.splice(this.groups.indexOf(g), 1);
      this.#byKey.delete(g.key);
    } else if (i === 0) this.#place(g);
  }

  #put(s: TrackedSession): void {
    const counted = this.#counted(s);
    if (counted) {
      this.work.rows++;
      this.#count(s, 1);
    }
    if (!this.#listed(s, counted)) {
      // Frozen: one that now passes every filter waits off the list, counted in `outside`
      // (a new session waits as `deferred`).
      const frozen = this.#shown.members && !this.#shown.deferred?.has(s.sessionId);
      if (frozen && counted && matchesStatus(s, this.#shown.filters.status, this.#shown.attention)) this.outside.add(s.sessionId);
      return;
    }
    this.#fresh = false;
    const g = this.#byKey.get(groupKey(s));
    if (!g) {
      const fresh = this.#group(s);
      fresh.sessions.push(s);
      if (this.#shown.attention.has(s.sessionId)) fresh.needsYou++;
      this.groups.splice(this.#groupSearch(s), 0, fresh);
      return;
    }
    const i = this.#search(g.sessions, s);
    g.sessions.splice(i, 0, s);
    if (this.#shown.attention.has(s.sessionId)) g.needsYou++;
    if (i === 0) this.#place(g);
  }

  /** `g`'s first session changed: it moves to where that session puts it. */
  #place(g: LiveGroup): void {
    this.work.groups += this.groups.length;
    this.groups.splice(this.groups.indexOf(g), 1);
    this.groups.splice(this.#groupSearch(g.sessions[0]), 0, g);
  }

  /** Where a group whose first session is `s` goes among the groups. */
  #groupSearch(s: TrackedSession): number {
    let lo = 0;
    let hi = this.groups.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      this.work.compares++;
      if (this.#shown.order(this.groups[mid].sessions[0], s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Where `s` is or would go in `list` (in the order). */
  #search(list: readonly TrackedSession[], s: TrackedSession): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      this.work.compares++;
      if (this.#shown.order(list[mid], s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #find(list: readonly TrackedSession[], s: TrackedSession): number {
    const i = this.#search(list, s);
    return list[i]?.sessionId === s.sessionId ? i : -1;
  }

  /** The group line `i` is in (the last one starting at or before it). */
  #groupAt(i: number): number {
    const { starts } = this.#layout();
    let lo = 0;
    let hi = this.groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #layout(): { starts: Int32Array; opts: Int32Array; tops: Float64Array } {
    if (!this.#fresh) {
      const n = this.groups.length;
      if (this.#starts.length < n + 1) {
        const cap = Math.max(n + 1, this.#starts.length * 2);
        this.#starts = new Int32Array(cap);
        this.#opts = new Int32Array(cap);
        this.#tops = new Float64Array(cap);
      }
      let line = 0;
      let opt = 0;
      let top = 0;
      for (let g = 0; g <= n; g++) {
        this.#starts[g] = line;
        this.#opts[g] = opt;
        this.#tops[g] = top;
        if (g === n) break;
        const grp = this.groups[g];
        grp.at = g;
        const rows = grp.collapsed ? 0 : grp.sessions.length;
        line += 1 + rows;
        opt += rows;
        top += this.head + rows * this.row;
      }
      this.work.groups += n;
      this.#fresh = true;
    }
    return { starts: this.#starts, opts: this.#opts, tops: this.#tops };
  }
}
