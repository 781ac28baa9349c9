// The doctor's report (`doctor`, generated from the engine's DoctorReport) as the rows
// Settings › Doctor shows under "Details": one part per row, in words.

import { countOf, formatInt } from './format';
import type { DoctorReport } from './types';

/**
 * A line of the doctor's report as the window says it: the window has an Install button
 * where the terminal needs a command, and no jargon ("publishing metrics").
 */
export function windowWords(line: string): string {
  return line
    .replace(/\(run `mimesis hooks install` for ([^)]*)\)/, '(install them above for $1)')
    .replace(/\brun `mimesis hooks install`/, 'install them above')
    .replace(/(\d+) publishing metrics/, (_, n: string) => `${n} reporting resource use`);
}

export interface DoctorRow {
  part: string;
  value: string;
  /** Something is wrong with this part (shown as a problem). */
  bad: boolean;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

function database(r: DoctorReport): DoctorRow {
  const d = r.database;
  const where = d.path ?? 'in memory';
  const counts = `${countOf(d.sessions, 'session')}, ${countOf(d.chainLinks, 'chain link')}, ${bytes(d.sizeBytes)}, schema ${d.schemaVersion}`;
  const h = d.health;
  const health =
    h.state === 'ok'
      ? 'ok'
      : h.state === 'missing'
        ? 'missing'
        : h.state === 'rebuilt'
          ? `rebuilt (${h.reason}${h.movedTo ? `; the old file is ${h.movedTo}` : ''})`
          : `${h.state.replace('_', ' ')} (${h.reason})`;
  const deleted = r.databaseDeletedUnder === null ? '' : `; process ${r.databaseDeletedUnder} still has the deleted file open`;
  return { part: 'Database', value: `${where}: ${health}, ${counts}${deleted}`, bad: h.state !== 'ok' || r.databaseDeletedUnder !== null };
}

/** The report, part by part. */
export function doctorRows(r: DoctorReport): DoctorRow[] {
  // (Reports recorded before these fields existed have neither.)
  const mode = r.dataDirMode ? ` (mode ${r.dataDirMode})` : '';
  const rows: DoctorRow[] = [
    { part: 'Mimesis', value: `${r.mimesisVersion}, data in ${r.dataDir}${mode}`, bad: Boolean(r.dataDirOpen) },
  ];
  for (const root of r.roots) {
    const h = root.hooks;
    const hooks = h.error ?? (h.installed ? 'hooks installed' : h.partial ? 'hooks partly installed' : 'hooks not installed');
    rows.push({
      part: 'Config folder',
      value: root.exists ? `${root.path}: ${countOf(root.sessionCount, 'session')}, ${hooks}` : `${root.path}: missing`,
      bad: !root.exists || h.error !== null || !h.installed,
    });
  }
  const c = r.claudeCode;
  rows.push({
    part: 'Claude Code',
    value: c.error ?? `${c.version ?? 'not on PATH'}${c.path ? ` at ${c.path}` : ''}; newest session written by ${c.seenVersion ?? 'none'}`,
    bad: c.error !== null || c.path === null,
  });
  const w = r.watcher;
  const watches = w.maxUserWatches === null ? '' : ` (up to ${formatInt(w.maxUserWatches)} watches)`;
  rows.push({ part: 'File watching', value: w.error ?? `ok${watches}`, bad: !w.ok });
  rows.push(database(r));
  const s = r.hookSpool;
  rows.push({
    part: 'Hook events',
    value: `${s.path}: ${countOf(s.files, 'file')}, ${countOf(s.events, 'event')}${s.lastEventAt ? `, last at ${s.lastEventAt}` : ''}`,
    bad: false,
  });
  const v = r.supervision;
  const gone = v.supervisors.filter((x) => !x.alive).length;
  rows.push({
    part: 'Supervision',
    value:
      v.error ??
      `${countOf(v.recordedProcesses, 'process', 'processes')} of ${countOf(v.recordedSessions, 'session')} on record, ` +
        `${countOf(v.supervisors.length, 'supervisor')}${gone ? ` (${gone} gone)` : ''}, ${`${v.metricsPublishers.length} reporting resource use`}` +
        (v.staleMetrics ? `, ${countOf(v.staleMetrics, 'stale snapshot')}` : ''),
    bad: v.error !== null || gone > 0,
  });
  return rows;
}
