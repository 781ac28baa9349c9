// Claude Code's background sessions in the window: the row's job, the pane (its job, Stop /
// Respawn / Remove through Claude Code's verbs, the embedded terminal by attach, detached
// when the pane closes), and "New session" in the background.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from '../src/App.svelte';
import NewSessionDialog from '../src/components/pty/NewSessionDialog.svelte';
import { canAttach, isBackground, jobLine, jobStateWord, jobTitle } from '../src/lib/background';
import { RosterStore } from '../src/lib/store.svelte';
import type { TrackedSession } from '../src/lib/types';
import { MockBackend, flush, session, snapshot } from './helpers';

const SID = 'aa2e1246-11cc-48b1-aa61-76af4aa5d5aa';
type Job = NonNullable<TrackedSession['job']>;
const job = (over: Partial<Job> = {}): Job => ({ id: 'aa2e1246', state: 'working', detail: 'Writing bg', intent: 'write bg', attempt: 1, ...over });
const bgRow = (over: Partial<TrackedSession> = {}) => session(SID, { kind: 'background', job: job(), status: 'working', ...over });

describe('what a row shows of a job', () => {
  it('its state in words, what it does or waits for, and the service’s attempts', () => {
    expect(jobStateWord(job(), true)).toBe('working');
    expect(jobStateWord(job({ state: 'blocked' }), true)).toBe('needs you');
    expect(jobStateWord(job({ state: 'done' }), false)).toBe('stopped · done');
    expect(jobStateWord(job({ state: null }), true)).toBe('unknown');
    expect(jobLine(job({ needs: 'approve Bash: ls' }))).toBe('approve Bash: ls');
    expect(jobLine(job({ detail: null }))).toBeNull();
    const title = jobTitle(job({ attempt: 3 }), false);
    expect(title).toContain('aa2e1246 (stopped)');
    expect(title).toContain('attempt 3');
    expect(title).toContain('prompt: write bg');
  });

  it('only a running background session can be attached to', () => {
    expect(isBackground(bgRow())).toBe(true);
    expect(isBackground(session('x'))).toBe(false);
    expect(isBackground(session('x', { kind: 'background', job: null }))).toBe(false);
    expect(canAttach(bgRow())).toBe(true);
    expect(canAttach(bgRow({ live: false }))).toBe(false);
  });
});

/** The app on a roster of one background session, with Claude Code's verbs answered. */
function mount(row: TrackedSession) {
  const said: Record<string, string> = { bg_stop: 'stopped aa2e1246', bg_respawn: 'restarted aa2e1246', bg_remove: 'removed aa2e1246' };
  const b = new MockBackend({
    roster_snapshot: () => snapshot({ sessions: [row] }),
    roster_listening: () => null,
    open_timeline: ({ sessionId }) => ({ sessionId, total: 0, start: 0, items: [], waiting: false, seq: 0 }),
    close_timeline: () => null,
    set_viewing: () => null,
    approvals_pending: () => [],
    settings_get: () => {
      throw new Error('not needed');
    },
    bg_attach: () => null,
    bg_detach: () => null,
    pty_attach: () => ({ cols: 120, rows: 40, attachment: 1 }),
    pty_detach: () => null,
    pty_resize: () => null,
    pty_ack: () => null,
    gpu_available: () => false,
    bg_stop: () => said.bg_stop,
    bg_respawn: () => said.bg_respawn,
    bg_remove: () => said.bg_remove,
  });
  const r = render(App, { props: { connect: () => Promise.resolve(b) } });
  const q = (sel: string) => r.container.querySelector<HTMLElement>(sel);
  const find = (sel: string) =>
    waitFor(() => {
      const e = q(sel);
      expect(e).not.toBeNull();
      return e as HTMLElement;
    });
  return { b, q, find, ...r };
}

describe('a background session in the window', () => {
  it('its row shows its job; opened, it attaches in the embedded terminal and detaches when closed', async () => {
    const { b, q, find, unmount } = mount(bgRow({ job: job({ attempt: 2 }) }));
    const row = await find('[data-testid=roster-row]');
    expect(row.dataset.kind).toBe('background');
    expect(q('[data-testid=job-tag]')?.textContent).toContain('bg · working');
    expect(q('[data-testid=job-attempt]')?.textContent).toContain('attempt 2');
    expect(q('[data-testid=job-line]')?.textContent).toBe('Writing bg');
    await fireEvent.click(row);
    const view = await find('[data-testid=background-view]');
    expect(view.dataset.sessionId).toBe(SID);
    expect(q('[data-testid=bg-job]')?.textContent).toContain('aa2e1246');
    await waitFor(() => expect(b.count('bg_attach')).toBe(1));
    expect(b.calls.find((c) => c.cmd === 'bg_attach')?.args).toMatchObject({ sessionId: SID });
    // Attached: the terminal shows it through the ordinary terminal commands.
    await find(`[data-testid=terminal][data-session-id="${SID}"]`);
    expect(b.count('bg_detach')).toBe(0);
    unmount();
    await flush();
    expect(b.count('bg_detach')).toBe(1);
  });

  it('the timeline mode leaves the session: detached, still running', async () => {
    const { b, find } = mount(bgRow());
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await waitFor(() => expect(b.count('bg_attach')).toBe(1));
    await fireEvent.click(await find('[data-testid=bg-pane-timeline]'));
    await waitFor(() => expect(b.count('bg_detach')).toBe(1));
    expect(b.count('bg_stop')).toBe(0);
  });

  it('a stopped one is shown, not attached (that would start it), and can be respawned', async () => {
    const { b, q, find } = mount(bgRow({ live: false, status: 'idle', job: job({ state: 'done' }) }));
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await find('[data-testid=background-view]');
    await flush();
    expect(b.count('bg_attach')).toBe(0);
    expect(q('[data-testid=bg-pane-terminal]')).toBeNull();
    expect((q('[data-testid=bg-stop]') as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.click(q('[data-testid=bg-respawn]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=bg-said]')?.textContent).toBe('restarted aa2e1246'));
    expect(b.calls.find((c) => c.cmd === 'bg_respawn')?.args).toEqual({ sessionId: SID });
  });

  it('Stop says what Claude Code said; Remove asks first', async () => {
    const { b, q, find } = mount(bgRow());
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await fireEvent.click(await find('[data-testid=bg-stop]'));
    await waitFor(() => expect(q('[data-testid=bg-said]')?.textContent).toBe('stopped aa2e1246'));
    await fireEvent.click(q('[data-testid=bg-remove]') as HTMLElement);
    await find('[data-testid=bg-remove-dialog]');
    expect(b.count('bg_remove')).toBe(0);
    await fireEvent.click(q('[data-testid=bg-remove-confirm]') as HTMLElement);
    await waitFor(() => expect(b.count('bg_remove')).toBe(1));
  });

  it('a refusal is shown as the engine’s sentence', async () => {
    const { b, q, find } = mount(bgRow());
    b.handlers.bg_stop = () => {
      throw new Error('claude stop aa2e1246 failed: No session matching');
    };
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await fireEvent.click(await find('[data-testid=bg-stop]'));
    await waitFor(() => expect(q('[data-testid=bg-said]')?.textContent).toContain('No session matching'));
    expect(q('[data-testid=bg-said]')?.classList.contains('failed')).toBe(true);
  });
});

describe('New session in the background', () => {
  function dialog() {
    const store = new RosterStore(new MockBackend());
    store.applySnapshot(snapshot({ sessions: [] }));
    const started: { cwd: string; prompt: string }[] = [];
    const supervised: string[] = [];
    const r = render(NewSessionDialog, {
      props: {
        store,
        initialCwd: '/home/me/proj',
        oncreate: async (cwd: string) => {
          supervised.push(cwd);
        },
        onbackground: async (cwd: string, prompt: string) => {
          started.push({ cwd, prompt });
        },
        onclose: () => {},
      },
    });
    const q = (sel: string) => document.body.querySelector<HTMLElement>(sel);
    return { ...r, q, started, supervised };
  }

  it('offers the background beside supervised; it needs a prompt, then starts there', async () => {
    const { q, started, supervised } = dialog();
    expect(q('[data-testid=new-session-prompt]')).toBeNull();
    await fireEvent.click(q('[data-testid=new-session-background]') as HTMLElement);
    const prompt = q('[data-testid=new-session-prompt]') as HTMLTextAreaElement;
    expect(prompt).not.toBeNull();
    expect(q('[data-testid=new-session-fresh]')).toBeNull();
    const start = q('[data-testid=new-session-start]') as HTMLButtonElement;
    await waitFor(() => expect(start.disabled).toBe(false));
    expect(start.textContent).toContain('in the background');
    await fireEvent.click(start);
    await waitFor(() => expect(q('[role=alert]')?.textContent).toContain('starts with a prompt'));
    expect(started).toEqual([]);
    await fireEvent.input(prompt, { target: { value: '  fix the flaky test  ' } });
    await fireEvent.click(start);
    await waitFor(() => expect(started).toEqual([{ cwd: '/home/me/proj', prompt: 'fix the flaky test' }]));
    expect(supervised).toEqual([]);
  });
});

describe('a confirmation opened from inside a pane', () => {
  it('can be used: the page around it is inert, not the modal', async () => {
    const { q, find } = mount(bgRow());
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await fireEvent.click(await find('[data-testid=bg-remove]'));
    const dialog = await find('[data-testid=bg-remove-dialog]');
    const inertAbove = (e: HTMLElement | null): boolean => !!e && (e.inert || inertAbove(e.parentElement));
    expect(inertAbove(dialog)).toBe(false);
    expect(inertAbove(q('[data-testid=roster-row]'))).toBe(true);
    expect(inertAbove(q('[data-testid=bg-stop]'))).toBe(true);
    await fireEvent.click(q('[data-testid=bg-remove-confirm]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=bg-remove-dialog]')).toBeNull());
    expect(inertAbove(q('[data-testid=roster-row]'))).toBe(false);
  });
});

describe('a background session ended by the duration limit', () => {
  it('Resume respawns it through Claude Code; Start New Session asks for a prompt in its folder', async () => {
    const { b, find } = mount(bgRow({ live: false, status: 'idle', job: job({ state: 'done' }) }));
    b.handlers.pty_resume = () => {
      throw new Error('a background session is not resumed by the supervisor');
    };
    await fireEvent.click(await find('[data-testid=roster-row]'));
    await find('[data-testid=background-view]');
    const terminated = {
      type: 'session_terminated',
      sessionId: SID,
      at: '2026-11-01T12:00:00.000Z',
      reason: 'duration_limit',
      message: 'Session ended (40-second limit reached).',
      resumeSessionId: SID,
    } as const;
    b.fire('supervision:event', terminated);
    await fireEvent.click(await find('[data-testid=terminated-resume]'));
    await waitFor(() => expect(b.count('bg_respawn')).toBe(1));
    expect(b.count('pty_resume')).toBe(0);
    b.fire('supervision:event', terminated);
    await fireEvent.click(await find('[data-testid=terminated-new]'));
    await find('[data-testid=new-session-dialog]');
    expect((document.querySelector('[data-testid=new-session-cwd]') as HTMLInputElement).value).toBe('/home/me/proj');
    expect(b.count('pty_create')).toBe(0);
  });
});
