// The supervised-session UI on the in-browser fake backend: the stories behind its URL switches.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from '../src/App.svelte';
import Banners from '../src/components/pty/Banners.svelte';
import { createFakeBackend } from '../src/lib/fake/fakeBackend';
import { emptyNotices } from '../src/lib/supervision';

function app(query: string) {
  const b = createFakeBackend(new URLSearchParams(query));
  const r = render(App, { props: { connect: () => Promise.resolve(b) } });
  const q = (sel: string) => r.container.querySelector<HTMLElement>(sel);
  const find = (sel: string, timeout = 3000) =>
    waitFor(
      () => {
        const el = document.querySelector<HTMLElement>(sel);
        expect(el).not.toBeNull();
        return el as HTMLElement;
      },
      { timeout },
    );
  return { b, ...r, q, find };
}

describe('supervised sessions in the app', () => {
  it('opens the session asked for by app:open-session, with its terminal, badge and actions', async () => {
    const { find, q } = app('still&pty');
    const view = await find('[data-testid=session-view]');
    expect(q('[data-testid=terminal]')?.getAttribute('data-session-id')).toBe(view.dataset.sessionId);
    expect(q('[data-testid=session-view] [data-testid=supervision-badge]')?.getAttribute('data-state')).toBe('running');
    for (const id of ['pty-stop', 'pty-resume', 'pty-restart', 'pty-delete']) expect(q(`[data-testid=${id}]`)).not.toBeNull();
    expect((q('[data-testid=pty-resume]') as HTMLButtonElement).disabled).toBe(true);
  });

  it('shows the duration warning banner with the engine’s message', async () => {
    const { find } = app('still&warning');
    const banner = await find('[data-testid=banner][data-kind=session_warning]');
    // The engine's sentence, with the time left as it is now: one number, never two.
    expect(banner.textContent).toMatch(/Session will end in 2[34] min( \d+ s)?\. Save your work\./);
    expect(banner.textContent).not.toContain('left');
  });

  it('terminated: the dialog offers exactly Start New Session and Resume; Resume runs it again', async () => {
    const { find, q } = app('still&terminated');
    const dialog = await find('[data-testid=terminated-dialog]');
    expect(dialog.textContent).toContain('Session ended (4-hour limit reached).');
    expect(q('[data-testid=terminated-new]')?.textContent?.trim()).toBe('Start New Session');
    expect(q('[data-testid=terminated-resume]')?.textContent?.trim()).toBe('Resume');
    await waitFor(() => expect(document.querySelector('[data-testid=session-view] [data-testid=supervision-badge]')?.getAttribute('data-state')).toBe('terminated'));
    await fireEvent.click(q('[data-testid=terminated-resume]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=terminated-dialog]')).toBeNull());
    await waitFor(() => expect(q('[data-testid=session-view] [data-testid=supervision-badge]')?.getAttribute('data-state')).toBe('running'));
  });

  it('terminated: Start New Session starts a fresh one in the same folder and shows it', async () => {
    const { find, q } = app('still&terminated');
    await find('[data-testid=terminated-dialog]');
    const old = q('[data-testid=session-view]')?.dataset.sessionId;
    await fireEvent.click(q('[data-testid=terminated-new]') as HTMLElement);
    const fresh = await waitFor(() => {
      const v = q('[data-testid=session-view]');
      expect(v?.dataset.sessionId).toBeTruthy();
      expect(v?.dataset.sessionId).not.toBe(old);
      return v as HTMLElement;
    });
    expect(q('[data-testid=terminated-dialog]')).toBeNull();
    expect(fresh.textContent).toContain('/home/dana/src/mimesis');
    expect(fresh.querySelector('[data-testid=supervision-badge]')?.getAttribute('data-state')).toBe('running');
  });

  it('unhealthy: an error banner whose Retry restarts the session', async () => {
    const { find, q } = app('still&unhealthy');
    const banner = await find('[data-testid=banner][data-kind=session_unhealthy]');
    expect(banner.textContent).toContain('Automatic recovery is off');
    await waitFor(() => expect(q('[data-testid=supervision-badge][data-state=unhealthy]')).not.toBeNull());
    expect(q('[data-testid=supervision-badge]')?.textContent).toContain('one-shot');
    await fireEvent.click([...banner.querySelectorAll('button')].find((x) => x.textContent === 'Retry') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=banner][data-kind=session_unhealthy]')).toBeNull());
    await find('[data-testid=toast][data-kind=session_restarting]');
  });

  it('a deferred crash shows the info banner', async () => {
    const { find } = app('still&crash');
    const banner = await find('[data-testid=banner][data-kind=crash_detected]');
    expect(banner.textContent).toContain('Crash detected; recovery will run when the current turn ends');
  });

  it('a memory restart shows the restarting and ready toasts and logs them', async () => {
    const { find, q } = app('still&toasts');
    await find('[data-testid=toast][data-kind=session_restarting]');
    const ready = await find('[data-testid=toast][data-kind=session_ready]');
    expect(ready.textContent).toContain('Session restored. You can continue.');
    await fireEvent.click(q('[data-testid=event-log-toggle]') as HTMLElement);
    expect(q('[data-testid=event-log]')?.textContent).toContain('Session restarting to maintain performance.');
  });

  it('a /clear moves the selection to the successor, whose timeline shows the boundary', async () => {
    const { b, find, q } = app('still&chain');
    const view = await find('[data-testid=session-view]');
    const first = view.dataset.sessionId;
    await waitFor(() => expect(q('[data-testid=session-view]')?.dataset.sessionId).not.toBe(first), { timeout: 4000 });
    const next = q('[data-testid=session-view]')?.dataset.sessionId as string;
    await fireEvent.click(q('[data-testid=pane-timeline]') as HTMLElement);
    await find('[data-testid=timeline][data-session-id="' + next + '"] [data-testid=timeline-item]');
    expect(q('[data-testid=session-view]')?.textContent).toContain('3 sessions');
    // jsdom lays nothing out, so the list shows its first items: read the boundary from the page instead.
    const page = await b.call('open_timeline', { sessionId: next, tail: 3 });
    expect(page.items.map((i) => i.kind)).toContain('segment');
    expect(page.items.find((i) => i.kind === 'segment')).toMatchObject({ sessionId: next, previousSessionId: first, reason: 'clear' });
  }, 10_000);

  it('Delete asks first, then forgets the supervision and shows the plain timeline', async () => {
    const { find, q } = app('still&pty');
    await find('[data-testid=session-view]');
    await fireEvent.click(q('[data-testid=pty-delete]') as HTMLElement);
    const confirm = await find('[data-testid=pty-delete-dialog]');
    expect(confirm.textContent).toContain('The transcript stays');
    await fireEvent.click(q('[data-testid=pty-delete-confirm]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=session-view]')).toBeNull());
    expect(q('[data-testid=timeline]')).not.toBeNull();
  });

  it('New session: pick a recent folder, see its sessions, start fresh', async () => {
    const { find, q } = app('still');
    await find('[data-testid=roster-row]');
    await fireEvent.click(q('[data-testid=new-session-button]') as HTMLElement);
    const dialog = await find('[data-testid=new-session-dialog]');
    expect(document.activeElement?.getAttribute('data-testid')).toBe('new-session-cwd');
    const chip = [...dialog.querySelectorAll('button')].find((x) => x.textContent === '/home/dana/src/ledger-api') as HTMLElement;
    await fireEvent.click(chip);
    expect((q('[data-testid=new-session-cwd]') as HTMLInputElement).value).toBe('/home/dana/src/ledger-api');
    await waitFor(() => expect(dialog.querySelectorAll('[data-testid=new-session-resume-option]').length).toBeGreaterThan(0));
    await fireEvent.click(q('[data-testid=new-session-start]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=new-session-dialog]')).toBeNull());
    const view = await find('[data-testid=session-view]');
    expect(view.textContent).toContain('/home/dana/src/ledger-api');
  });

  it('New session: a bad folder is refused with the engine’s sentence and the dialog stays', async () => {
    const { find, q } = app('still');
    await find('[data-testid=roster-row]');
    await fireEvent.click(q('[data-testid=new-session-button]') as HTMLElement);
    await find('[data-testid=new-session-dialog]');
    await fireEvent.input(q('[data-testid=new-session-cwd]') as HTMLElement, { target: { value: '/nope/x' } });
    // Start waits for the folder's check (the fake's says nothing), then the engine refuses.
    await waitFor(() => expect((q('[data-testid=new-session-start]') as HTMLButtonElement).disabled).toBe(false));
    await fireEvent.click(q('[data-testid=new-session-start]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=new-session-dialog]')?.textContent).toContain('No such folder: /nope/x'));
    await fireEvent.keyDown(q('[data-testid=new-session-dialog]') as HTMLElement, { key: 'Escape' });
    await waitFor(() => expect(q('[data-testid=new-session-dialog]')).toBeNull());
  });

  it('New session: the folder is checked as the user types; no start and no resume for a folder that does not exist', async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend, session } = await import('./helpers');
    const b = new MockBackend({ roster_snapshot: () => ({ seq: 0, sessions: [session('x', { cwd: '/gone' })], roots: [], demo: false }) });
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
    const { MockBackend, session } = await import('./helpers');
    const b = new MockBackend({
      roster_snapshot: () => ({
        seq: 0,
        sessions: [session('here', { cwd: '/srv/api' })],
        remote: [session('devbox:there', { cwd: '/srv/api', host: 'devbox' })],
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

  it("New session: Browse… opens the system's folder picker at the typed folder and takes its choice", async () => {
    const { default: NewSessionDialog } = await import('../src/components/pty/NewSessionDialog.svelte');
    const { RosterStore } = await import('../src/lib/store.svelte');
    const { MockBackend } = await import('./helpers');
    const store = new RosterStore(new MockBackend({ roster_snapshot: () => ({ seq: 0, sessions: [], roots: [], demo: false }) }));
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

  it('the needs-you indicator counts attention:changed and opens those sessions in turn', async () => {
    const { find, q } = app('still');
    const button = await find('[data-testid=attention]');
    await waitFor(() => expect(Number(button.dataset.count)).toBeGreaterThan(0));
    await fireEvent.click(button);
    const first = await waitFor(() => {
      const id = q('[data-testid=timeline], [data-testid=session-view]')?.dataset.sessionId;
      expect(id).toBeTruthy();
      return id;
    });
    await fireEvent.keyDown(document.body, { key: 'n' });
    await waitFor(() => expect(q('[data-testid=timeline], [data-testid=session-view]')?.dataset.sessionId).not.toBe(first));
  });

  it('Resources and Settings are views of their own', async () => {
    const { find, q } = app('still');
    await find('[data-testid=roster-row]');
    await fireEvent.click(q('[data-testid=page-resources]') as HTMLElement);
    await waitFor(() => expect(q('[data-testid=resource-view] [data-testid=resource-row]')).not.toBeNull());
    await fireEvent.click(q('[data-testid=page-settings]') as HTMLElement);
    await find('[data-testid=settings-view] [data-field="limits.maxDurationSecs"]');
    await fireEvent.click(q('[data-testid=page-sessions]') as HTMLElement);
    await find('[data-testid=roster-row]');
  });
});

describe('Banners', () => {
  it('shows the queued note when input was kept for later', () => {
    const { container } = render(Banners, { props: { notices: { ...emptyNotices(), queued: true }, onretry: () => {}, ondismiss: () => {} } });
    expect(container.querySelector('[data-testid=queued-note]')?.textContent).toContain('Queued, will be sent when the session is back');
  });
});
