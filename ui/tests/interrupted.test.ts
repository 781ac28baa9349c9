// Issue 37: the banner that resumes the sessions a quit or a crash interrupted, and the
// question a quit with supervised sessions running asks.
import { describe, expect, it } from 'vitest';
import { fireEvent, render } from '@testing-library/svelte';
import ResumeBanner from '../src/components/ResumeBanner.svelte';
import QuitDialog from '../src/components/QuitDialog.svelte';
import { InterruptedSessions, handingText, quitText, resumeAllText, stoppingText } from '../src/lib/interrupted.svelte';
import type { Interrupted } from '../src/lib/types';
import { MockBackend, flush } from './helpers';

const at = '2026-11-01T12:00:00.000Z';
const marks: Interrupted[] = [
  { sessionId: 'aaaa1111', cwd: '/p/a', at, by: 'quit' },
  { sessionId: 'bbbb2222', cwd: '/p/b', at, by: 'crash' },
  { sessionId: 'cccc3333', cwd: '/p/c', at, by: 'signal' },
];

function setup(fail: string[] = []) {
  const resumed: [string, string][] = [];
  const b = new MockBackend({
    sessions_interrupted: () => marks,
    interrupted_dismiss: () => null,
    app_quit: () => null,
  });
  const shown: string[] = [];
  const i = new InterruptedSessions(
    b,
    async (cwd, id) => {
      if (fail.includes(id)) throw new Error('No conversation found');
      resumed.push([cwd, id]);
    },
    (id) => shown.push(id),
  );
  return { b, i, resumed, shown };
}

describe('the resume banner', () => {
  it('says how many were running and resumes them all with one click, through the roster’s resume', async () => {
    const { i, resumed } = setup();
    await i.start();
    const r = render(ResumeBanner, { interrupted: i, label: (id: string) => id.slice(0, 4) });
    const all = r.getByTestId('resume-all');
    expect(all.textContent).toBe('Resume the 3 sessions that were running');
    expect(r.getAllByTestId('resume-one').map((e) => e.textContent)).toEqual(['Resume aaaa', 'Resume bbbb', 'Resume cccc']);
    await fireEvent.click(all);
    await flush();
    expect(resumed).toEqual([['/p/a', 'aaaa1111'], ['/p/b', 'bbbb2222'], ['/p/c', 'cccc3333']]);
    expect(r.queryByTestId('resume-banner')).toBeNull();
  });

  it('keeps offering one whose resume failed, and says why', async () => {
    const { i, resumed } = setup(['bbbb2222']);
    await i.start();
    const r = render(ResumeBanner, { interrupted: i, label: (id: string) => id });
    await fireEvent.click(r.getByTestId('resume-all'));
    await flush();
    expect(resumed.map(([, id]) => id)).toEqual(['aaaa1111', 'cccc3333']);
    expect(r.getByTestId('resume-all').textContent).toBe('Resume the session that was running');
    // One left: named once, one button.
    expect(r.getByTestId('resume-what').textContent).toBe('Mimesis ended while “bbbb2222” was running.');
    expect(r.queryAllByTestId('resume-one')).toHaveLength(0);
    expect(r.getByRole('alert').textContent).toContain('No conversation found');
  });

  it('one session alone resumes from its own button and is shown; Dismiss forgets the rest', async () => {
    const { b, i, resumed, shown } = setup();
    await i.start();
    const r = render(ResumeBanner, { interrupted: i, label: (id: string) => id });
    await fireEvent.click(r.getAllByTestId('resume-one')[1]);
    await flush();
    expect(resumed).toEqual([['/p/b', 'bbbb2222']]);
    expect(shown).toEqual(['bbbb2222']);
    await fireEvent.click(r.getByTestId('resume-dismiss'));
    await flush();
    expect(b.calls.at(-1)).toEqual({ cmd: 'interrupted_dismiss', args: { sessionIds: ['aaaa1111', 'cccc3333'] } });
    expect(r.queryByTestId('resume-banner')).toBeNull();
  });

  it('one resumed another way (its row’s Resume) leaves the banner', async () => {
    const { b, i } = setup();
    await i.start();
    const r = render(ResumeBanner, { interrupted: i, label: (id: string) => id });
    b.fire('supervision:event', { type: 'session_started', sessionId: 'bbbb2222', at });
    await flush();
    expect(r.getByTestId('resume-all').textContent).toBe('Resume the 2 sessions that were running');
  });

  it('shows nothing when nothing was interrupted', async () => {
    const b = new MockBackend({ sessions_interrupted: () => [] });
    const i = new InterruptedSessions(b, async () => {});
    await i.start();
    const r = render(ResumeBanner, { interrupted: i, label: (id: string) => id });
    expect(r.queryByTestId('resume-banner')).toBeNull();
    expect(resumeAllText(1)).toBe('Resume the session that was running');
  });
});

describe('the quit dialog', () => {
  it('asks when the app says sessions run; Stop answers stop, Cancel answers cancel', async () => {
    const { b, i } = setup();
    await i.start();
    b.fire('app:quit-requested', { running: 2, handOver: false });
    expect(i.quitting).toBe(2);
    let stopped = 0;
    let cancelled = 0;
    const r = render(QuitDialog, { running: 2, onstop: () => stopped++, oncancel: () => cancelled++ });
    expect(r.getByTestId('quit-dialog').textContent).toContain(quitText(2));
    expect(quitText(2)).toBe('2 supervised sessions are running. Quitting stops them; the next start of Mimesis offers to resume them.');
    await fireEvent.click(r.getByTestId('quit-stop'));
    await fireEvent.click(r.getByTestId('quit-cancel'));
    expect([stopped, cancelled]).toEqual([1, 1]);
    await i.answerQuit('stop');
    expect(b.calls.at(-1)).toEqual({ cmd: 'app_quit', args: { choice: 'stop' } });
    // The dialog stays while they stop (the app quits after), with nothing left to choose,
    // and Escape does not take it away.
    expect([i.quitting, i.stopping]).toEqual([2, true]);
    r.unmount();
    let closed = 0;
    const stopping = render(QuitDialog, { running: 2, stopping: true, onstop: () => closed++, oncancel: () => closed++ });
    expect(stopping.getByTestId('quit-stopping').textContent).toBe(stoppingText(2));
    expect(stoppingText(1)).toBe('Stopping the session… Mimesis quits once it has stopped.');
    expect(stopping.queryByTestId('quit-stop')).toBeNull();
    expect(stopping.queryByTestId('quit-cancel')).toBeNull();
    await fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(closed).toBe(0);
    await i.answerQuit('cancel');
    expect(i.quitting).toBeNull();
  });

  it('says why a stop could not quit, and asks again', async () => {
    const { b, i } = setup();
    await i.start();
    b.fire('app:quit-requested', { running: 1, handOver: false });
    b.handlers.app_quit = () => {
      throw 'Mimesis is still starting; try again';
    };
    await i.answerQuit('stop');
    expect([i.stopping, i.quitError]).toEqual([false, 'Mimesis is still starting; try again']);
  });

  it('offers the hand-over only when the installed Claude Code can continue them in its service', async () => {
    const { b, i } = setup();
    await i.start();
    b.fire('app:quit-requested', { running: 1, handOver: false });
    expect(i.handOver).toBe(false);
    const without = render(QuitDialog, { running: 1, handOver: i.handOver, onstop: () => {}, oncancel: () => {} });
    expect(without.queryByTestId('quit-handover')).toBeNull();
    // One session is "it".
    expect(without.getByTestId('quit-stop').textContent).toBe('Stop it and quit');
    without.unmount();
    b.fire('app:quit-requested', { running: 2, handOver: true });
    let handed = 0;
    const r = render(QuitDialog, { running: 2, handOver: i.handOver, onstop: () => {}, onhandover: () => handed++, oncancel: () => {} });
    expect(r.getByTestId('quit-handover').textContent).toBe("Hand them to Claude Code's background service");
    expect(r.getByTestId('quit-handover-text').textContent).toContain('each is handed over when its current turn ends');
    await fireEvent.click(r.getByTestId('quit-handover'));
    expect(handed).toBe(1);
  });

  it('a hand-over keeps the dialog and says how it goes until Mimesis quits; Stop quits at once', async () => {
    const { b, i } = setup();
    await i.start();
    b.fire('app:quit-requested', { running: 2, handOver: true });
    await i.answerQuit('handover');
    expect(b.calls.at(-1)).toEqual({ cmd: 'app_quit', args: { choice: 'handover' } });
    expect(i.quitting).toBe(2);
    b.fire('app:handover', { waiting: 1, handed: 1, failed: 0, ended: 0, errors: [] });
    expect(i.handing?.handed).toBe(1);
    let stopped = 0;
    const r = render(QuitDialog, { running: 2, handOver: true, handing: i.handing, onstop: () => stopped++, oncancel: () => {} });
    expect(r.getByTestId('quit-handing').textContent).toBe('1 still working (handed over when its turn ends) · 1 handed over');
    expect(r.queryByTestId('quit-cancel')).toBeNull();
    expect(r.queryByTestId('quit-handover')).toBeNull();
    await fireEvent.click(r.getByTestId('quit-stop'));
    expect(stopped).toBe(1);
    expect(handingText({ waiting: 0, handed: 0, failed: 1, ended: 2, errors: ['x'] })).toBe(
      '1 could not be handed over (offered for resume at the next start) · 2 ended by themselves',
    );
  });

  it('a refused hand-over says why and asks again', async () => {
    const b = new MockBackend({
      sessions_interrupted: () => [],
      app_quit: () => {
        throw new Error('the installed Claude Code cannot continue sessions in its background service');
      },
    });
    const i = new InterruptedSessions(b, async () => {});
    await i.start();
    b.fire('app:quit-requested', { running: 1, handOver: true });
    await i.answerQuit('handover');
    expect(i.handing).toBeNull();
    expect(i.quitting).toBe(1);
    expect(i.quitError).toContain('cannot continue sessions');
  });
});
