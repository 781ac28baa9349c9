import { render } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import TimelineHeader from '../src/components/TimelineHeader.svelte';
import { session } from './helpers';

it('keeps the pending tool line whether or not a tool is pending, so nothing below moves', () => {
  const line = (s: ReturnType<typeof session>) => {
    const { container, unmount } = render(TimelineHeader, { props: { session: s, total: 3 } });
    const el = container.querySelector('[data-testid=pending-line]');
    const out = el ? (el.textContent ?? '').trim() : null;
    unmount();
    return out;
  };
  expect(line(session('a'))).toBe('');
  expect(line(session('b', { status: 'waiting_for_approval', pendingTool: { tool: 'Bash', target: 'ls' } }))).toBe('Bash · ls');
  const { container } = render(TimelineHeader, { props: { session: session('c'), total: null } });
  expect(container.textContent).toContain('items…');
});

it("a session of a machine that is away is not called live, and its Stop and Resume say why they cannot reach it", async () => {
  const { engineContext } = await import('../src/lib/app.svelte');
  const { default: PtyActions } = await import('../src/components/pty/PtyActions.svelte');
  const { sessionAway } = await import('../src/lib/hosts');
  const hostOf = (state: 'live' | 'unreachable') => ({ host: 'devbox', state, message: state === 'live' ? null : 'ssh: connect refused', lastSeen: '2026-11-29T10:00:00Z', sessions: 1, version: '0.1.0', retryInSecs: null });
  const s = session('devbox:s1', {
    host: 'devbox',
    live: true,
    pid: 77,
    status: 'working',
    supervision: { state: 'running', mode: 'persistent', agent: 'claude', cwd: '/p', pid: 77, processStartedAt: null, createdAt: '2026-11-01T11:00:00.000Z', idleDeadline: null, durationDeadline: null, queuedInputs: 0, lastExitCode: null, terminatedReason: null },
  } as never);
  const view = (state: 'live' | 'unreachable') => {
    const store = { hosts: [hostOf(state)] };
    const context = engineContext({ store, sup: {} } as never);
    const head = render(TimelineHeader, { props: { session: s, total: 1 }, context });
    const actions = render(PtyActions, { props: { session: s }, context });
    const out = {
      live: head.container.querySelector('.live') !== null,
      away: head.container.querySelector('[data-testid=header-away]')?.getAttribute('data-tip') ?? null,
      ended: head.container.querySelector('[data-testid=status-badge]')?.classList.contains('ended') ?? null,
      supervision: head.container.querySelector('[data-testid=supervision-badge]') !== null,
      stop: (actions.container.querySelector('[data-testid=pty-stop]') as HTMLButtonElement).disabled,
      stopTip: actions.container.querySelector('[data-testid=pty-stop]')?.getAttribute('data-tip'),
    };
    head.unmount();
    actions.unmount();
    return out;
  };
  expect(view('live')).toEqual({ live: true, away: null, ended: false, supervision: true, stop: false, stopTip: 'Stop the agent (it can be resumed)' });
  const away = view('unreachable');
  expect(away.live).toBe(false);
  expect(away.ended).toBe(true);
  expect(away.supervision).toBe(false);
  expect(away.stop).toBe(true);
  expect(away.away).toContain('devbox is unreachable: ssh: connect refused');
  expect(away.stopTip).toBe(away.away);
  // A local session, or a machine the list does not know yet, is never called away.
  expect(sessionAway([hostOf('unreachable')], null)).toBeUndefined();
  expect(sessionAway([], 'devbox')).toBeUndefined();
});

it("a supervised session's last exit is a warning while it is the news, not once the session runs again", () => {
  const sup = (state: string, lastExitCode: number | null) =>
    ({ state, mode: 'persistent', agent: 'claude', cwd: '/p', pid: state === 'running' ? 7 : null, processStartedAt: null, createdAt: '2026-11-01T11:00:00.000Z', idleDeadline: null, durationDeadline: null, queuedInputs: 0, lastExitCode, terminatedReason: null }) as never;
  const warned = (state: string, code: number | null) => {
    const { container, unmount } = render(TimelineHeader, { props: { session: session('p', { source: 'pty', supervision: sup(state, code) } as never), total: 1 } });
    const el = container.querySelector('[data-testid=last-exit]');
    const out = el ? el.classList.contains('warn') : null;
    unmount();
    return out;
  };
  expect(warned('terminated', 143)).toBe(true);
  expect(warned('running', 143)).toBe(false);
  expect(warned('terminated', 0)).toBe(false);
  expect(warned('running', null)).toBeNull();
});
