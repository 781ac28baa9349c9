// Supervision events -> banners, toasts, the terminated dialog, the queued-input note (U4, P2).
import { describe, expect, it } from 'vitest';
import { CRASH_DEFERRED_TEXT, actionsFor, applyEvent, countdown, emptyNotices, remainingAt, type SessionNotices } from '../src/lib/supervision';
import { SupervisionStore, TOAST_GRACE_MS, TOAST_LIMIT, TOAST_MS } from '../src/lib/supervision.svelte';
import type { Supervision, SupervisionEvent } from '../src/lib/types';
import { fireEvent, render } from '@testing-library/svelte';
import UnknownRequests from '../src/components/UnknownRequests.svelte';
import { MockBackend, flush, session } from './helpers';

const at = '2026-11-01T12:00:00.000Z';
const E = {
  warning: { type: 'session_warning', sessionId: 's', at, reason: 'duration', remainingSeconds: 1440, message: 'Session will end in 24 minutes. Save your work.' },
  terminated: { type: 'session_terminated', sessionId: 's', at, reason: 'duration_limit', message: 'Session ended (4-hour limit reached).', resumeSessionId: 's' },
  stopped: { type: 'session_terminated', sessionId: 's', at, reason: 'user', message: 'Session stopped.', resumeSessionId: 's' },
  restarting: { type: 'session_restarting', sessionId: 's', at, reason: 'memory_limit', message: 'Session restarting to maintain performance. Your conversation will be preserved.' },
  ready: { type: 'session_ready', sessionId: 's', at, status: 'resumed', message: 'Session restored. You can continue.' },
  readyNew: { type: 'session_ready', sessionId: 's', at, status: 'new', message: 'Previous session could not be restored. Starting a new session.' },
  crashLater: { type: 'crash_detected', sessionId: 's', at, deferred: true },
  crashNow: { type: 'crash_detected', sessionId: 's', at, deferred: false },
  recovered: { type: 'session_recovered', sessionId: 's', at, message: 'Session recovered automatically.' },
  failed: { type: 'recovery_failed', sessionId: 's', at, message: 'Recovery failed; switched to one-shot mode.' },
  unhealthy: { type: 'session_unhealthy', sessionId: 's', at, message: 'Crashed 3 times; retry when ready.' },
  error: { type: 'error', sessionId: 's', at, exitCode: 1, message: 'Claude Code exited with code 1.' },
  suspended: { type: 'session_suspended', sessionId: 's', at, message: 'Session suspended after 10 min idle.', reason: 'idle' },
  resumed: { type: 'session_resumed', sessionId: 's', at, message: 'Resuming session (idle for 12 min)…' },
  mode: { type: 'mode_change', sessionId: 's', at, mode: 'one_shot', message: 'Switched to one-shot mode.' },
  started: { type: 'session_started', sessionId: 's', at },
  exited: { type: 'session_exited', sessionId: 's', at, exitCode: 0 },
} satisfies Record<string, SupervisionEvent>;

const run = (...evs: SupervisionEvent[]): SessionNotices => evs.reduce(applyEvent, emptyNotices());

describe('applyEvent', () => {
  it('a duration warning is a warning banner with the engine’s message and remaining time', () => {
    const n = run(E.warning);
    expect(n.banners).toEqual([{ type: 'session_warning', tone: 'warning', message: E.warning.message, at, remainingSeconds: 1440, retry: false }]);
    expect(n.terminated).toBeNull();
  });

  it('termination by a limit opens the dialog and clears the banners; by the user it does not', () => {
    const n = run(E.warning, E.terminated);
    expect(n.banners).toEqual([]);
    expect(n.terminated).toEqual({ message: E.terminated.message, reason: 'duration_limit', resumeSessionId: 's', at });
    expect(run(E.stopped).terminated).toBeNull();
  });

  it('errors, failed recoveries and unhealthy give one error banner with Retry, the latest message', () => {
    for (const ev of [E.error, E.failed, E.unhealthy]) {
      const n = run(ev);
      expect(n.banners).toHaveLength(1);
      expect(n.banners[0]).toMatchObject({ type: ev.type, tone: 'error', message: ev.message, retry: true });
    }
    const n = run(E.error, E.failed, E.unhealthy);
    expect(n.banners.map((b) => b.type)).toEqual(['session_unhealthy']);
  });

  it('a deferred crash says recovery waits for the turn; recovery clears it and the errors', () => {
    const n = run(E.crashLater);
    expect(n.banners).toMatchObject([{ type: 'crash_detected', tone: 'info', message: CRASH_DEFERRED_TEXT }]);
    expect(CRASH_DEFERRED_TEXT).toBe('Crash detected; recovery will run when the current turn ends');
    expect(run(E.crashNow).banners).toEqual([]);
    expect(run(E.crashLater, E.error, E.recovered).banners).toEqual([]);
    expect(run(E.error, E.ready).banners).toEqual([]);
  });

  it('a fresh session after a corrupted resume keeps an info banner (EC-007)', () => {
    expect(run(E.readyNew).banners).toMatchObject([{ type: 'session_ready', tone: 'info', message: E.readyNew.message }]);
  });

  it('toast-only events leave no banner, and every event is logged (bounded)', () => {
    const n = run(E.restarting, E.ready, E.recovered, E.resumed, E.mode, E.suspended, E.started, E.exited);
    expect(n.banners).toEqual([]);
    expect(n.log.map((e) => e.type)).toEqual(['session_restarting', 'session_ready', 'session_recovered', 'session_resumed', 'mode_change', 'session_suspended', 'session_started', 'session_exited']);
    const many = run(...Array.from({ length: 80 }, () => E.exited));
    expect(many.log).toHaveLength(50);
  });

  it('the session coming back clears the queued note and a stale dialog', () => {
    const queued = { ...run(E.terminated), queued: true };
    const back = applyEvent(queued, E.resumed);
    expect(back.queued).toBe(false);
    expect(back.terminated).toBeNull();
  });

  it('counts the warning down from when it was sent', () => {
    const b = run(E.warning).banners[0];
    expect(remainingAt(b, Date.parse(at))).toBe(1440);
    expect(remainingAt(b, Date.parse(at) + 60_000)).toBe(1380);
    expect(remainingAt(b, Date.parse(at) + 9e9)).toBe(0);
    expect(countdown(1440)).toBe('24:00');
    expect(countdown(3723)).toBe('1:02:03');
  });

  it('enables the actions that make sense in each state', () => {
    const sup = (state: Supervision['state']) => ({ state }) as Supervision;
    expect(actionsFor(sup('running'))).toEqual({ stop: true, resume: false, restart: true, delete: true });
    expect(actionsFor(sup('terminated'))).toEqual({ stop: false, resume: true, restart: false, delete: true });
    expect(actionsFor(sup('suspended'))).toMatchObject({ resume: true, restart: false });
    expect(actionsFor(sup('unhealthy'))).toMatchObject({ resume: true, restart: true });
    expect(actionsFor(null)).toEqual({ stop: false, resume: false, restart: false, delete: false });
  });
});

function setup(handlers: ConstructorParameters<typeof MockBackend>[0] = {}) {
  const b = new MockBackend(handlers);
  const timers: { fn: () => void; ms: number }[] = [];
  const opened: string[] = [];
  const sup = new SupervisionStore(b, { later: (fn, ms) => timers.push({ fn, ms }), onopen: (id) => opened.push(id) });
  return { b, sup, timers, opened };
}

describe('SupervisionStore', () => {
  it('turns events into notices per session and toasts that go by themselves', async () => {
    const { b, sup, timers } = setup();
    await sup.start();
    b.fire('supervision:event', E.warning);
    b.fire('supervision:event', { ...E.restarting, sessionId: 'other' });
    expect(sup.of('s').banners[0].message).toBe(E.warning.message);
    expect(sup.of('other').banners).toEqual([]);
    expect(sup.toasts).toMatchObject([{ sessionId: 'other', type: 'session_restarting', text: E.restarting.message }]);
    expect(timers.map((t) => t.ms)).toEqual([TOAST_MS]);
    timers[0].fn();
    expect(sup.toasts).toEqual([]);
    for (let i = 0; i < 10; i++) sup.receive(E.recovered);
    expect(sup.toasts).toHaveLength(TOAST_LIMIT);
  });

  it('a toast the pointer or the focus is on stays; it goes a moment after they leave', async () => {
    const { b, sup, timers } = setup();
    await sup.start();
    b.fire('supervision:event', { ...E.restarting, sessionId: 'other' });
    sup.holdToasts(true);
    timers[0].fn(); // due while held
    expect(sup.toasts).toHaveLength(1);
    sup.holdToasts(false);
    expect(timers.map((t) => t.ms)).toEqual([TOAST_MS, TOAST_GRACE_MS]);
    timers[1].fn();
    expect(sup.toasts).toEqual([]);
  });

  it('answers a permission dialog only on a click: through its hook request, else by label in the PTY', async () => {
    const request = { id: 'r1', sessionId: 'ext', tool: 'Bash', target: 'rm -rf build', cwd: null, since: '2026-11-25T18:00:00.000Z', knownSession: true, channel: 'hook' as const };
    const { sup, b } = setup({ approvals_pending: () => [request], approval_decide: () => request, pty_answer: () => 'Yes' });
    await sup.start();
    expect(sup.requestOf('ext')).toEqual(request);
    expect(b.count('approval_decide') + b.count('pty_answer')).toBe(0);
    expect(await sup.answer(session('ext'), false, '  keep it  ')).toBe(true);
    expect(b.calls.at(-1)).toEqual({ cmd: 'approval_decide', args: { id: 'r1', allow: false, message: 'keep it', answers: null } });
    b.fire('approvals:changed', []);
    expect(sup.requestOf('ext')).toBeUndefined();
    expect(await sup.answer(session('pty-1'), true, null)).toBe(true);
    expect(b.calls.at(-1)).toEqual({ cmd: 'pty_answer', args: { sessionId: 'pty-1', answer: 'approve' } });
    b.handlers.pty_answer = () => {
      throw new Error('no dialog is on the session\'s screen');
    };
    expect(await sup.answer(session('pty-1'), true, null)).toBe(false);
    expect(sup.error).toContain("no dialog is on the session's screen");
  });

  it('requests of sessions in no roster are listed on their own as from an unknown session, answered by their whole id (issue 32)', async () => {
    const known = { id: 'req_aa', sessionId: 'ext', tool: 'Bash', target: 'echo harmless', cwd: null, since: at, knownSession: true, sessionName: 'p · Fix it', channel: 'hook' as const };
    const stranger = { id: 'req_bb', sessionId: '5bd58612-9f00', tool: 'Bash', target: 'rm -rf ~/important', cwd: '/tmp/x', since: at, knownSession: false, channel: 'hook' as const };
    const { sup, b } = setup({ approvals_pending: () => [known, stranger], approval_decide: () => stranger });
    await sup.start();
    expect(sup.strangers).toEqual([stranger]);
    const r = render(UnknownRequests, { props: { sup } });
    const rows = r.container.querySelectorAll('[data-testid=unknown-request]');
    expect(rows).toHaveLength(1);
    expect(rows[0].textContent).toContain('Unknown session');
    expect(rows[0].textContent).toContain('5bd58612-9f00');
    expect(rows[0].textContent).toContain('rm -rf ~/important');
    // Deny comes first; each button is described by the whole call it answers.
    const buttons = [...rows[0].querySelectorAll('button')];
    expect(buttons.map((x) => x.textContent)).toEqual(['Deny', 'Approve once']);
    for (const x of buttons) expect(document.getElementById(x.getAttribute('aria-describedby') ?? '')?.textContent).toBe('Bash · rm -rf ~/important');
    expect(b.count('approval_decide')).toBe(0);
    await fireEvent.click(r.getByTestId('unknown-deny'));
    expect(b.calls.at(-1)).toEqual({ cmd: 'approval_decide', args: { id: 'req_bb', allow: false, message: null, answers: null } });
    b.fire('approvals:changed', [known]);
    await flush();
    expect(r.container.querySelector('[data-testid=unknown-requests]')).toBeNull();
  });

  it('a request that came while the list was being read is kept (the event is newer than the answer)', async () => {
    const request = { id: 'r2', sessionId: 'ext', tool: 'Bash', target: 'echo window > w.txt', cwd: null, since: '2026-11-27T12:00:00.000Z', knownSession: true, channel: 'hook' as const };
    let read: (list: never[]) => void = () => {};
    const { sup, b } = setup({ approvals_pending: () => new Promise<never[]>((r) => (read = r)) });
    const started = sup.start();
    await flush();
    b.fire('approvals:changed', [request]);
    read([]); // read before the request came, answered after its event
    await started;
    expect(sup.requestOf('ext')).toEqual(request);
    b.fire('approvals:changed', []);
    expect(sup.requestOf('ext')).toBeUndefined();
  });

  it('opens a session\'s terminal and says what it did, or why not', async () => {
    const { sup, b } = setup({ focus_terminal: () => 'Brought tmux pane %3 forward.' });
    await sup.openTerminal('ext');
    expect(b.calls.at(-1)).toEqual({ cmd: 'focus_terminal', args: { sessionId: 'ext' } });
    expect(sup.toasts.at(-1)).toMatchObject({ tone: 'success', text: 'Brought tmux pane %3 forward.' });
    b.handlers.focus_terminal = () => {
      throw new Error('Mimesis does not know its terminal');
    };
    await sup.openTerminal('ext');
    expect(sup.error).toContain('Could not open its terminal: Error: Mimesis does not know its terminal');
  });

  it('notes queued input until the session is back', async () => {
    let queued = true;
    const { sup, b } = setup({ pty_input: () => ({ queued }) });
    await sup.input('s', 'hello\r');
    expect(b.calls.at(-1)).toEqual({ cmd: 'pty_input', args: { sessionId: 's', data: 'hello\r' } });
    // Binary input says so: the app writes its characters as bytes.
    await sup.input('s', '\x1b[M ' + String.fromCharCode(232) + '!', true);
    expect(b.calls.at(-1)).toEqual({ cmd: 'pty_input', args: { sessionId: 's', data: '\x1b[M ' + String.fromCharCode(232) + '!', binary: true } });
    expect(sup.of('s').queued).toBe(true);
    sup.receive(E.resumed);
    expect(sup.of('s').queued).toBe(false);
    queued = false;
    await sup.input('s', 'x');
    expect(sup.of('s').queued).toBe(false);
  });

  it('Retry restarts and drops the error banner; Resume closes the dialog; Delete forgets', async () => {
    const { sup, b } = setup({ pty_restart: () => null, pty_resume: () => null, pty_delete: () => null });
    sup.receive(E.unhealthy);
    await sup.restart('s');
    expect(b.count('pty_restart')).toBe(1);
    expect(sup.of('s').banners).toEqual([]);
    sup.receive(E.terminated);
    await sup.resume('s');
    expect(sup.of('s').terminated).toBeNull();
    expect(b.calls.at(-1)).toEqual({ cmd: 'pty_resume', args: { sessionId: 's' } });
    sup.receive(E.warning);
    await sup.remove('s');
    expect(sup.notices.has('s')).toBe(false);
  });

  it('the end of a session the user stopped opens no dialog, whatever the far side calls it', async () => {
    const { sup } = setup({ pty_stop: () => null });
    const key = 'devbox:s';
    await sup.stopSession(key);
    // Another machine's session ends with "signal" when its terminal is closed.
    sup.receive({ ...E.terminated, sessionId: key, reason: 'signal' });
    expect(sup.of(key).terminated).toBeNull();
    // The next end, not asked for, is news again.
    sup.receive({ ...E.terminated, sessionId: key, reason: 'signal' });
    expect(sup.of(key).terminated).toMatchObject({ reason: 'signal' });
  });

  it('says when a command fails, and loses nothing', async () => {
    const { sup } = setup({ pty_stop: () => Promise.reject('no such session') });
    sup.receive(E.warning);
    await sup.stopSession('s');
    expect(sup.error).toBe('Could not stop the session: no such session');
    expect(sup.of('s').banners).toHaveLength(1);
  });

  it('app:open-session opens one', async () => {
    const { b, sup, opened } = setup();
    await sup.start();
    b.fire('app:open-session', { sessionId: 'b' });
    expect(opened).toEqual(['b']);
  });
});
