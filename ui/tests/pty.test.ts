// The supervised-session UI on recordings of real supervised sessions (tests/recorded.ts,
// `pty` and `faults`): the stand-in agent under the real supervisor. Each test takes the
// recording as far as it needs, doing what the recording's user did.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import Banners from '../src/components/pty/Banners.svelte';
import { emptyNotices } from '../src/lib/supervision';
import { PROJECT, app, recorded, startSession, supervised, supervision } from './recorded';

/**
 * The recording, played by the test: the session started and its permission approved; the
 * replay then waits before the warning.
 */
async function approved() {
  const b = recorded('pty', { auto: false });
  const a = app(b);
  await b.play();
  const view = await startSession(b);
  await b.play();
  await fireEvent.click(await a.find('[data-testid=approval-bar] [data-testid=approve-once]'));
  return { ...a, b, view, id: view.dataset.sessionId as string };
}

/** Then to the end of the session by its duration limit. */
async function terminated() {
  const a = await approved();
  expect(await a.b.play(supervision('session_terminated'))).toBe(true);
  expect(await a.b.play(supervised('terminated'))).toBe(true);
  await a.find('[data-testid=terminated-dialog]');
  return a;
}

/** Then Resume, the end again, and Start New Session. */
async function startedAgain() {
  const a = await terminated();
  await fireEvent.click(a.q('[data-testid=terminated-resume]') as HTMLElement);
  expect(await a.b.play(supervision('session_terminated'))).toBe(true);
  await fireEvent.click(await a.find('[data-testid=terminated-new]'));
  const fresh = await waitFor(() => {
    const v = a.q('[data-testid=session-view]');
    if (v?.dataset.sessionId === a.id) a.b.step();
    expect(v?.dataset.sessionId).toBeTruthy();
    expect(v?.dataset.sessionId).not.toBe(a.id);
    return v as HTMLElement;
  });
  return { ...a, fresh };
}

const badge = (state: string) => `[data-testid=session-view] [data-testid=supervision-badge][data-state=${state}]`;

describe('supervised sessions in the app', () => {
  it('a started session shows its terminal, badge and actions', async () => {
    const b = recorded('pty');
    const { q, find } = app(b);
    const view = await startSession(b);
    expect(view.textContent).toContain(PROJECT);
    expect(q('[data-testid=terminal]')?.getAttribute('data-session-id')).toBe(view.dataset.sessionId);
    await find(badge('running'));
    for (const id of ['pty-stop', 'pty-resume', 'pty-restart', 'pty-delete']) expect(q(`[data-testid=${id}]`)).not.toBeNull();
    expect((q('[data-testid=pty-resume]') as HTMLButtonElement).disabled).toBe(true);
  });

  it('its permission dialog is answered from the window, by the dialog’s own answer', async () => {
    const { b, q } = await approved();
    await waitFor(() => expect(q('[data-testid=approval-bar]')).toBeNull());
    const asked = b.calls.filter((c) => c.cmd === 'pty_answer' || c.cmd === 'approval_decide');
    expect(asked).toHaveLength(1);
    expect(asked[0].args).toEqual(b.replies(asked[0].cmd as 'pty_answer')[0].args);
  });

  it('shows the duration warning banner with the engine’s message, then the end', async () => {
    const { b, find, q } = await approved();
    expect(await b.play(supervision('session_warning'))).toBe(true);
    const banner = await find('[data-testid=banner][data-kind=session_warning]');
    // The engine's sentence, with the time left as it is now: one number, never two.
    expect(banner.textContent).toMatch(/Session will end in \d+ s(ec(ond)?s?)?\. Save your work\./);
    expect(banner.textContent).not.toContain('left');
    expect(await b.play(supervision('session_terminated'))).toBe(true);
    const dialog = await find('[data-testid=terminated-dialog]');
    expect(dialog.textContent).toContain('Session ended (30-second limit reached).');
    expect(q('[data-testid=terminated-new]')?.textContent?.trim()).toBe('Start New Session');
    expect(q('[data-testid=terminated-resume]')?.textContent?.trim()).toBe('Resume');
    // The roster learns it after the event, in the store's next batch.
    expect(await b.play(supervised('terminated'))).toBe(true);
    await find(badge('terminated'));
  });

  it('terminated: Resume runs it again', async () => {
    const { b, find, q, id } = await terminated();
    await fireEvent.click(q('[data-testid=terminated-resume]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=terminated-dialog]')).toBeNull());
    expect(await b.play(supervised('running'))).toBe(true);
    await find(badge('running'));
    expect(q('[data-testid=session-view]')?.dataset.sessionId).toBe(id);
  });

  it('terminated again: Start New Session starts a fresh one in the same folder and shows it', async () => {
    const { fresh, find, q } = await startedAgain();
    expect(q('[data-testid=terminated-dialog]')).toBeNull();
    expect(fresh.textContent).toContain(PROJECT);
    await find(badge('running'));
  });

  it('a crash is recovered by itself, and the event log says so', async () => {
    const { b, q } = await startedAgain();
    expect(await b.play(supervision('session_recovered'))).toBe(true);
    await fireEvent.click(q('[data-testid=event-log-toggle]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=event-log]')?.textContent).toContain('Session recovered automatically.'));
  });

  it('Delete asks first, then forgets the supervision and shows the plain timeline', async () => {
    const { b, find, q } = await startedAgain();
    await b.play();
    await fireEvent.click(q('[data-testid=pty-delete]') as HTMLElement);
    const confirm = await find('[data-testid=pty-delete-dialog]');
    expect(confirm.textContent).toContain('the transcript stays on disk');
    await fireEvent.click(q('[data-testid=pty-delete-confirm]') as HTMLElement);
    expect(await b.play((ev, p) => ev === 'store:events' && JSON.stringify(p).includes('"supervision":null'))).toBe(true);
    await waitFor(() => expect(q('[data-testid=session-view]')).toBeNull());
    expect(q('[data-testid=timeline]')).not.toBeNull();
  });

  it('a crash while working shows the info banner; recovery waits for the turn to end', async () => {
    const b = recorded('faults', { auto: false });
    const { find, q } = app(b);
    await b.play();
    await startSession(b);
    expect(await b.play(supervision('crash_detected'))).toBe(true);
    const banner = await find('[data-testid=banner][data-kind=crash_detected]');
    expect(banner.textContent).toContain('Crash detected; recovery will run when the current turn ends');
    expect(await b.play(supervision('session_recovered'))).toBe(true);
    await waitFor(() => expect(q('[data-testid=banner][data-kind=crash_detected]')).toBeNull());
  });

  it('a memory restart shows the restarting and ready toasts and logs them', async () => {
    const b = recorded('faults', { auto: false });
    const { find, q } = app(b);
    await b.play();
    await startSession(b);
    expect(await b.play(supervision('session_restarting'))).toBe(true);
    await find('[data-testid=toast][data-kind=session_restarting]');
    expect(await b.play(supervision('session_ready'))).toBe(true);
    const ready = await find('[data-testid=toast][data-kind=session_ready]');
    expect(ready.textContent).toContain('Session restored. You can continue.');
    await fireEvent.click(q('[data-testid=event-log-toggle]') as HTMLElement);
    expect(q('[data-testid=event-log]')?.textContent).toContain('Session restarting to maintain performance.');
  });

  it('unhealthy: an error banner whose Retry restarts the session', async () => {
    const b = recorded('faults', { auto: false });
    const { find, q } = app(b);
    await b.play();
    await startSession(b);
    expect(await b.play(supervision('session_unhealthy'))).toBe(true);
    const banner = await find('[data-testid=banner][data-kind=session_unhealthy]');
    expect(banner.textContent).toContain('Automatic recovery is off');
    expect(await b.play(supervised('unhealthy'))).toBe(true);
    await find(badge('unhealthy'));
    await fireEvent.click([...banner.querySelectorAll('button')].find((x) => x.textContent === 'Retry') as HTMLElement);
    await waitFor(() => expect(b.calls.map((c) => c.cmd)).toContain('pty_restart'));
    await waitFor(() => expect(q('[data-testid=banner][data-kind=session_unhealthy]')).toBeNull());
    expect(await b.play(supervised('running'))).toBe(true);
    await find(badge('running'));
  });

  it('New session: a folder that does not exist is refused with the engine’s sentence, before Start', async () => {
    const { find, q } = app(recorded('pty'));
    await fireEvent.click(await find('[data-testid=new-session-button]'));
    await find('[data-testid=new-session-dialog]');
    await fireEvent.input(q('[data-testid=new-session-cwd]') as HTMLElement, { target: { value: '/nope/x' } });
    await waitFor(() => expect(q('[data-testid=new-session-problem]')?.textContent).toBe('This folder does not exist.'));
    expect((q('[data-testid=new-session-start]') as HTMLButtonElement | null)?.disabled ?? true).toBe(true);
    await fireEvent.keyDown(q('[data-testid=new-session-dialog]') as HTMLElement, { key: 'Escape' });
    await waitFor(() => expect(q('[data-testid=new-session-dialog]')).toBeNull());
  });

  it('Resources lists the running session', async () => {
    const { find, q, id } = await approved();
    await fireEvent.click(q('[data-testid=page-resources]') as HTMLElement);
    const row = await find('[data-testid=resource-view] [data-testid=resource-row]');
    expect(row.textContent).toContain(PROJECT);
    expect(row.outerHTML).toContain(id);
    await fireEvent.click(q('[data-testid=page-sessions]') as HTMLElement);
    await find('[data-testid=session-view]');
  });

  it('New session: the folder is checked as the user types; no start and no resume for a folder that does not exist', async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend, session, snapshot } = await import('./helpers');
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('x', { cwd: '/gone' })], roots: [], demo: false }) });
    const store = new RosterStore(b);
    await store.start();
    const check = async (p: string) => (p === '/gone' ? 'This folder does not exist.' : null);
    const r = render(NewSessionDialog, { props: { store, initialCwd: '/gone', check, oncreate: async () => {}, onclose: () => {} } });
    await waitFor(() => expect(r.container.querySelector('[data-testid=new-session-problem]')?.textContent).toBe('This folder does not exist.'));
    expect((r.container.querySelector('[data-testid=new-session-start]') as HTMLButtonElement | null)?.disabled ?? true).toBe(true);
    expect(r.container.querySelector('[data-testid=new-session-resume-option]')).toBeNull();
    r.unmount();
  });

  it("New session: another machine's sessions in a folder of the same name are not offered to resume here", async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend, session, snapshot } = await import('./helpers');
    const b = new MockBackend({
      roster_snapshot: () =>
        snapshot({
          seq: 0,
          sessions: [session('here', { cwd: '/srv/api', live: false })],
          remote: [session('devbox:there', { cwd: '/srv/api', host: 'devbox', live: false })],
          roots: [],
          demo: false,
        }),
    });
    const store = new RosterStore(b);
    await store.start();
    const r = render(NewSessionDialog, { props: { store, initialCwd: '/srv/api', check: async () => null, oncreate: async () => {}, onclose: () => {} } });
    await waitFor(() => expect(r.container.querySelectorAll('[data-testid=new-session-resume-option]').length).toBe(1));
    expect((r.container.querySelector('[data-testid=new-session-resume-option]') as HTMLInputElement).value).toBe('here');
    r.unmount();
  });

  it('New session: a session that runs already is offered to open, never to resume (which would run it twice)', async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend, session, snapshot } = await import('./helpers');
    const b = new MockBackend({
      roster_snapshot: () =>
        snapshot({
          seq: 0,
          sessions: [
            session('ended', { cwd: '/srv/api', live: false }),
            session('elsewhere', { cwd: '/srv/api', live: true, pid: 4242 }),
            // Claude Code's background service runs it (its row's `kind`): attached to, once the window can.
            Object.assign(session('bg', { cwd: '/srv/api', live: true, pid: 4343 }), { kind: 'background' }),
          ],
          roots: [],
          demo: false,
        }),
    });
    const store = new RosterStore(b);
    await store.start();
    const opened: [string, string][] = [];
    let closed = false;
    const r = render(NewSessionDialog, {
      props: {
        store,
        initialCwd: '/srv/api',
        check: async () => null,
        oncreate: async () => {},
        onopen: (id: string, action: string) => opened.push([id, action]),
        onclose: () => (closed = true),
      },
    });
    await waitFor(() => expect(r.container.querySelectorAll('[data-testid=new-session-live-option]').length).toBe(2));
    const resumable = [...r.container.querySelectorAll('[data-testid=new-session-resume-option]')].map((e) => (e as HTMLInputElement).value);
    expect(resumable).toEqual(['ended']);
    expect(r.container.textContent).not.toContain('live in another terminal');
    const live = r.container.querySelector('[data-testid=new-session-live-option][data-session-id=elsewhere]') as HTMLElement;
    expect(live.textContent).toContain('running in another terminal');
    await fireEvent.click(live.querySelector('[data-testid=new-session-open]') as HTMLElement);
    const bg = r.container.querySelector('[data-testid=new-session-live-option][data-session-id=bg]') as HTMLElement;
    await fireEvent.click(bg.querySelector('[data-testid=new-session-open]') as HTMLElement);
    expect(opened).toEqual([
      ['elsewhere', 'open'],
      ['bg', 'attach'],
    ]);
    expect(closed).toBe(true);
    r.unmount();
  });

  it("New session: Browse… opens the system's folder picker at the typed folder and takes its choice", async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend, snapshot } = await import('./helpers');
    const store = new RosterStore(new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [], roots: [], demo: false }) }));
    await store.start();
    const asked: (string | null)[] = [];
    let answer: string | null = '/home/dana/picked';
    const pick = async (start: string | null) => (asked.push(start), answer);
    const r = render(NewSessionDialog, { props: { store, initialCwd: '/home/dana', pick, oncreate: async () => {}, onclose: () => {} } });
    const input = () => r.container.querySelector('[data-testid=new-session-cwd]') as HTMLInputElement;
    const browse = r.getByRole('button', { name: 'Browse…' });
    await fireEvent.click(browse);
    await waitFor(() => expect(input().value).toBe('/home/dana/picked'));
    expect(asked).toEqual(['/home/dana']);
    // Cancelled: what was there stays.
    answer = null;
    await fireEvent.click(browse);
    await waitFor(() => expect(asked).toHaveLength(2));
    expect(input().value).toBe('/home/dana/picked');
    r.unmount();
  });

});

describe('Banners', () => {
  it('shows the queued note when input was kept for later', () => {
    const { container } = render(Banners, { props: { notices: { ...emptyNotices(), queued: true }, onretry: () => {}, ondismiss: () => {} } });
    expect(container.querySelector('[data-testid=queued-note]')?.textContent).toContain('Queued, will be sent when the session is back');
  });
});
