// Generated from the Rust engine (crates/wiring/src/ui_contract.rs); do not edit.
// Refresh: MIMESIS_BLESS=1 cargo test -p mimesis-tests --test e2e ui_contract::

import type { Settings } from './ipc';

/** The settings document as the engine makes it when there is none. */
export const DEFAULT_SETTINGS: Settings = {"watch":{"approvalTimeoutSecs":5,"staleTimeoutSecs":60,"idleTimeoutSecs":600,"statusFileTtlSecs":300,"answerWaitSecs":300},"limits":{"maxLiveSessions":3,"idleTimeoutSecs":600,"suspendMode":"terminate","maxDurationSecs":14400,"durationCheckSecs":60,"durationWarnPercent":90,"turnGraceSecs":30,"maxRssMb":4096,"rssCheckSecs":30,"killAfterSecs":5,"diskCheckSecs":300,"diskWarnPercent":80,"diskCleanupPercent":95,"healthCheckSecs":60,"orphanCheckSecs":60,"recoveryRetries":2,"recoveryRetryDelaySecs":2,"crashDebounceSuccessSecs":30,"crashDebounceFailureSecs":5,"crashPatterns":["RangeError: Maximum call stack size exceeded"],"restartLimitBurst":5,"restartLimitWindowSecs":1800,"backgroundSessions":false,"budgetUsd":null,"dailyBudgetUsd":null},"agent":{"command":"claude","args":[]},"notifications":{"enabled":true,"waitingForApproval":true,"waitingForInput":true,"crashed":true,"recovered":true,"terminated":true},"machines":{"hosts":[]},"desktop":{"startAtLogin":false}};

/** Every number of the Settings document: the range the view offers, its unit and default. */
export const SETTINGS_NUMBERS = {
  "watch.approvalTimeoutSecs": { min: 1, max: 120, unit: "s", default: 5 },
  "watch.staleTimeoutSecs": { min: 10, max: 3600, unit: "s", default: 60 },
  "watch.idleTimeoutSecs": { min: 60, max: 86400, unit: "s", default: 600 },
  "watch.statusFileTtlSecs": { min: 10, max: 86400, unit: "s", default: 300 },
  "watch.answerWaitSecs": { min: 10, max: 300, unit: "s", default: 300 },
  "limits.maxLiveSessions": { min: 1, max: 64, unit: "", default: 3 },
  "limits.idleTimeoutSecs": { min: 60, max: 7200, unit: "s", default: 600 },
  "limits.maxDurationSecs": { min: 60, max: 604800, unit: "s", default: 14400 },
  "limits.durationCheckSecs": { min: 1, max: 3600, unit: "s", default: 60 },
  "limits.durationWarnPercent": { min: 1, max: 99, unit: "%", default: 90 },
  "limits.turnGraceSecs": { min: 0, max: 600, unit: "s", default: 30 },
  "limits.maxRssMb": { min: 64, max: 1048576, unit: "MB", default: 4096 },
  "limits.rssCheckSecs": { min: 1, max: 3600, unit: "s", default: 30 },
  "limits.killAfterSecs": { min: 1, max: 120, unit: "s", default: 5 },
  "limits.diskCheckSecs": { min: 10, max: 86400, unit: "s", default: 300 },
  "limits.diskWarnPercent": { min: 1, max: 99, unit: "%", default: 80 },
  "limits.diskCleanupPercent": { min: 1, max: 100, unit: "%", default: 95 },
  "limits.healthCheckSecs": { min: 5, max: 3600, unit: "s", default: 60 },
  "limits.orphanCheckSecs": { min: 5, max: 3600, unit: "s", default: 60 },
  "limits.recoveryRetries": { min: 0, max: 10, unit: "", default: 2 },
  "limits.recoveryRetryDelaySecs": { min: 0, max: 600, unit: "s", default: 2 },
  "limits.crashDebounceSuccessSecs": { min: 0, max: 3600, unit: "s", default: 30 },
  "limits.crashDebounceFailureSecs": { min: 0, max: 3600, unit: "s", default: 5 },
  "limits.restartLimitBurst": { min: 1, max: 100, unit: "", default: 5 },
  "limits.restartLimitWindowSecs": { min: 60, max: 86400, unit: "s", default: 1800 },
} as const;

export type SettingsNumberPath = keyof typeof SETTINGS_NUMBERS;

/** The keys of a tool's input that name its target, in the engine's order. */
export const TOOL_TARGET_KEYS = ["file_path", "notebook_path", "command", "pattern", "url", "query", "path", "questions", "plan", "description"] as const;

/** Supervision messages that take no value, as the engine words them. */
export const WORDING = {
  durationEndedIncomplete: "Session ended. Your last response may be incomplete.",
  restarting: "Session restarting to maintain performance. Your conversation will be preserved.",
  restored: "Session restored. You can continue.",
  notRestored: "Previous session could not be restored. Starting a new session.",
  recovered: "Session recovered automatically.",
  resumedByUser: "Session resumed.",
  stoppedByUser: "Session stopped. You can resume it.",
  deleted: "Session deleted.",
  shutdown: "Mimesis is quitting; the session was stopped and can be resumed.",
  modeOneShot: "One-shot mode: each message runs as its own `claude -p --resume` process.",
  modePersistent: "Persistent session running again.",
  diskRestarting: "Disk is full. Session restarting to free space. Your conversation will be preserved.",
} as const;

/** Why a session ended, as the end of "This session has ended because …". */
export const TERMINATED_BECAUSE: Record<string, string> = {
  duration_limit: "its duration limit was reached",
  user: "you stopped it",
  deleted: "it was deleted",
  exited: "the agent quit",
  failed_to_start: "the agent could not be started",
  shutdown: "Mimesis quit",
  signal: "Mimesis was told to stop",
};

/** A process's exit status in words, as the engine says it. */
export function exitStatus(code: number): string {
  const words: Record<number, string> = {
    0: "exited normally",
    129: "stopped by SIGHUP",
    130: "stopped by SIGINT",
    131: "stopped by SIGQUIT",
    134: "stopped by SIGABRT",
    137: "stopped by SIGKILL",
    139: "stopped by SIGSEGV",
    141: "stopped by SIGPIPE",
    143: "stopped by SIGTERM",
  };
  return words[code] ?? `exit code ${code}`;
}

/** Supervision messages with values: `{name}` marks where each goes. */
export const WORDING_TEMPLATES = {
  durationWarning: "Session will end in {duration}. Save your work.",
  durationEnded: "Session ended ({limit} limit reached).",
  recoveryFailed: "Automatic recovery failed. Switched to one-shot mode: each message now runs `claude -p --resume {sessionId}`.",
  unhealthy: "Session crashed {crashes} times in a row and is marked unhealthy. Automatic recovery is off; retry when ready.",
  signalled: "Stopped by {signal}. The session can be resumed: mimesis run --resume {sessionId}",
  memoryBelowBaseline: "The memory limit ({limitMb} MB) is below what the agent needs at rest ({rssMb} MB right after a restart). Automatic restarts are stopped; the session keeps running. Raise the limit in Settings.",
  restartLimit: "Restarted {restarts} times in {window}: automatic restarts are stopped; the session keeps running. Restart it yourself when ready, or raise the limits in Settings.",
  suspendedIdle: "Session suspended after {idle} idle. Your next message resumes it.",
  suspendedCap: "Session suspended to keep at most {max} live sessions. Your next message resumes it.",
  resuming: "Resuming session (idle for {idleMin} min)…",
  abnormalExit: "The agent exited unexpectedly (exit code {exitCode}). Last output: {lastLine}",
  diskWarning: "Disk usage of the Claude Code folder's filesystem is at {percent}%.",
} as const;

/** Fills a template's `{name}` marks. */
export function fill(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (m, k: string) => (k in values ? String(values[k]) : m));
}
