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

it('a relative time wakes the page only when its text changes, never on a one-second beat', async () => {
  const { vi } = await import('vitest');
  const { flushSync } = await import('svelte');
  vi.useFakeTimers({ now: Date.parse('2026-11-25T12:00:00.000Z') });
  try {
    const at = (ago: number) => new Date(Date.now() - ago).toISOString();
    const row = (ago: number) => render(RosterRow, { props: { session: session('t', { lastActivityAt: at(ago) }), selected: false, open: false, onpick: () => {} } });
    /** Runs the one pending timer (the page's next wake-up); how long after now it came. */
    const nextWake = () => {
      const t = Date.now();
      vi.advanceTimersToNextTimer();
      flushSync();
      return Date.now() - t;
    };
    // Active 10 s ago (a session that just asked for approval): "just now", and the page's one
    // wake-up is when that becomes "1 min ago", 50 s on. A count of seconds redrew the window
    // every second for that minute: 1.4 % of a core (issue 37 §5).
    const recent = row(10_000);
    expect(recent.container.textContent).toContain('just now');
    expect(vi.getTimerCount()).toBe(1);
    expect(nextWake()).toBe(50_000);
    expect(recent.container.textContent).toContain('1 min ago');
    recent.unmount();
    expect(vi.getTimerCount()).toBe(0);

    // "3 min ago" (3 min 10 s): the one timer is due when it becomes "4 min ago", 50 s on.
    const minutes = row(190_000);
    expect(minutes.container.textContent).toContain('3 min ago');
    expect(vi.getTimerCount()).toBe(1);
    expect(nextWake()).toBe(50_000);
    expect(minutes.container.textContent).toContain('4 min ago');
    minutes.unmount();
    expect(vi.getTimerCount()).toBe(0);

    // "3 d ago": its text changes in a day; the page wakes at most hourly (a machine that slept).
    const old = row(3 * 86_400_000);
    expect(old.container.textContent).toContain('3 d ago');
    expect(vi.getTimerCount()).toBe(1);
    expect(nextWake()).toBe(3_600_000);
    expect(old.container.textContent).toContain('3 d ago');
    expect(vi.getTimerCount()).toBe(1);
    // The window coming back into focus refreshes it at once (after a sleep, a day later).
    vi.setSystemTime(Date.now() + 86_400_000);
    window.dispatchEvent(new Event('focus'));
    flushSync();
    expect(old.container.textContent).toContain('4 d ago');
    old.unmount();
    expect(vi.getTimerCount()).toBe(0);
  } finally {
    vi.useRealTimers();
  }
});

it('a session a quit of Mimesis interrupted is marked on its own row, whose Resume resumes it without opening the row', async () => {
  const { fireEvent } = await import('@testing-library/svelte');
  let picked = 0;
  let resumed = 0;
  const { container, getByTestId } = render(RosterRow, {
    props: { session: session('int', { status: 'idle' }), selected: false, open: false, onpick: () => picked++, onresume: () => resumed++ },
  });
  expect(getByTestId('interrupted-mark').textContent).toBe('interrupted — Resume');
  await fireEvent.click(getByTestId('row-resume'));
  expect([resumed, picked]).toEqual([1, 0]);
  const plain = render(RosterRow, { props: { session: session('ok', { status: 'idle' }), selected: false, open: false, onpick: () => {} } });
  expect(plain.container.querySelector('[data-testid=interrupted-mark]')).toBeNull();
  expect(container.querySelector('[data-testid=row-resume]')).not.toBeNull();
});

it('a row of a machine that is away shows no live dot and no live badge: what it shows is the last state seen', () => {
  const s = session('devbox:r', { host: 'devbox', live: true, pid: 9, status: 'working' });
  const look = (hostAway?: string) => {
    const { container, unmount } = render(RosterRow, { props: { session: s, selected: false, open: false, onpick: () => {}, hostAway } });
    const out = {
      dot: container.querySelector('.live-dot') !== null,
      ended: container.querySelector('[data-testid=status-badge]')?.classList.contains('ended'),
      away: container.querySelector('[data-testid=host-badge]')?.getAttribute('data-away') ?? null,
    };
    unmount();
    return out;
  };
  expect(look()).toEqual({ dot: true, ended: false, away: null });
  expect(look('devbox is unreachable. This is the last state seen.')).toEqual({ dot: false, ended: true, away: 'true' });
});
