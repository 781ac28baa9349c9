import { render } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import RosterRow from '../src/components/RosterRow.svelte';
import type { Supervision } from '../src/lib/types';
import { session } from './helpers';

const sup = (state: Supervision['state'], pid: number | null): Supervision =>
  ({ state, mode: 'persistent', agent: 'claude', cwd: '/p', pid, processStartedAt: null, createdAt: '2026-11-01T11:00:00.000Z',
    recoveryCount: 0, restartCount: 0, consecutiveCrashes: 0, pendingCrashRecovery: false, awaitingPermission: false,
    idleDeadline: null, durationDeadline: null, queuedInputs: 0, lastExitCode: null, terminatedReason: null }) as Supervision;

it('a row carries one state: the process state of a supervised session that is not running, else its status', () => {
  const pills = (s: ReturnType<typeof session>) => {
    const { container, unmount } = render(RosterRow, { props: { session: s, selected: false, open: false, onpick: () => {} } });
    const found = [...container.querySelectorAll('[data-testid=status-badge], [data-testid=supervision-badge]')].map((e) => e.textContent?.trim());
    unmount();
    return found;
  };
  expect(pills(session('a', { status: 'idle' }))).toEqual(['Idle']);
  expect(pills(session('b', { status: 'idle', source: 'pty', supervision: sup('terminated', null) }))).toEqual(['Terminated']);
  expect(pills(session('c', { status: 'waiting_for_input', source: 'pty', supervision: sup('running', 7) }))).toEqual(['Needs input']);
});

it('shows no branch for a detached or unknown HEAD', () => {
  const { container } = render(RosterRow, { props: { session: session('d', { branch: 'HEAD' }), selected: false, open: false, onpick: () => {} } });
  expect(container.textContent).not.toContain('HEAD');
});

it('relative times tick every second only while one is shown to the second; older ones every 30 s', async () => {
  const { vi } = await import('vitest');
  const { flushSync } = await import('svelte');
  vi.useFakeTimers({ now: Date.parse('2026-11-25T12:00:00.000Z') });
  try {
    const at = (ago: number) => new Date(Date.now() - ago).toISOString();
    const row = (ago: number) => render(RosterRow, { props: { session: session('t', { lastActivityAt: at(ago) }), selected: false, open: false, onpick: () => {} } });
    const recent = row(10_000);
    expect(recent.container.textContent).toContain('10 s ago');
    vi.advanceTimersByTime(1000);
    flushSync();
    expect(recent.container.textContent).toContain('11 s ago');
    recent.unmount();
    expect(vi.getTimerCount()).toBe(0);

    const old = row(3 * 86_400_000);
    expect(old.container.textContent).toContain('3 d ago');
    expect(vi.getTimerCount()).toBe(1);
    // The one timer is the 30-second one: nothing runs in the next 29 s.
    expect(vi.advanceTimersToNextTimer()).toBeDefined();
    expect(Date.now() - Date.parse('2026-11-25T12:00:01.000Z')).toBe(30_000);
    old.unmount();
    expect(vi.getTimerCount()).toBe(0);
  } finally {
    vi.useRealTimers();
  }
});
