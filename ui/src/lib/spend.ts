// The Spend view's figures (docs/ipc.md `spend_view`) shaped for the chart and the
// page, and a work chain's cost on the roster. Pure: the chart library is loaded by
// ./spendChart only when the view is shown.
import { cents, costLabel, costSentence, formatUsd } from './format';
import type { SpendSeries, SpendSession, SpendView, TrackedSession } from './types';

export type StackBy = 'project' | 'model';

/** The windows the view offers, in days. */
export const RANGES = [7, 30, 90] as const;
export type Range = (typeof RANGES)[number];

/** The window shown: the one chosen last (a preference) when the view still offers it, else 30 days. */
export function offeredDays(chosen: number | null): Range {
  return RANGES.find((r) => r === chosen) ?? 30;
}

/** Eight colours that stay apart on a light and a dark page; the last one is "Other"'s. */
export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c9c9c'];

/** "/home/me/src/api" → "api"; a model's "claude-" prefix goes; other names as they are. */
export function seriesLabel(name: string, by: StackBy): string {
  if (by === 'model') return name.replace(/^claude-/, '');
  const trimmed = name.replace(/\/+$/, '');
  const last = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  return last || name;
}

/** "2026-11-28" → "Nov 28" (the day as written: no time zone moves it). */
export function dayLabel(day: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return day;
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][Number(m[2]) - 1];
  return month ? `${month} ${Number(m[3])}` : day;
}

export interface ChartSeries {
  /** Shown in the legend and the tooltip. */
  label: string;
  /** The full name (a project's folder, a model's id). */
  name: string;
  usd: number[];
  color: string;
}

export interface ChartData {
  labels: string[];
  series: ChartSeries[];
}

/** The chart's stacks for one stacking: labels per day, each series with its colour. */
export function chartData(view: SpendView, by: StackBy): ChartData {
  const source: SpendSeries[] = by === 'project' ? view.byProject : view.byModel;
  // Two folders with the same last name keep their full names apart.
  const short = source.map((s) => (s.name === 'Other' ? s.name : seriesLabel(s.name, by)));
  const series = source.map((s, i) => ({
    label: short.indexOf(short[i]) !== short.lastIndexOf(short[i]) ? s.name : short[i],
    name: s.name,
    usd: s.usd,
    color: s.name === 'Other' ? PALETTE[PALETTE.length - 1] : PALETTE[i % (PALETTE.length - 1)],
  }));
  return { labels: view.days.map(dayLabel), series };
}

/** The chart in words, for a screen reader: the total and the costliest day. */
export function chartSummary(view: SpendView): string {
  const perDay = view.days.map((_, i) => view.byProject.reduce((a, s) => a + (s.usd[i] ?? 0), 0));
  let top = -1;
  perDay.forEach((v, i) => {
    if (v > 0 && (top < 0 || v > perDay[top])) top = i;
  });
  const head = `Cost per day over ${view.days.length} days: ${formatDollars(view.shown.usd)} in all`;
  return top < 0 ? `${head}.` : `${head}; the costliest day ${dayLabel(view.days[top])}, ${formatDollars(perDay[top])}.`;
}

/** "$1,234.56", "$0.42", "<$0.01". */
export function formatDollars(v: number): string {
  if (!Number.isFinite(v) || v <= 0) return '$0.00';
  if (v < 0.01) return '<$0.01';
  return '$' + cents.format(v);
}

/** A session's cost on the roster: what Claude Code billed when it said, else the estimate. */
export function sessionUsd(s: TrackedSession): number | null {
  return s.cost?.billed?.costUsd ?? s.cost?.estimatedUsd ?? null;
}

/** Each work chain's cost: its sessions' costs summed, by `workChainId`. */
export function chainCosts(sessions: Iterable<TrackedSession>): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of sessions) {
    if (!s.workChainId || s.chainLength < 2) continue;
    const usd = sessionUsd(s);
    if (usd === null) continue;
    out.set(s.workChainId, (out.get(s.workChainId) ?? 0) + usd);
  }
  return out;
}

/** A costliest session's cost cell. */
export interface SessionCost {
  /** The figure its roster row shows, in the row's words ("$2.29 billed", "≈ $3.10 est."). */
  text: string;
  billed: boolean;
  /** The figure in a sentence, as on the row. */
  tip: string;
  /** The estimate over the days shown, which ranks the list, when it is not the figure shown. */
  inDays: string | null;
}

/**
 * The cost the list shows for one of the costliest sessions: the same figure as its roster row
 * (what Claude Code billed when it said, else the estimate over the whole session), so one
 * session never has two unexplained prices. The list is ranked by the estimate over the days
 * shown (all the engine sums per day), said beside it when it differs. A session the roster
 * does not list has that estimate alone.
 */
export function sessionCost(s: SpendSession, known: TrackedSession | undefined): SessionCost {
  const inDays = `≈ ${formatUsd(s.usd)} est.`;
  const c = known?.cost;
  if (!c || (!c.billed && c.estimatedUsd === null)) {
    return { text: inDays, billed: false, tip: 'Estimated over the days shown', inDays: null };
  }
  const shown = c.billed?.costUsd ?? c.estimatedUsd ?? 0;
  return {
    text: costLabel(c),
    billed: !!c.billed,
    tip: costSentence(c),
    inDays: Math.abs(shown - s.usd) < 0.005 ? null : `${inDays} in these days`,
  };
}
