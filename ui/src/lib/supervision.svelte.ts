// Supervised sessions as the UI sees them: notices per session (banners, the terminated
// dialog, queued input, an event log) fed by `supervision:event`, the toast stack, the
// permission requests of `approvals:changed`, and the pty_* commands. ("Needs you" is the
// roster's: `RosterStore.attention`.) Pure rules: supervision.ts.

import { SvelteMap } from 'svelte/reactivity';
import type { Backend } from './backend';
import { Listeners } from './listeners';
import { applyEvent, dismissBanner, emptyNotices, toastFor, type SessionNotices } from './supervision';
import type { PermissionRequest, ScreenDialog, SupervisionEvent, SupervisionEventType, TrackedSession } from './types';

export interface Toast {
  id: number;
  sessionId: string;
  type: SupervisionEventType;
  tone: 'success' | 'info' | 'warning' | 'error';
  text: string;
}

export const TOAST_MS = 6000;
export const TOAST_LIMIT = 4;
/** How long a toast stays after the pointer or the focus left it, when it was due to go. */
export const TOAST_GRACE_MS = 2000;

export interface SupervisionOptions {
  /** Schedules a toast's dismissal (tests pass their own). */
  later?: (fn: () => void, ms: number) => void;
  /** `app:open-session` asked to show this session. */
  onopen?: (sessionId: string) => void;
}

export class SupervisionStore {
  #backend: Backend;
  #listeners = new Listeners();
  #later: (fn: () => void, ms: number) => void;
  #onopen: (sessionId: string) => void;
  #nextToast = 1;

  readonly notices = new SvelteMap<string, SessionNotices>();
  toasts = $state<Toast[]>([]);
  /** Permission dialogs waiting for an answer from here (`approvals:changed`), oldest first. */
  approvals = $state.raw<PermissionRequest[]>([]);
  /** The last failed command, said in a bar until the next success. */
  error = $state<string | null>(null);
  /** The last answer given from here, in words, for a screen reader (`Announcer`); `n` tells two alike apart. */
  said = $state<{ text: string; n: number } | null>(null);

  constructor(backend: Backend, opts: SupervisionOptions = {}) {
    this.#backend = backend;
    this.#later = opts.later ?? ((fn, ms) => void setTimeout(fn, ms));
    this.#onopen = opts.onopen ?? (() => {});
  }

  async start(): Promise<void> {
    // Each change of the list comes as an event with the whole list. The list asked for
    // below may be read before a request came and answered after its event: once an event
    // came, it is the newer word, and the answer is dropped.
    let heard = false;
    this.#listeners.stop();
    const listeners = (this.#listeners = new Listeners());
    await listeners.add(
        this.#backend.on('supervision:event', (ev) => this.receive(ev)),
        this.#backend.on('app:open-session', (p) => this.#onopen(p.sessionId)),
        this.#backend.on('approvals:changed', (list) => {
          heard = true;
          this.approvals = list;
        }),
    );
    try {
      const list = await this.#backend.call('approvals_pending');
      if (!heard) this.approvals = list;
    } catch {
      // (Another face answers them: none here.)
    }
  }

  /** The dialog on a supervised session's screen, if any (a failure reads as none). */
  async dialogOf(sessionId: string): Promise<ScreenDialog | null> {
    try {
      return await this.#backend.call('pty_dialog', { sessionId });
    } catch {
      return null;
    }
  }

  /** Chooses a supervised session's dialog option by its label (the user's click). */
  async choose(sessionId: string, label: string): Promise<boolean> {
    const ok = (await this.#run('answer the question', () => this.#backend.call('pty_answer', { sessionId, answer: label }))).ok;
    if (ok) this.#say(`Chose “${label}”`);
    return ok;
  }

  #say(text: string): void {
    this.said = { text, n: (this.said?.n ?? 0) + 1 };
  }

  /** Brings the terminal of a session running outside Mimesis forward; says what happened. */
  async openTerminal(sessionId: string): Promise<void> {
    const r = await this.#run('open its terminal', () => this.#backend.call('focus_terminal', { sessionId }));
    if (r.ok) this.toast({ sessionId, type: 'session_ready', tone: 'success', text: r.value });
  }

  /** The oldest permission request of a session waiting for an answer from here. */
  requestOf(sessionId: string): PermissionRequest | undefined {
    return this.approvals.find((r) => r.sessionId === sessionId);
  }

  /** Requests of sessions in no roster (`knownSession: false`): shown on their own, plainly. */
  get strangers(): PermissionRequest[] {
    return this.approvals.filter((r) => !r.knownSession);
  }

  /** The user's answer to one request, by its whole id (a click, never made for them). */
  async decide(request: PermissionRequest, allow: boolean, message: string | null = null, answers: Record<string, string> | null = null): Promise<boolean> {
    const what = answers ? 'answer the question' : allow ? 'approve the tool call' : 'deny the tool call';
    const note = message && message.trim() ? message.trim() : null;
    const args = { id: request.id, allow, message: note, answers };
    const ok = (await this.#run(what, () => this.#backend.call('approval_decide', args))).ok;
    if (ok) this.#say(`${answers ? 'Answered' : allow ? 'Approved' : 'Denied'}: ${request.tool}${!answers && request.target ? ' ' + request.target : ''}`);
    return ok;
  }

  /**
   * The user's answer to a session's permission dialog (a click, never made for them): through
   * its hook's request when there is one, else typed into a supervised session's own dialog by
   * the option's label. Says why it failed in the error bar.
   */
  async answer(
    session: TrackedSession,
    allow: boolean,
    message: string | null,
    answers: Record<string, string> | null = null,
  ): Promise<boolean> {
    const request = this.requestOf(session.sessionId);
    if (request) return this.decide(request, allow, message, answers);
    const what = allow ? 'approve the tool call' : 'deny the tool call';
    const sessionId = session.sessionId;
    const answer = allow ? 'approve' : 'deny';
    const ok = (await this.#run(what, () => this.#backend.call('pty_answer', { sessionId, answer }))).ok;
    if (ok) this.#say(`${allow ? 'Approved' : 'Denied'}${session.pendingTool ? ': ' + session.pendingTool.tool : ''}`);
    return ok;
  }

  stop(): void {
    this.#listeners.stop();
  }

  of(sessionId: string): SessionNotices {
    return this.notices.get(sessionId) ?? emptyNotices();
  }

  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- bookkeeping, never rendered
  #stopping = new Set<string>();

  receive(ev: SupervisionEvent): void {
    // The end of a session the user stopped is no news (another machine's says "signal":
    // its terminal was closed).
    if (ev.type === 'session_terminated' && this.#stopping.delete(ev.sessionId)) ev = { ...ev, reason: 'user' };
    this.notices.set(ev.sessionId, applyEvent(this.of(ev.sessionId), ev));
    const t = toastFor(ev);
    if (t) this.toast({ sessionId: ev.sessionId, type: ev.type, tone: t.tone, text: t.text });
  }

  toast(t: Omit<Toast, 'id'>): void {
    const id = this.#nextToast++;
    this.toasts = [...this.toasts, { ...t, id }].slice(-TOAST_LIMIT);
    this.#later(() => (this.#held ? this.#expired.add(id) : this.dismissToast(id)), TOAST_MS);
  }

  #held = false;
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- bookkeeping, never rendered
  #expired = new Set<number>();
  /** While the pointer or the focus is on a toast, none goes by itself; after, those due go a moment later. */
  holdToasts(held: boolean): void {
    this.#held = held;
    if (held || this.#expired.size === 0) return;
    const due = [...this.#expired];
    this.#expired.clear();
    this.#later(() => (this.#held ? due.forEach((id) => this.#expired.add(id)) : due.forEach((id) => this.dismissToast(id))), TOAST_GRACE_MS);
  }

  dismissToast(id: number): void {
    if (this.toasts.some((t) => t.id === id)) this.toasts = this.toasts.filter((t) => t.id !== id);
  }

  dismissBanner(sessionId: string, type: SupervisionEventType): void {
    const n = this.notices.get(sessionId);
    if (n) this.notices.set(sessionId, dismissBanner(n, type));
  }

  dismissTerminated(sessionId: string): void {
    const n = this.notices.get(sessionId);
    if (n?.terminated) this.notices.set(sessionId, { ...n, terminated: null });
  }

  // ---- commands ----

  async #run<T>(what: string, f: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    try {
      const value = await f();
      this.error = null;
      return { ok: true, value };
    } catch (e) {
      this.error = `Could not ${what}: ${String(e)}`;
      return { ok: false };
    }
  }

  /** Starts a session in `cwd` (fresh, or resuming `resume`); returns its id. Throws the engine's sentence. */
  /** Starts a session in `cwd`; `size`: its terminal's, when known (else the backend's default). */
  /** `host`: another machine of Settings › Machines (the id returned is then `host:id`). */
  async create(cwd: string, resume: string | null, size: { cols: number; rows: number } | null = null, host: string | null = null): Promise<string> {
    const r = await this.#backend.call('pty_create', { cwd, resume, cols: size?.cols ?? null, rows: size?.rows ?? null, host });
    this.error = null;
    return r.sessionId;
  }

  /** Sends keystrokes or a paste (`binary`: one byte per character, xterm's `onBinary`); notes when the engine kept them for later (P2). */
  async input(sessionId: string, data: string, binary = false): Promise<void> {
    const r = await this.#run('send input', () => this.#backend.call('pty_input', binary ? { sessionId, data, binary } : { sessionId, data }));
    if (r.ok && r.value.queued) {
      const n = this.of(sessionId);
      if (!n.queued) this.notices.set(sessionId, { ...n, queued: true });
    }
  }

  async resize(sessionId: string, cols: number, rows: number): Promise<void> {
    await this.#run('resize the terminal', () => this.#backend.call('pty_resize', { sessionId, cols, rows }));
  }

  async stopSession(sessionId: string): Promise<void> {
    this.#stopping.add(sessionId);
    const r = await this.#run('stop the session', () => this.#backend.call('pty_stop', { sessionId }));
    if (!r.ok) this.#stopping.delete(sessionId);
  }

  async resume(sessionId: string): Promise<void> {
    this.dismissTerminated(sessionId);
    await this.#run('resume the session', () => this.#backend.call('pty_resume', { sessionId }));
  }

  /** "Continue (raise the budget)": the session's own budget, or with `daily` the fleet's, then resume. */
  async raiseBudget(sessionId: string, budgetUsd: number, daily: boolean): Promise<void> {
    await this.#run('raise the budget', () => this.#backend.call('pty_raise_budget', { sessionId, budgetUsd, daily }));
  }

  /** Also the "Retry" of an error banner. */
  async restart(sessionId: string): Promise<void> {
    const n = this.notices.get(sessionId);
    if (n) this.notices.set(sessionId, { ...n, banners: n.banners.filter((b) => !b.retry) });
    await this.#run('restart the session', () => this.#backend.call('pty_restart', { sessionId }));
  }

  async remove(sessionId: string): Promise<void> {
    const ok = await this.#run('delete the session', () => this.#backend.call('pty_delete', { sessionId }));
    if (ok.ok) this.notices.delete(sessionId);
  }
}
