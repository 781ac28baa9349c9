import { describe, expect, it } from 'vitest';
import { DEFAULT_FILTERS, applyEvents, buildView, flatten, groupKey, waitingText } from '../src/lib/roster';
import type { TrackedSession } from '../src/lib/types';
import { session } from './helpers';

const at = (m: number) => `2026-11-01T12:${String(m).padStart(2, '0')}:00.000Z`;

describe('applyEvents', () => {
  it('applies discovered, updated and removed in order and skips old seqs', () => {
    const map = new Map<string, TrackedSession>([['a', session('a')]]);
    const before = map.get('a');
    const r = applyEvents(map, 10, [
      { type: 'discovered', session: session('zz'), seq: 9 }, // already in the snapshot
      { type: 'updated', sessionId: 'a', changes: { status: 'working' }, seq: 10 }, // likewise
      { type: 'discovered', session: session('b'), seq: 11 },
      { type: 'updated', sessionId: 'a', changes: { status: 'waiting_for_approval', branch: 'dev' }, seq: 12 },
      { type: 'removed', sessionId: 'b', seq: 13 },
    ]);
    expect(r).toEqual({ seq: 13, changed: true, gap: false });
    expect(map.has('zz')).toBe(false);
    expect(map.has('b')).toBe(false);
    expect(map.get('a')?.status).toBe('waiting_for_approval');
    expect(map.get('a')?.branch).toBe('dev');
    // Replaced, not mutated: views compare sessions by identity.
    expect(map.get('a')).not.toBe(before);
    expect(before?.status).toBe('idle');
  });

  it('reports a hole in the sequence', () => {
    const map = new Map<string, TrackedSession>();
    expect(applyEvents(map, 3, [{ type: 'removed', sessionId: 'x', seq: 5 }]).gap).toBe(true);
  });

  it('ignores updates for unknown sessions', () => {
    const map = new Map<string, TrackedSession>();
    const r = applyEvents(map, 0, [{ type: 'updated', sessionId: 'nope', changes: { status: 'idle' }, seq: 1 }]);
    expect(r.changed).toBe(false);
    expect(map.size).toBe(0);
  });
});

describe('buildView', () => {
  const sorted = [
    session('a1', { repoRoot: '/r/alpha', lastActivityAt: at(50), status: 'working' }),
    session('b1', { repoRoot: null, cwd: '/r/beta', lastActivityAt: at(40), status: 'waiting_for_input', live: false }),
    session('a2', { repoRoot: '/r/alpha', lastActivityAt: at(30), status: 'waiting_for_approval', branch: 'feat/x' }),
    session('c1', { repoRoot: null, cwd: null, projectId: '-p-gamma', lastActivityAt: at(20), status: 'idle' }),
    session('old', { repoRoot: '/r/alpha', lastActivityAt: at(10), superseded: true }),
  ];
  // The engine's attention set for these rows.
  const needs = new Set(['b1', 'a2']);

  it('groups by repoRoot ?? cwd ?? projectId, most recent group first', () => {
    const v = buildView(sorted, DEFAULT_FILTERS, new Set(), needs);
    expect(v.groups.map((g) => [g.key, g.label, g.sessions.map((s) => s.sessionId)])).toEqual([
      ['/r/alpha', 'alpha', ['a1', 'a2']],
      ['/r/beta', 'beta', ['b1']],
      ['-p-gamma', '-p-gamma', ['c1']],
    ]);
    expect(v.groups[0].needsYou).toBe(1);
    expect(groupKey(sorted[3])).toBe('-p-gamma');
  });

  it('hides superseded sessions unless asked', () => {
    expect(buildView(sorted, DEFAULT_FILTERS, new Set(), needs).counts.all).toBe(4);
    const v = buildView(sorted, { ...DEFAULT_FILTERS, showSuperseded: true }, new Set(), needs);
    expect(v.groups[0].sessions.map((s) => s.sessionId)).toEqual(['a1', 'a2', 'old']);
  });

  it('counts statuses before the status filter and applies it after', () => {
    const v = buildView(sorted, { ...DEFAULT_FILTERS, status: 'needs_you' }, new Set(), needs);
    expect(v.counts).toEqual({ all: 4, needs_you: 2, working: 1, waiting_for_approval: 1, waiting_for_input: 1, idle: 1 });
    // Groups follow their most recent visible session: beta (b1 at :40) before alpha (a2 at :30).
    expect(v.order.map((s) => s.sessionId)).toEqual(['b1', 'a2']);
  });

  it('filters by live and by a multi-word query over goal, branch, id, cwd, model', () => {
    expect(buildView(sorted, { ...DEFAULT_FILTERS, liveOnly: true }, new Set(), needs).counts.all).toBe(3);
    const q = (query: string) => buildView(sorted, { ...DEFAULT_FILTERS, query }, new Set(), needs).order.map((s) => s.sessionId);
    expect(q('feat/x')).toEqual(['a2']);
    expect(q('BETA')).toEqual(['b1']);
    expect(q('goal c1')).toEqual(['c1']);
    expect(q('opus a1')).toEqual(['a1']);
    expect(q('no-such-thing')).toEqual([]);
  });

  it('keeps collapsed groups out of the keyboard order and the flat lines', () => {
    const collapsed = new Set(['/r/alpha']);
    const v = buildView(sorted, DEFAULT_FILTERS, collapsed, needs);
    expect(v.order.map((s) => s.sessionId)).toEqual(['b1', 'c1']);
    const lines = flatten(v.groups, collapsed);
    expect(lines.map((l) => (l.type === 'group' ? `[${l.group.label}${l.collapsed ? '+' : ''}]` : l.key))).toEqual([
      '[alpha+]',
      '[beta]',
      'b1',
      '[-p-gamma]',
      'c1',
    ]);
  });

  it('counts "needs you" from the engine\'s attention set, not from statuses', () => {
    // c1 is idle but its supervised process crashed (in the set); a2 waits but was answered.
    const v = buildView(sorted, { ...DEFAULT_FILTERS, status: 'needs_you' }, new Set(), new Set(['c1', 'b1']));
    expect(v.counts.needs_you).toBe(2);
    expect(v.order.map((s) => s.sessionId)).toEqual(['b1', 'c1']);
    expect(v.groups.map((g) => g.needsYou)).toEqual([1, 1]);
  });

  it('groups 2,000 sessions into their 40 projects', () => {
    const many = Array.from({ length: 2000 }, (_, i) =>
      session(`s${i}`, { repoRoot: `/r/p${i % 40}`, lastActivityAt: new Date(Date.UTC(2026, 10, 1) - i * 1000).toISOString() }),
    );
    const v = buildView(many, { ...DEFAULT_FILTERS, query: 'goal' }, new Set(), new Set());
    expect(v.groups).toHaveLength(40);
    expect(v.order).toHaveLength(2000);
    expect(v.groups[0].key).toBe('/r/p0');
  });
});

describe('rosterOrder', () => {
  it('holds the order while the user looks, new sessions on top, and re-sorts on release', async () => {
    const { rosterOrder } = await import('../src/lib/roster');
    const a = session('a', { lastActivityAt: '2026-11-01T12:00:03.000Z' });
    const b = session('b', { lastActivityAt: '2026-11-01T12:00:02.000Z' });
    const held = new Map([
      ['a', 0],
      ['b', 1],
    ]);
    // b becomes the most recent, and c is new: a and b stay put, c comes first.
    const b2 = { ...b, lastActivityAt: '2026-11-01T12:00:09.000Z' };
    const c = session('c', { lastActivityAt: '2026-11-01T12:00:05.000Z' });
    expect(rosterOrder([a, b2, c], held).map((s) => s.sessionId)).toEqual(['c', 'a', 'b']);
    expect(rosterOrder([a, b2, c], null).map((s) => s.sessionId)).toEqual(['b', 'c', 'a']);
  });
});

describe('highlight', () => {
  it('marks every term of the search, case-insensitively', async () => {
    const { highlight } = await import('../src/lib/roster');
    expect(highlight('Fix the Parser now', 'parser fix')).toEqual([
      { text: 'Fix', hit: true },
      { text: ' the ', hit: false },
      { text: 'Parser', hit: true },
      { text: ' now', hit: false },
    ]);
    expect(highlight('abc', '')).toEqual([{ text: 'abc', hit: false }]);
  });
});

describe('waitingText', () => {
  it('says what waits for a held order: new sessions, ones that came into the filter, or both', () => {
    expect(waitingText(1, 1)).toBe('1 new session');
    expect(waitingText(3, 3)).toBe('3 new sessions');
    expect(waitingText(1, 0)).toBe('1 more session in this filter');
    expect(waitingText(3, 1)).toBe('1 new, 2 more in this filter');
  });
});
