// The Settings document (docs/ipc.md): one description per field, and client-side
// validation with the engine's ranges (generated from Rust: lib/generated/engine.ts). The
// engine's `settings_set` has the last word (it validates again and saves nothing on
// error); this only answers sooner.

import { budgetProblem } from './budget';
import { SETTINGS_NUMBERS, type SettingsNumberPath } from './generated/engine';
import type { Settings, SettingsError } from './types';

export type Unit = 's' | 'MB' | '%' | '';

export interface NumberField {
  path: string;
  label: string;
  min: number;
  max: number;
  unit: Unit;
  help?: string;
}

export interface Section {
  key: keyof Settings;
  title: string;
  intro: string;
  fields: NumberField[];
}

/**
 * A field of the view: its words here, its range, unit and default from the engine. A help
 * that gives the range takes it from `rangeHint`, so it is in the unit typed into the field.
 */
const n = (path: SettingsNumberPath, label: string, help?: string | ((range: string) => string)): NumberField => {
  const { min, max, unit } = SETTINGS_NUMBERS[path];
  const f: NumberField = { path, label, min, max, unit };
  if (help) f.help = typeof help === 'string' ? help : help(rangeHint(f));
  return f;
};

export const NUMBER_SECTIONS: Section[] = [
  {
    key: 'watch',
    title: 'Watching',
    intro: 'How sessions are read: statuses derived from transcripts when no hook says it, and requests answered from here.',
    fields: [
      n('watch.approvalTimeoutSecs', 'Pending tool means approval after'),
      n('watch.staleTimeoutSecs', 'Working without output counts as stale after'),
      n('watch.idleTimeoutSecs', 'Waiting for input becomes idle after'),
      n('watch.statusFileTtlSecs', 'Status files are trusted for'),
      n(
        'watch.answerWaitSecs',
        'A permission request waits for an answer from here for',
        'Then Claude Code’s own dialog alone decides; it stays usable in the terminal all along.',
      ),
    ],
  },
  {
    key: 'limits',
    title: 'Supervised sessions',
    intro: 'Limits and timers of sessions Mimesis runs in a terminal.',
    fields: [
      n('limits.maxLiveSessions', 'Live sessions at most', 'Over it the least recently used idle session is suspended.'),
      n('limits.idleTimeoutSecs', 'Suspend an idle session after', (range) => `${range}; starts when a turn ends.`),
      n('limits.maxDurationSecs', 'End a session after', 'Counted from its start (default 4 h).'),
      n('limits.durationCheckSecs', 'Check the duration every'),
      n('limits.durationWarnPercent', 'Warn at', 'Of the duration limit.'),
      n('limits.turnGraceSecs', 'Let a running turn finish for'),
      n('limits.maxRssMb', 'Restart above a memory use of', 'Summed over the session’s process tree.'),
      n('limits.rssCheckSecs', 'Check memory every'),
      n('limits.killAfterSecs', 'Kill after SIGTERM when still alive after'),
      n('limits.diskCheckSecs', 'Check disk use every'),
      n('limits.diskWarnPercent', 'Warn at disk use'),
      n('limits.diskCleanupPercent', 'Clean old snapshots at disk use'),
      n('limits.healthCheckSecs', 'Health check every'),
      n('limits.orphanCheckSecs', 'Look for orphans every'),
      n('limits.recoveryRetries', 'Automatic resume attempts'),
      n('limits.recoveryRetryDelaySecs', 'Between attempts wait'),
      n('limits.crashDebounceSuccessSecs', 'Ignore crashes after a recovery for'),
      n('limits.crashDebounceFailureSecs', 'Ignore crashes after a failed recovery for'),
      n('limits.restartLimitBurst', 'Automatic restarts at most', 'Within the time in “Counting restarts over”; past it they stop and say why.'),
      n('limits.restartLimitWindowSecs', 'Counting restarts over', 'Memory, disk and crash restarts all count.'),
    ],
  },
];

export const NOTIFICATION_KINDS: { key: keyof Settings['notifications']; label: string }[] = [
  { key: 'waitingForApproval', label: 'A session waits for approval' },
  { key: 'waitingForInput', label: 'A session waits for input' },
  { key: 'crashed', label: 'A session crashed' },
  { key: 'recovered', label: 'A session recovered' },
  { key: 'terminated', label: 'A session was ended by a limit' },
];

export const MAX_PATTERNS = 32;
export const MAX_PATTERN_LEN = 500;

export function getPath(s: Settings, path: string): unknown {
  let v: unknown = s;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** A copy of `s` with `path` set to `value`. */
export function setPath(s: Settings, path: string, value: unknown): Settings {
  const [section, key] = path.split('.') as [keyof Settings, string];
  return { ...s, [section]: { ...s[section], [key]: value } };
}

function unitWord(u: Unit): string {
  return u === 's' ? ' seconds' : u === 'MB' ? ' MB' : u === '%' ? ' %' : '';
}

/** Whole minutes are said too, after the seconds the field takes. */
function minutesToo(f: Pick<NumberField, 'min' | 'max' | 'unit'>): string {
  return f.unit === 's' && f.min >= 60 && f.min % 60 === 0 && f.max % 60 === 0 ? ` (${f.min / 60}–${f.max / 60} min)` : '';
}

/** "60–7200 s (1–120 min)": the range in the unit typed into the field first. */
export function rangeHint(f: Pick<NumberField, 'min' | 'max' | 'unit'>): string {
  return `${f.min}–${f.max}${f.unit ? ' ' + f.unit : ''}${minutesToo(f)}`;
}

export function rangeMessage(f: NumberField): string {
  return `must be between ${f.min} and ${f.max}${unitWord(f.unit)}${minutesToo(f)}`;
}

export function validateNumber(f: NumberField, v: unknown): string | null {
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'must be a number';
  if (!Number.isInteger(v)) return 'must be a whole number';
  if (v < f.min || v > f.max) return rangeMessage(f);
  return null;
}

/** Why a crash pattern is no good, or null. Patterns are regular expressions (engine: Rust `regex`). */
export function patternProblem(p: string): string | null {
  if (p.trim() === '') return 'must not be empty';
  if (p.length > MAX_PATTERN_LEN) return `must be at most ${MAX_PATTERN_LEN} characters`;
  try {
    new RegExp(p, 'u');
  } catch {
    return 'is not a valid regular expression';
  }
  return null;
}

/** Every problem in `s`, as `{field, message}` like the engine's `settings_set` errors. */
export function validateSettings(s: Settings): SettingsError[] {
  const errors: SettingsError[] = [];
  for (const sec of NUMBER_SECTIONS) {
    for (const f of sec.fields) {
      const m = validateNumber(f, getPath(s, f.path));
      if (m) errors.push({ field: f.path, message: m });
    }
  }
  const l = s.limits;
  if (l.suspendMode !== 'terminate' && l.suspendMode !== 'stop') errors.push({ field: 'limits.suspendMode', message: 'must be terminate or stop' });
  if (
    Number.isFinite(l.diskWarnPercent) &&
    Number.isFinite(l.diskCleanupPercent) &&
    l.diskCleanupPercent <= l.diskWarnPercent &&
    !errors.some((e) => e.field === 'limits.diskCleanupPercent')
  ) {
    errors.push({ field: 'limits.diskCleanupPercent', message: 'must be above the warning level' });
  }
  for (const k of ['budgetUsd', 'dailyBudgetUsd'] as const) {
    const m = budgetProblem(l[k]);
    if (m) errors.push({ field: `limits.${k}`, message: m });
  }
  if (l.crashPatterns.length > MAX_PATTERNS) errors.push({ field: 'limits.crashPatterns', message: `at most ${MAX_PATTERNS} patterns` });
  l.crashPatterns.forEach((p, i) => {
    const m = patternProblem(p);
    if (m) errors.push({ field: 'limits.crashPatterns', message: `pattern ${i + 1} ${m}` });
  });
  const cmd = s.agent.command;
  if (cmd.trim() === '') errors.push({ field: 'agent.command', message: 'must not be empty' });
  else if (/[\0\n\r]/.test(cmd)) errors.push({ field: 'agent.command', message: 'must be one line' });
  if (s.agent.args.some((a) => /\0/.test(a))) errors.push({ field: 'agent.args', message: 'must not contain NUL characters' });
  return errors;
}

/** Errors grouped by field, messages joined. */
export function errorsByField(errors: readonly SettingsError[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of errors) out[e.field] = out[e.field] ? `${out[e.field]}; ${e.message}` : e.message;
  return out;
}

/** One item per line, blank lines dropped (crash patterns, agent arguments). */
export function linesOf(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '');
}

/** "600 s" → "10 min", for the hint next to a seconds field. */
export function humanSeconds(v: number): string {
  if (!Number.isFinite(v) || v < 60) return '';
  const h = Math.floor(v / 3600);
  const m = Math.floor((v % 3600) / 60);
  const s = v % 60;
  const parts = [h ? `${h} h` : '', m ? `${m} min` : '', s ? `${s} s` : ''].filter(Boolean);
  return parts.join(' ');
}

/** The engine's defaults, generated from `Settings::default()`. */
export { DEFAULT_SETTINGS } from './generated/engine';
