// Sessions a quit or a crash of Mimesis interrupted (issue 37): offered for resume after the
// next start, all at once from one banner; and the question a quit with supervised sessions
// running asks (`app:quit-requested`).
import type { Backend, Unlisten } from './backend';
import type { HandOverProgress, Interrupted } from './types';

/** The banner's button: one click resumes every one. */
export function resumeAllText(n: number): string {
  return n === 1 ? 'Resume the session that was running' : `Resume the ${n} sessions that were running`;
}

/** What the quit dialog says the quit does. */
export function quitText(running: number): string {
  const them = running === 1 ? 'A supervised session is' : `${running} supervised sessions are`;
  return `${them} running. Quitting stops ${running === 1 ? 'it' : 'them'}; the next start of Mimesis offers to resume ${running === 1 ? 'it' : 'them'}.`;
}

/** What the quit dialog's hand-over choice says it does. */
export function handOverText(running: number): string {
  return `Claude Code's background service can continue ${running === 1 ? 'it' : 'them'}: each is handed over when its current turn ends, and Mimesis then quits. They show as background sessions at the next start.`;
}

/** What the quit dialog says while the sessions stop. */
export function stoppingText(running: number): string {
  return running === 1
    ? 'Stopping the session… Mimesis quits once it has stopped.'
    : `Stopping the ${running} sessions… Mimesis quits once they have stopped.`;
}

/** How a hand-over is going, one sentence. */
export function handingText(p: HandOverProgress): string {
  const parts: string[] = [];
  if (p.waiting) parts.push(`${p.waiting} still working (handed over when ${p.waiting === 1 ? 'its' : 'their'} turn ends)`);
  if (p.handed) parts.push(`${p.handed} handed over`);
  if (p.failed) parts.push(`${p.failed} could not be handed over (offered for resume at the next start)`);
  if (p.ended) parts.push(`${p.ended} ended by ${p.ended === 1 ? 'itself' : 'themselves'}`);
  return parts.length ? parts.join(' · ') : 'Handing over…';
}

/** Starts a supervised session resuming `sessionId` in `cwd` (the roster's own Resume). */
export type ResumeFn = (cwd: string, sessionId: string) => Promise<unknown>;

export class InterruptedSessions {
  list: Interrupted[] = $state([]);
  busy = $state(false);
  error: string | null = $state(null);
  /** Supervised sessions running when a quit was asked for; null when not asking. */
  quitting: number | null = $state(null);
  /** The installed Claude Code can continue them in its background service. */
  handOver = $state(false);
  /** The hand-over under way (then Mimesis quits), or null. */
  handing: HandOverProgress | null = $state(null);
  quitError: string | null = $state(null);
  /** "Stop them and quit" was chosen: the sessions are stopping, then Mimesis quits. */
  stopping = $state(false);
  #backend: Backend;
  #resume: ResumeFn;
  #unlisten: Unlisten[] = [];

  /** `onresumed`: one session resumed alone (the banner's only one, or its own button): shown. */
  constructor(
    backend: Backend,
    resume: ResumeFn,
    private readonly onresumed: (sessionId: string) => void = () => {},
  ) {
    this.#backend = backend;
    this.#resume = resume;
  }

  async start(): Promise<void> {
    this.#unlisten = await Promise.all([
      this.#backend.on('app:quit-requested', (p) => {
        this.quitting = p.running;
        this.handOver = p.handOver;
        this.quitError = null;
        this.stopping = false;
      }),
      this.#backend.on('app:handover', (p) => (this.handing = p)),
      // Resumed another way (its row's Resume, another Mimesis): no longer offered.
      this.#backend.on('supervision:event', (ev) => {
        if (ev.type === 'session_started' && this.has(ev.sessionId)) this.list = this.list.filter((i) => i.sessionId !== ev.sessionId);
      }),
    ]);
    try {
      this.list = await this.#backend.call('sessions_interrupted');
    } catch {
      this.list = [];
    }
  }

  stop(): void {
    this.#unlisten.forEach((u) => u());
  }

  has(sessionId: string): boolean {
    return this.list.some((i) => i.sessionId === sessionId);
  }

  /** Resumes these (all by default), each through the roster's Resume; those that fail stay offered. */
  async resume(ids: string[] = this.list.map((i) => i.sessionId)): Promise<void> {
    this.busy = true;
    const failed: string[] = [];
    for (const i of this.list.filter((x) => ids.includes(x.sessionId))) {
      try {
        await this.#resume(i.cwd, i.sessionId);
        this.list = this.list.filter((x) => x.sessionId !== i.sessionId);
      } catch (e) {
        failed.push(`${i.sessionId.slice(0, 8)}: ${String(e)}`);
      }
    }
    this.error = failed.length ? `Could not resume ${failed.join('; ')}` : null;
    this.busy = false;
    if (ids.length === 1 && failed.length === 0) this.onresumed(ids[0]);
  }

  /** Not resumed: forgotten, the banner goes. */
  async dismiss(): Promise<void> {
    const sessionIds = this.list.map((i) => i.sessionId);
    this.list = [];
    this.error = null;
    if (sessionIds.length) await this.#backend.call('interrupted_dismiss', { sessionIds }).catch(() => {});
  }

  /** The quit dialog's answer: a hand-over keeps the dialog, showing how it goes, until Mimesis quits. */
  async answerQuit(choice: 'stop' | 'handover' | 'cancel'): Promise<void> {
    if (choice === 'handover') {
      this.handing = { waiting: this.quitting ?? 0, handed: 0, failed: 0, ended: 0, errors: [] };
      try {
        await this.#backend.call('app_quit', { choice });
      } catch (e) {
        this.handing = null;
        this.quitError = String(e);
      }
      return;
    }
    this.handing = null;
    if (choice === 'cancel') {
      this.quitting = null;
      await this.#backend.call('app_quit', { choice });
      return;
    }
    // The dialog stays, saying the sessions stop, until Mimesis quits.
    this.stopping = true;
    this.quitError = null;
    try {
      await this.#backend.call('app_quit', { choice });
    } catch (e) {
      this.stopping = false;
      this.quitError = String(e);
    }
  }
}
