// Pure formatting helpers: numbers, times, names. No DOM, no state.

import { TOOL_TARGET_KEYS } from './generated/engine';
import type { Cost, Status, TrackedSession, Usage } from './types';

export function totalTokens(u: Usage): number {
  return u.inputTokens + u.outputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
}

/** 950, 1.2k, 12k, 120k, 1.2M, 12M, 1.2B — one decimal only while it adds information. */
export function formatTokens(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '0';
  if (n < 1000) return String(Math.round(n));
  const units: [number, string][] = [
    [1e3, 'k'],
    [1e6, 'M'],
    [1e9, 'B'],
  ];
  let u = n >= 1e9 ? 2 : n >= 1e6 ? 1 : 0;
  // 999_950 would print as "1000k": say "1M".
  if (n / units[u][0] >= 999.5 && u < 2) u++;
  const v = n / units[u][0];
  return (v < 10 ? v.toFixed(1).replace(/\.0$/, '') : String(Math.round(v))) + units[u][1];
}

// Formatters made once: `toLocaleString` and `toLocaleDateString` with a locale make a new one
// at every call, and each costs the page about 0.4 MB that stays after it (ICU's tables,
// measured per roster row: the window's web process, 2,000 sessions). And each is made at its
// first use, not when the page's code loads: WebKit's first formatter loads ICU, 6–17 ms of
// a launch (issue 37 §5), and the first screen needs none.
function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}
const grouped = once(() => new Intl.NumberFormat('en-US'));
const shortMonth = once(() => new Intl.DateTimeFormat('en-GB', { month: 'short' }));
const longDay = once(() => new Intl.DateTimeFormat('en-GB', { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' }));
const twoDecimals = once(() => new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }));
/** `$1,234.56`'s number: two decimals, grouped. */
export const cents = { format: (n: number): string => twoDecimals().format(n) };
/** 1,234,567: grouped as en-US groups it (a whole number's groups are written here, without ICU). */
export function formatInt(n: number): string {
  if (!Number.isSafeInteger(n)) return grouped().format(n);
  return String(n).replace(/\B(?=(\d{3})+$)/g, ',');
}

export function usageBreakdown(u: Usage): string {
  return [
    `Input ${formatInt(u.inputTokens)}`,
    `Output ${formatInt(u.outputTokens)}`,
    `Cache write ${formatInt(u.cacheCreationInputTokens)}`,
    `Cache read ${formatInt(u.cacheReadInputTokens)}`,
    `Total ${formatInt(totalTokens(u))}`,
  ].join('\n');
}

export function parseTime(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** "just now" (under a minute), "3 min ago", "2 h ago", "4 d ago", "2 mo ago", "1 y ago". */
export function relativeTime(iso: string | null, now: number): string {
  const t = parseTime(iso);
  if (t === null) return '—';
  const s = Math.max(0, Math.floor((now - t) / 1000));
  // No seconds: a count of them would redraw the page every second for a minute after any
  // activity (a session that just asked for approval cost the window 1.4 % of a core).
  if (s < 60) return 'just now';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.floor(h / 24);
  if (d < 30) return `${d} d ago`;
  // One style all the way: months, then years (the exact date is in the title).
  // (At least one: 30 days are "1 mo ago", never "0 mo ago".)
  const mo = Math.max(1, Math.floor(d / 30.44));
  if (mo < 12) return `${mo} mo ago`;
  return `${Math.floor(d / 365.25)} y ago`;
}

const SECOND = 1000;
const DAY = 86_400_000;

/**
 * When `relativeTime(iso, now)` next says something else: the first millisecond after `now`
 * at which its text changes (null for no time). Each unit's label changes when its count
 * does, so a roster of old sessions needs no update for hours (issue 14: idle CPU).
 */
export function relativeTimeChangesAt(iso: string | null, now: number): number | null {
  const t = parseTime(iso);
  if (t === null) return null;
  const s = Math.max(0, Math.floor((now - t) / SECOND));
  const after = (units: number, unit: number) => t + units * unit;
  if (s < 60) return after(60, SECOND);
  const m = Math.floor(s / 60);
  if (m < 60) return after(m + 1, 60 * SECOND);
  const h = Math.floor(m / 60);
  if (h < 24) return after(h + 1, 3600 * SECOND);
  const d = Math.floor(h / 24);
  if (d < 30) return after(d + 1, DAY);
  // Months and years count whole days (see relativeTime): the next day whose count differs.
  const mo = Math.max(1, Math.floor(d / 30.44));
  if (mo < 12) return after(Math.ceil((mo + 1) * 30.44), DAY);
  return after(Math.ceil((Math.floor(d / 365.25) + 1) * 365.25), DAY);
}

/** "12 s", "1 min 5 s", "2 h 3 min". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

export function clockTime(iso: string | null): string {
  const t = parseTime(iso);
  if (t === null) return '';
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** "claude-opus-4-8" → "opus 4.8"; "claude-3-5-haiku-20241022" → "haiku 3.5"; unknown names pass through. */
export function shortModel(model: string | null): string {
  if (!model) return '';
  const name = model.replace(/^claude-/, '').replace(/-\d{8}$/, '').replace(/\[.*\]$/, '');
  const family = /(opus|sonnet|haiku)/.exec(name);
  if (!family) return name;
  const fam = family[1];
  const after = name.slice(family.index + fam.length).replace(/^-/, '');
  const before = name.slice(0, family.index).replace(/-$/, '');
  const version = (after || before).split('-').filter((p) => /^\d+$/.test(p)).join('.');
  return version ? `${fam} ${version}` : fam;
}

export function basename(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '');
  const i = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'));
  return (i >= 0 ? trimmed.slice(i + 1) : trimmed) || path;
}

export const STATUS_LABEL: Record<Status, string> = {
  working: 'Working',
  waiting_for_approval: 'Needs approval',
  waiting_for_input: 'Needs input',
  idle: 'Idle',
};

export function needsYou(status: Status): boolean {
  return status === 'waiting_for_approval' || status === 'waiting_for_input';
}

/** The one-line summary of a tool call: its command, file, pattern or url (SPEC W4), with
 * the engine's keys in the engine's order (lib/generated/engine.ts); AskUserQuestion gives
 * its first question, ExitPlanMode the first line of its plan. */
export function toolTarget(input: unknown): string {
  if (input === null || typeof input !== 'object') return typeof input === 'string' ? oneLine(input) : '';
  const rec = input as Record<string, unknown>;
  for (const key of TOOL_TARGET_KEYS) {
    const v = targetText(key, rec[key]);
    if (v) return oneLine(v);
  }
  for (const v of Object.values(rec)) {
    if (typeof v === 'string' && v.length > 0) return oneLine(v);
  }
  return '';
}

function targetText(key: (typeof TOOL_TARGET_KEYS)[number], v: unknown): string {
  if (key === 'questions') {
    const first: unknown = Array.isArray(v) ? v[0] : undefined;
    const q = first && typeof first === 'object' ? (first as Record<string, unknown>).question : undefined;
    return typeof q === 'string' ? q : '';
  }
  if (typeof v !== 'string') return '';
  if (key === 'plan') {
    const line = v.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
    return line.replace(/^#+\s*/, '');
  }
  return v;
}

/** "$0.0176", "$1.23", "$120": enough digits to tell small sessions apart. */
export function formatUsd(v: number): string {
  if (!Number.isFinite(v) || v < 0) return '';
  if (v < 0.1) return '$' + v.toFixed(4);
  if (v < 100) return '$' + v.toFixed(2);
  return '$' + Math.round(v).toString();
}

/** The cost in a sentence, for a tooltip: estimate, what it leaves out, what was billed. */
export function costSentence(c: Cost | undefined): string {
  if (!c) return '';
  const parts: string[] = [];
  if (c.estimatedUsd !== null) parts.push(`about ${formatUsd(c.estimatedUsd)} at the prices of ${c.pricesAsOf}`);
  if (c.unknownModels.length > 0) parts.push(`no price known for ${c.unknownModels.join(', ')}`);
  if (c.billed) parts.push(`Claude Code billed ${formatUsd(c.billed.costUsd)}`);
  return parts.join('; ');
}

/** A row's cost, saying which it is: "$1.20 billed" (Claude Code's figure) or "≈ $1.20 est." (ours). */
export function costLabel(c: Cost): string {
  return c.billed ? `${formatUsd(c.billed.costUsd)} billed` : `≈ ${formatUsd(c.estimatedUsd ?? 0)} est.`;
}

export function oneLine(s: string, max = 300): string {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > max ? line.slice(0, max - 1) + '…' : line;
}

/** Tool input as readable text: JSON, with long string fields shown as they are. */
export function formatInput(input: unknown): string {
  if (input === null || input === undefined) return '';
  if (typeof input === 'string') return input;
  try {
    return JSON.stringify(input, null, 2);
  } catch {
    return String(input);
  }
}

/** `system` items of subtype turn_duration carry the duration in their text (ms, or already formatted). */
export function turnDurationText(text: string): string {
  const t = text.trim();
  const ms = /^(\d+(?:\.\d+)?)\s*(ms)?$/.exec(t);
  if (ms) return `Turn took ${formatDuration(Number(ms[1]))}`;
  return t.toLowerCase().startsWith('turn') ? t : `Turn took ${t}`;
}

/** `n` and its noun, singular for one: "1 session", "1,240 sessions". */
export function countOf(n: number, one: string, many = one + 's'): string {
  return `${formatInt(n)} ${n === 1 ? one : many}`;
}

/** The initial index in words, or null once it is done. */
export function indexingText(p: { indexing: boolean; done: number; total: number }): string | null {
  if (!p.indexing) return null;
  if (p.total === 0) return 'Looking for sessions…';
  return `Reading ${formatInt(p.done)} of ${countOf(p.total, 'session')}…`;
}

/** The day `item` falls on ("Tuesday, 24 November 2026"), when it is the first item (no
 * `prev`) or not the day of `prev` (the item before it); null on the same day, or without a time. */
export function newDay(prev: { timestamp: string | null } | undefined, item: { timestamp: string | null }): string | null {
  const t = parseTime(item.timestamp);
  if (t === null) return null;
  const day = (ms: number) => new Date(ms).toDateString();
  const p = prev ? parseTime(prev.timestamp) : null;
  if (prev && (p === null || day(p) === day(t))) return null;
  return longDay().format(new Date(t));
}

/** A moment in the one date style of the window: "14:03:07" today, "24 Nov 2026, 14:03" on another day. */
export function formatMoment(iso: string | null, now: number): string {
  const t = parseTime(iso);
  if (t === null || iso === null) return '—';
  const d = new Date(t);
  if (d.toDateString() === new Date(now).toDateString()) return clockTime(iso);
  const p = (x: number) => String(x).padStart(2, '0');
  return `${d.getDate()} ${shortMonth().format(d)} ${d.getFullYear()}, ${p(d.getHours())}:${p(d.getMinutes())}`;
}

type Named = Pick<TrackedSession, 'sessionId' | 'title' | 'goal' | 'cwd'> & { name?: string | null };

/**
 * A session's name in a search hit: its title, its first prompt or the name Claude Code gave
 * it, else nothing (the hit then says its chain's name or its short id). Never where it runs,
 * as `sessionLabel` falls back to: the hit shows its project folder beside it already.
 */
export function hitLabel(s: Omit<Named, 'sessionId' | 'cwd'> | undefined): string | null {
  return s?.title ?? s?.goal ?? s?.name ?? null;
}

/**
 * A session's name wherever it is named apart from its own row (toasts, dialogs, the
 * resources table, labels for screen readers): its title, else its first prompt, else the
 * name Claude Code gave it, else where it runs, else its short id.
 */
export function sessionLabel(s: Named | undefined, id = s?.sessionId ?? ''): string {
  return s?.title ?? s?.goal ?? s?.name ?? (s?.cwd ? `Session in ${s.cwd}` : id.slice(0, 8));
}

/**
 * How New session reaches a session that runs already instead of resuming it (which would run
 * it twice): `open` selects its row (its terminal, when supervised here). The seam for Claude
 * Code's background sessions: a row whose `kind` is `background` (issue 33 § 1; the field comes
 * with them) is reached by `attach`, through Claude's own attach, once the window can do it.
 */
export function liveAction(s: TrackedSession): { action: 'open' | 'attach'; label: string } {
  const kind = (s as { kind?: string | null }).kind;
  return kind === 'background' ? { action: 'attach', label: 'Open' } : { action: 'open', label: 'Open' };
}

/** A session's heading in its row and its header (its folder is shown beside it). */
export function sessionHeading(s: Pick<TrackedSession, 'title' | 'goal'>): string {
  return s.title ?? s.goal ?? '(no prompt yet)';
}
