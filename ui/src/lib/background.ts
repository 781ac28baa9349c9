// Claude Code's background sessions (2.1.332's service) in the window: what a row shows of
// its job, and the commands that act on one through Claude Code's own verbs (docs/ipc.md
// "Acting on sessions"): `bg_create` (claude --bg), `bg_attach` / `bg_detach` (claude
// attach in the embedded terminal; Ctrl+Z leaves it running), `bg_stop`, `bg_respawn`,
// `bg_remove`. Nothing here owns DOM.

import type { Backend } from './backend';
import type { TrackedSession } from './types';

type Job = NonNullable<TrackedSession['job']>;

/** A row of a background session of the service (its job known). */
export function isBackground(s: TrackedSession | null | undefined): s is TrackedSession & { job: Job } {
  return !!s && s.kind === 'background' && !!s.job;
}

/** Its terminal can be opened: the service runs it (attaching to a stopped one would start it again). */
export function canAttach(s: TrackedSession): boolean {
  return isBackground(s) && s.live;
}

const STATE_WORDS: Record<string, string> = {
  working: 'working',
  blocked: 'needs you',
  done: 'done',
  failed: 'failed',
  idle: 'idle',
};

/** The job's state in a word or two, as the row's tag shows it. */
export function jobStateWord(job: Job, live: boolean): string {
  const word = job.state ? (STATE_WORDS[job.state] ?? job.state) : 'unknown';
  return live ? word : `stopped · ${word}`;
}

/** One line about what the job does now: what it waits for, else its detail. */
export function jobLine(job: Job): string | null {
  return job.needs ?? job.detail ?? null;
}

/** The tag's tooltip: the service's words, its prompt and its attempts. */
export function jobTitle(job: Job, live: boolean): string {
  const parts = [`Claude Code's background session ${job.id}${live ? '' : ' (stopped)'}`];
  if (job.state) parts.push(`state: ${job.state}`);
  const line = jobLine(job);
  if (line) parts.push(line);
  if (job.intent) parts.push(`prompt: ${job.intent}`);
  if ((job.attempt ?? 1) > 1) parts.push(`restarted by the service after a crash (attempt ${job.attempt})`);
  return parts.join('\n');
}

/** Claude Code's verbs for one background session, through the engine. */
export class BackgroundControl {
  constructor(private readonly backend: Backend) {}

  /** `claude --bg PROMPT` in `cwd`; the new session's id. Throws the engine's sentence. */
  async create(cwd: string, prompt: string, permissionMode: string | null = null): Promise<string> {
    const r = await this.backend.call('bg_create', { cwd, prompt, permissionMode });
    return r.sessionId;
  }

  /** Opens the session in a terminal of the window's (`claude attach`), sized as shown. */
  async attach(sessionId: string, size: { cols: number; rows: number } | null): Promise<void> {
    await this.backend.call('bg_attach', { sessionId, cols: size?.cols ?? null, rows: size?.rows ?? null });
  }

  /** Leaves it (Ctrl+Z): the session goes on. */
  async detach(sessionId: string): Promise<void> {
    await this.backend.call('bg_detach', { sessionId });
  }

  /** Each returns Claude Code's line (`stopped 1a2b3c4d`). */
  stop(sessionId: string): Promise<string> {
    return this.backend.call('bg_stop', { sessionId });
  }

  respawn(sessionId: string): Promise<string> {
    return this.backend.call('bg_respawn', { sessionId });
  }

  remove(sessionId: string): Promise<string> {
    return this.backend.call('bg_remove', { sessionId });
  }
}
