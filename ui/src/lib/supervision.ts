// Pure logic for supervision events (docs/ipc.md "Supervision events"): which banner, toast
// or dialog each one gives, and what it clears. The engine writes every `message` (the
// seeds' wording); the UI shows it as text and adds only labels of its own.

import type { Supervision, SupervisionEvent, SupervisionEventType, SupervisionState } from './types';

export type BannerTone = 'warning' | 'error' | 'info';

export interface Banner {
  /** The event type that raised it (the `data-kind` of the banner). */
  type: SupervisionEventType;
  tone: BannerTone;
  message: string;
  at: string;
  /** session_warning: seconds left when the event was sent (the UI counts down from `at`). */
  remainingSeconds?: number;
  /** The banner offers "Retry" (= `pty_restart`). */
  retry: boolean;
}

export interface TerminatedNotice {
  message: string;
  reason: string;
  resumeSessionId: string | null;
  at: string;
}

/** Everything the UI keeps per supervised session. */
export interface SessionNotices {
  /** At most one banner per tone, newest first. */
  banners: Banner[];
  /** The "Start New Session" / "Resume" dialog, until the user answers or dismisses it. */
  terminated: TerminatedNotice | null;
  /** A `pty_input` came back `queued: true`; cleared when the session is back. */
  queued: boolean;
  /** The latest events, oldest first (bounded). */
  log: SupervisionEvent[];
}

export const LOG_LIMIT = 50;

export function emptyNotices(): SessionNotices {
  return { banners: [], terminated: null, queued: false, log: [] };
}

/** What the info banner says for a deferred crash (the event carries no message of its own). */
export const CRASH_DEFERRED_TEXT = 'Crash detected; recovery will run when the current turn ends';
export const CRASH_NOW_TEXT = 'Crash detected; recovering now';

/** Termination reasons the user asked for: no dialog, they know. */
const USER_REASONS = new Set(['user', 'deleted']);

/** Events after which the session is back: error and crash banners go, queued input is on its way. */
const BACK: ReadonlySet<SupervisionEventType> = new Set(['session_started', 'session_recovered', 'session_ready', 'session_resumed']);

/** The text of an event for toasts and the log. */
export function eventText(ev: SupervisionEvent): string {
  switch (ev.type) {
    case 'session_started':
      return 'Session started';
    case 'crash_detected':
      return ev.deferred ? CRASH_DEFERRED_TEXT : CRASH_NOW_TEXT;
    case 'session_exited':
      return ev.exitCode === null ? 'Process exited' : `Process exited with code ${ev.exitCode}`;
    default:
      return ev.message;
  }
}

/** Short labels for the event log. */
export const EVENT_LABEL: Record<SupervisionEventType, string> = {
  session_started: 'started',
  session_warning: 'warning',
  session_terminated: 'terminated',
  session_restarting: 'restarting',
  session_ready: 'ready',
  crash_detected: 'crash',
  session_recovered: 'recovered',
  recovery_failed: 'recovery failed',
  session_unhealthy: 'unhealthy',
  session_suspended: 'suspended',
  session_resumed: 'resumed',
  mode_change: 'mode',
  error: 'error',
  session_exited: 'exited',
};

/** Which events show a toast (non-blocking, auto-dismissed). */
export function toastFor(ev: SupervisionEvent): { tone: BannerTone | 'success'; text: string } | null {
  switch (ev.type) {
    case 'session_restarting':
    case 'mode_change':
    case 'session_suspended':
      return { tone: 'info', text: ev.message };
    case 'session_ready':
      return { tone: ev.status === 'new' ? 'warning' : 'success', text: ev.message };
    case 'session_recovered':
    case 'session_resumed':
      return { tone: 'success', text: ev.message };
    case 'crash_detected':
      return ev.deferred ? null : { tone: 'warning', text: CRASH_NOW_TEXT };
    default:
      return null;
  }
}

function setBanner(banners: Banner[], b: Banner): Banner[] {
  return [b, ...banners.filter((x) => x.tone !== b.tone)];
}

function dropBanners(banners: Banner[], keep: (b: Banner) => boolean): Banner[] {
  const next = banners.filter(keep);
  return next.length === banners.length ? banners : next;
}

/** Applies one event to a session's notices. Pure: returns a new object when anything changed. */
export function applyEvent(n: SessionNotices, ev: SupervisionEvent): SessionNotices {
  const log = n.log.length >= LOG_LIMIT ? [...n.log.slice(n.log.length - LOG_LIMIT + 1), ev] : [...n.log, ev];
  let { banners, terminated, queued } = n;
  if (BACK.has(ev.type)) {
    banners = dropBanners(banners, (b) => b.tone === 'warning' && b.type === 'session_warning');
    queued = false;
    terminated = null;
  }
  switch (ev.type) {
    case 'session_warning':
      banners = setBanner(banners, { type: ev.type, tone: 'warning', message: ev.message, at: ev.at, remainingSeconds: ev.remainingSeconds ?? undefined, retry: false });
      break;
    case 'session_terminated':
      // The dialog takes over from every banner.
      banners = [];
      terminated = USER_REASONS.has(ev.reason) ? null : { message: ev.message, reason: ev.reason, resumeSessionId: ev.resumeSessionId, at: ev.at };
      break;
    case 'crash_detected':
      if (ev.deferred) banners = setBanner(banners, { type: ev.type, tone: 'info', message: CRASH_DEFERRED_TEXT, at: ev.at, retry: false });
      break;
    case 'session_unhealthy':
    case 'recovery_failed':
    case 'error':
      banners = setBanner(banners, { type: ev.type, tone: 'error', message: ev.message, at: ev.at, retry: true });
      break;
    case 'session_ready':
      // EC-007: a fresh session replaced a corrupted one; the seed asks for an info banner.
      banners = dropBanners(banners, (b) => b.tone !== 'error' && b.type !== 'crash_detected');
      if (ev.status === 'new') banners = setBanner(banners, { type: ev.type, tone: 'info', message: ev.message, at: ev.at, retry: false });
      break;
    case 'session_recovered':
    case 'session_resumed':
    case 'session_started':
      banners = dropBanners(banners, (b) => b.tone !== 'error' && b.type !== 'crash_detected');
      break;
  }
  return { banners, terminated, queued, log };
}

export function dismissBanner(n: SessionNotices, type: SupervisionEventType): SessionNotices {
  return { ...n, banners: n.banners.filter((b) => b.type !== type) };
}

/** Seconds left on a warning, counted down from when it was sent; null when unknown. */
export function remainingAt(b: Banner, now: number): number | null {
  if (b.remainingSeconds === undefined) return null;
  const sent = Date.parse(b.at);
  if (Number.isNaN(sent)) return b.remainingSeconds;
  return Math.max(0, Math.round(b.remainingSeconds - (now - sent) / 1000));
}

/** "24 min 0 s" style, compact: "24:00" under an hour, "1:02:03" above. */
export function countdown(secs: number): string {
  const s = Math.max(0, Math.floor(secs));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  const p = (x: number) => String(x).padStart(2, '0');
  return h > 0 ? `${h}:${p(m)}:${p(r)}` : `${m}:${p(r)}`;
}

export const STATE_LABEL: Record<SupervisionState, string> = {
  running: 'Running',
  restart_pending: 'Restart pending',
  recovering: 'Recovering',
  suspended: 'Suspended',
  unhealthy: 'Unhealthy',
  terminated: 'Terminated',
};

/** Which actions make sense in a state (the engine has the last word; these only enable buttons). */
export function actionsFor(sup: Supervision | null): { stop: boolean; resume: boolean; restart: boolean; delete: boolean } {
  if (!sup) return { stop: false, resume: false, restart: false, delete: false };
  const s = sup.state;
  return {
    stop: s !== 'terminated',
    resume: s === 'suspended' || s === 'terminated' || s === 'unhealthy',
    restart: s === 'running' || s === 'unhealthy' || s === 'restart_pending',
    delete: true,
  };
}
