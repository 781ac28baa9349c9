import { describe, expect, it, vi } from 'vitest';
import {
  basename,
  formatDuration,
  formatTokens,
  relativeTime,
  relativeTimeChangesAt,
  shortModel,
  toolTarget,
  formatUsd,
  costLabel,
  costSentence,
  totalTokens,
  turnDurationText,
  usageBreakdown,
} from '../src/lib/format';

describe('formatTokens', () => {
  it.each([
    [0, '0'],
    [950, '950'],
    [1000, '1k'],
    [1234, '1.2k'],
    [12_345, '12k'],
    [120_400, '120k'],
    [999_950, '1M'],
    [1_234_567, '1.2M'],
    [12_345_678, '12M'],
    [2_500_000_000, '2.5B'],
  ])('%d → %s', (n, s) => expect(formatTokens(n)).toBe(s));
});

it('totals and breaks down usage', () => {
  const u = { inputTokens: 1000, outputTokens: 2000, cacheCreationInputTokens: 300_000, cacheReadInputTokens: 1_000_000 };
  expect(totalTokens(u)).toBe(1_303_000);
  expect(usageBreakdown(u)).toContain('Cache read 1,000,000');
  expect(usageBreakdown(u)).toContain('Total 1,303,000');
});

describe('relativeTime', () => {
  const now = Date.parse('2026-11-01T12:00:00.000Z');
  const ago = (ms: number) => new Date(now - ms).toISOString();
  it.each([
    [1000, 'just now'],
    [12_000, 'just now'],
    [59_999, 'just now'],
    [60_000, '1 min ago'],
    [3 * 60_000 + 5000, '3 min ago'],
    [2 * 3600_000, '2 h ago'],
    [4 * 86400_000, '4 d ago'],
    [29 * 86400_000, '29 d ago'],
    // 30 days: a month, never "0 mo ago".
    [30 * 86400_000, '1 mo ago'],
    [90 * 86400_000, '2 mo ago'],
    [800 * 86400_000, '2 y ago'],
  ])('%d ms ago → %s', (ms, s) => expect(relativeTime(ago(ms), now)).toBe(s));
  it('says when its text next changes: the same text until then, another one from then on', () => {
    // A fixed pseudo-random walk over ages from 0 to 3 years, and a few times in the future.
    let seed = 7;
    const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 3000; i++) {
      const age = i % 10 === 0 ? -rand() * 10_000 : Math.floor(rand() ** 4 * 3 * 365 * 86_400_000);
      const iso = ago(age);
      const at = relativeTimeChangesAt(iso, now) ?? NaN;
      expect(at).toBeGreaterThan(now);
      expect(relativeTime(iso, at - 1)).toBe(relativeTime(iso, now));
      expect(relativeTime(iso, at)).not.toBe(relativeTime(iso, now));
    }
    expect(relativeTimeChangesAt(null, now)).toBeNull();
    expect(relativeTimeChangesAt('not a date', now)).toBeNull();
  });
  it('handles null and garbage', () => {
    expect(relativeTime(null, now)).toBe('—');
    expect(relativeTime('not a date', now)).toBe('—');
  });
  it('never says "in the future" for a clock skew', () => {
    expect(relativeTime(new Date(now + 5000).toISOString(), now)).toBe('just now');
  });
});

it('formats durations', () => {
  expect(formatDuration(450)).toBe('450 ms');
  expect(formatDuration(12_000)).toBe('12 s');
  expect(formatDuration(65_000)).toBe('1 min 5 s');
  expect(formatDuration(120_000)).toBe('2 min');
  expect(formatDuration(3_780_000)).toBe('1 h 3 min');
  expect(turnDurationText('12000')).toBe('Turn took 12 s');
  expect(turnDurationText('12 s')).toBe('Turn took 12 s');
});

describe('shortModel', () => {
  it.each([
    ['claude-opus-4-8', 'opus 4.8'],
    ['claude-sonnet-4-5-20250929', 'sonnet 4.5'],
    ['claude-3-5-haiku-20241022', 'haiku 3.5'],
    ['claude-haiku-4-5-20251001', 'haiku 4.5'],
    ['claude-opus-4-8[1m]', 'opus 4.8'],
    ['gpt-5', 'gpt-5'],
    [null, ''],
  ])('%s → %s', (m, s) => expect(shortModel(m)).toBe(s));
});

it('takes the last path component', () => {
  expect(basename('/home/me/proj')).toBe('proj');
  expect(basename('/home/me/proj/')).toBe('proj');
  expect(basename('C:\\src\\app')).toBe('app');
  expect(basename('-home-me-proj')).toBe('-home-me-proj');
});

describe('cost', () => {
  it('formats dollars and says what the estimate leaves out', () => {
    expect(formatUsd(0.0176)).toBe('$0.0176');
    expect(formatUsd(1.234)).toBe('$1.23');
    // A row says which figure it shows: the billed one, or our estimate.
    expect(costLabel({ billed: { costUsd: 1.234 }, estimatedUsd: 1.1 } as never)).toBe('$1.23 billed');
    expect(costLabel({ billed: null, estimatedUsd: 1.1 } as never)).toBe('≈ $1.10 est.');
    expect(costSentence({ estimatedUsd: 0.5, unknownModels: ['claude-x'], pricesAsOf: '2026-11-20', billed: null })).toBe(
      'about $0.50 at the prices of 2026-11-20; no price known for claude-x',
    );
  });
});

describe('toolTarget', () => {
  it('reads AskUserQuestion and ExitPlanMode like the engine', () => {
    expect(toolTarget({ questions: [{ question: 'Which colour?', options: [] }, { question: 'Later' }] })).toBe('Which colour?');
    expect(toolTarget({ plan: '\n## Fix the parser\n\n1. Read it' })).toBe('Fix the parser');
    expect(toolTarget({ plan: 'x', description: 'y' })).toBe('x');
  });
  it('prefers file_path, then command, pattern, url', () => {
    expect(toolTarget({ command: 'cargo test', description: 'run' })).toBe('cargo test');
    expect(toolTarget({ file_path: '/a/b.rs', old_string: 'x' })).toBe('/a/b.rs');
    expect(toolTarget({ pattern: 'fn main', path: 'src' })).toBe('fn main');
    expect(toolTarget({ url: 'https://x.y', prompt: 'p' })).toBe('https://x.y');
  });
  it('falls back to the first string and keeps one line', () => {
    expect(toolTarget({ n: 3, thing: 'a\n  b' })).toBe('a b');
    expect(toolTarget({ todos: [] })).toBe('');
    expect(toolTarget(null)).toBe('');
  });
});

describe('countOf and indexingText', () => {
  it('says one in the singular and reads the index in words', async () => {
    const { countOf, indexingText } = await import('../src/lib/format');
    expect(countOf(1, 'session')).toBe('1 session');
    expect(countOf(1240, 'session')).toBe('1,240 sessions');
    expect(indexingText({ indexing: true, done: 0, total: 0 })).toBe('Looking for sessions…');
    expect(indexingText({ indexing: true, done: 1240, total: 2000 })).toBe('Reading 1,240 of 2,000 sessions…');
    expect(indexingText({ indexing: false, done: 2000, total: 2000 })).toBeNull();
  });
});

it('writes a moment one way everywhere: the time today, the day and time on another day', async () => {
  const { formatMoment } = await import('../src/lib/format');
  const now = new Date(2026, 10, 24, 18, 0, 0).getTime();
  expect(formatMoment(new Date(2026, 10, 24, 9, 5, 7).toISOString(), now)).toBe('09:05:07');
  expect(formatMoment(new Date(2026, 9, 3, 9, 5, 7).toISOString(), now)).toBe('3 Oct 2026, 09:05');
  expect(formatMoment(null, now)).toBe('—');
});

describe('newDay', () => {
  it('marks the first item and the first item of a new day, not one of the same day', async () => {
    const { newDay } = await import('../src/lib/format');
    const at = (iso: string) => ({ timestamp: iso });
    expect(newDay(undefined, at('2026-11-24T10:00:00'))).toBe('Tuesday, 24 November 2026');
    expect(newDay(undefined, { timestamp: null })).toBeNull();
    expect(newDay(at('2026-11-24T10:00:00'), at('2026-11-24T23:00:00'))).toBeNull();
    expect(newDay(at('2026-11-24T23:00:00'), at('2026-11-25T09:00:00'))).toBe('Wednesday, 25 November 2026');
    expect(newDay(at('2026-11-24T23:00:00'), { timestamp: null })).toBeNull();
  });
});

it('a session is named one way everywhere it is named, and headed one way in its row and header', async () => {
  const { sessionHeading, sessionLabel } = await import('../src/lib/format');
  const base = { sessionId: '1fd6d37e-900c-4885-9ddd-fa9b316768c3', title: null, goal: null, cwd: null };
  expect(sessionLabel({ ...base, title: 'T', goal: 'G' })).toBe('T');
  expect(sessionLabel({ ...base, goal: 'G' })).toBe('G');
  expect(sessionLabel({ ...base, name: 'proj-73' })).toBe('proj-73');
  expect(sessionLabel({ ...base, cwd: '/w/p' })).toBe('Session in /w/p');
  expect(sessionLabel(base)).toBe('1fd6d37e');
  expect(sessionLabel(undefined, 'abcdef0123')).toBe('abcdef01');
  expect(sessionHeading({ title: null, goal: null })).toBe('(no prompt yet)');
});

it('a search hit names its session without its folder, which the hit shows beside it', async () => {
  const { hitLabel } = await import('../src/lib/format');
  const base = { title: null, goal: null, cwd: '/home/me/src/project-052' };
  expect(hitLabel({ ...base, title: 'T', goal: 'G' })).toBe('T');
  expect(hitLabel({ ...base, goal: 'G' })).toBe('G');
  expect(hitLabel({ ...base, name: 'proj-73' })).toBe('proj-73');
  // (`sessionLabel` says "Session in /home/me/src/project-052": the folder twice in a hit.)
  expect(hitLabel(base)).toBeNull();
  expect(hitLabel(undefined)).toBeNull();
});

describe('locale formatting', () => {
  // `toLocaleString` and `toLocaleDateString` with a locale make a new ICU formatter at every
  // call, about 0.4 MB of the window's memory each that stays after it (one per roster row).
  it('uses formatters made once, never one per call', async () => {
    const { formatMoment, newDay, countOf, formatInt, indexingText } = await import('../src/lib/format');
    const { formatDollars } = await import('../src/lib/spend');
    const { dollars } = await import('../src/lib/budget');
    const date = vi.spyOn(Date.prototype, 'toLocaleDateString');
    const dateTime = vi.spyOn(Date.prototype, 'toLocaleString');
    const num = vi.spyOn(Number.prototype, 'toLocaleString');
    try {
      expect(formatMoment('2026-01-02T03:04:05Z', Date.parse('2026-03-01T00:00:00Z'))).toMatch(/^2 Jan 2026, \d\d:\d\d$/);
      expect(newDay(undefined, { timestamp: '2026-11-24T12:00:00Z' })).toBe('Tuesday, 24 November 2026');
      expect(countOf(1240, 'session')).toBe('1,240 sessions');
      // Whole numbers are grouped without ICU, as en-US groups them; the rest through it (a
      // formatter made once, never `toLocaleString`).
      const en = new Intl.NumberFormat('en-US');
      for (const n of [0, 7, 999, 1000, 12_345, 999_999, 1_234_567, -1234, -999, Number.MAX_SAFE_INTEGER, 1234.5, 1e21]) expect(formatInt(n)).toBe(en.format(n));
      expect(indexingText({ indexing: true, done: 1500, total: 2000 })).toBe('Reading 1,500 of 2,000 sessions…');
      expect(formatDollars(1234.5)).toBe('$1,234.50');
      expect(dollars(4)).toBe('$4.00');
      expect(date).not.toHaveBeenCalled();
      expect(dateTime).not.toHaveBeenCalled();
      expect(num).not.toHaveBeenCalled();
    } finally {
      date.mockRestore();
      dateTime.mockRestore();
      num.mockRestore();
    }
  });
});
