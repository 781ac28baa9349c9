// Formatting for the resource view (P7, P14): bytes, uptimes, CPU, idle time left.

import { formatMoment, parseTime } from './format';

/** 512 B, 12.3 KB, 845 MB, 4.1 GB (binary units, one decimal below 100). */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 0) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  if (u === 0) return `${Math.round(v)} B`;
  return `${v < 100 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)} ${units[u]}`;
}

/** Seconds as "45 s", "12 min 5 s", "3 h 04 min", "2 d 3 h". */
export function formatSecs(secs: number | null | undefined): string {
  if (secs === null || secs === undefined || !Number.isFinite(secs) || secs < 0) return '—';
  const s = Math.floor(secs);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, '0')} min`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

export function formatCpu(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p) || p < 0) return '—';
  return `${p < 10 ? p.toFixed(1) : Math.round(p)} %`;
}

/** The start time, in the window's one date style (`formatMoment`). */
export const formatStart = formatMoment;

/**
 * Idle time left: to the session's idle deadline (what its header counts down, "idle suspend
 * in …"), else counted down from when the row was read; "—" when no idle timer runs.
 */
export function idleLeft(secs: number | null, readAt: number, now: number, deadline: string | null = null): string {
  const t = parseTime(deadline);
  if (t !== null) return formatSecs(Math.max(0, Math.round((t - now) / 1000)));
  if (secs === null) return '—';
  return formatSecs(Math.max(0, secs - Math.floor((now - readAt) / 1000)));
}

export const METRIC_LABELS: { key: 'recoveriesTotal' | 'restartsTotal' | 'suspensionsTotal' | 'terminationsTotal' | 'orphansKilledTotal' | 'zombieProcessesCleanedTotal'; label: string }[] = [
  { key: 'recoveriesTotal', label: 'Recoveries' },
  { key: 'restartsTotal', label: 'Restarts' },
  { key: 'suspensionsTotal', label: 'Suspensions' },
  { key: 'terminationsTotal', label: 'Terminations' },
  { key: 'orphansKilledTotal', label: 'Orphans killed' },
  { key: 'zombieProcessesCleanedTotal', label: 'Zombies reaped' },
];
