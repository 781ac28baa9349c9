// The doctor's report (`doctor`, generated from the engine's DoctorReport) as the rows
// Settings › Doctor shows under "Details": one part per row, in words.

import { countOf, formatInt, formatMoment } from './format';
import type { DoctorReport } from './types';

/**
 * A line of the doctor's report as the window says it: the terminal's advice names a command
 * (`mimesis hooks install`), the window has buttons for it just above (Settings › Claude Code
 * hooks), so the advice names the button instead.
 */
export function windowWords(line: string): string {
  return line
    .replace(/\(run `mimesis hooks install` for ([^)]*)\)/, '(press Install hooks above for $1)')
    .replace(/\brun `mimesis hooks uninstall` or reinstall Mimesis/, 'press Install hooks above to point them at this Mimesis, or Uninstall to remove them')
    .replace(/\brun `mimesis hooks install`/, 'press Install hooks above');
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
  if (n < 1024 * 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return `${(n / (1024 * 1024 * 1024)).toFixed(1)} GB`;
}

/** The supervised sessions in words, as `mimesis doctor` says them, and what gone supervisors left. */
function supervision(v: DoctorReport['supervision']): string {
  if (v.error !== null) return v.error;
  const n = v.supervisors.length;
  const running = v.supervisors.filter((x) => x.alive).length;
  const by =
    n === 1
      ? running === 1
        ? 'a Mimesis that is running'
        : 'a Mimesis that is gone'
      : `${n} Mimesis processes, ${running === n ? 'all running' : running === 0 ? 'all gone' : `${n - running} of them gone`}`;
  let text =
    v.recordedProcesses === 0
      ? 'no supervised sessions yet'
      : `${countOf(v.recordedSessions, 'supervised session')} (${countOf(v.recordedProcesses, 'process', 'processes')}), ` +
        `run by ${by}`;
  const m = v.metricsPublishers.length;
  if (m) text += `; ${countOf(m, 'running Mimesis process', 'running Mimesis processes')} ${m === 1 ? 'reports' : 'report'} resource use`;
  const stale = v.staleMetrics;
  if (stale) text += `; resource figures left by ${countOf(stale, 'Mimesis process', 'Mimesis processes')} that ${stale === 1 ? 'is' : 'are'} gone`;
  return text;
}

function database(r: DoctorReport): DoctorRow {
  const d = r.database;
  const where = d.path ?? 'in memory';
  const counts = `${countOf(d.sessions, 'session')}, ${countOf(d.chainLinks, 'link in work chains', 'links in work chains')}, ${bytes(d.sizeBytes)}, schema ${d.schemaVersion}`;
  const h = d.health;
  const health =
    h.state === 'ok'
      ? 'ok'
      : h.state === 'missing'
        ? 'not created yet'
        : h.state === 'rebuilt'
          ? `rebuilt (${h.reason}${h.movedTo ? `; the old file is ${h.movedTo}` : ''})`
          : `${h.state.replace('_', ' ')} (${h.reason})`;
  const deleted = r.databaseDeletedUnder === null ? '' : `; process ${r.databaseDeletedUnder} still has the deleted file open`;
  return { part: 'Database', value: `${where}: ${health}, ${counts}${deleted}`, bad: h.state !== 'ok' || r.databaseDeletedUnder !== null };
}

/** The report, part by part; times are said as on the day of `now`. */
export function doctorRows(r: DoctorReport, now = Date.now()): DoctorRow[] {
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
      value: root.exists ? `${root.path}: ${countOf(root.sessionCount, 'session')}, ${hooks}` : `${root.path}: not found`,
      bad: !root.exists || h.error !== null || !h.installed,
    });
  }
  const c = r.claudeCode;
  rows.push({
    part: 'Claude Code',
    // Found off the PATH (where its installer put it): Mimesis runs it from there, and says so.
    value:
      c.error ??
      `${c.version ?? 'not found'}${c.path ? ` at ${c.path}${c.onPath ? '' : ', not on PATH'}` : ''}; ${c.seenVersion ? `newest session written by ${c.seenVersion}` : 'no session shows its version yet'}`,
    bad: c.error !== null || c.path === null,
  });
  const w = r.watcher;
  const watches = w.maxUserWatches === null ? '' : ` (up to ${formatInt(w.maxUserWatches)} watches)`;
  rows.push({ part: 'File watching', value: w.error ?? `ok${watches}`, bad: !w.ok });
  rows.push(database(r));
  const s = r.hookSpool;
  rows.push({
    part: 'Hook events',
    value: `${s.path}: ${countOf(s.files, 'file')}, ${countOf(s.events, 'event')}${s.lastEventAt ? `, the last at ${formatMoment(s.lastEventAt, now)}` : ''}`,
    bad: false,
  });
  const v = r.supervision;
  rows.push({ part: 'Supervision', value: supervision(v), bad: v.error !== null || v.supervisors.some((x) => !x.alive) });
  return rows;
}
