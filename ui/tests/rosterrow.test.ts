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
