// P7/P14 resource view: formatting and polling.
import { render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { engineContext } from '../src/lib/app.svelte';
import ResourceView from '../src/components/ResourceView.svelte';
import { formatBytes, formatCpu, formatSecs, formatStart, idleLeft } from '../src/lib/resources';
import { RosterStore } from '../src/lib/store.svelte';
import type { Resources } from '../src/lib/types';
import { MockBackend, flush, session, snapshot } from './helpers';

describe('resource formatting', () => {
  it('bytes in binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(845 * 1024 * 1024)).toBe('845 MB');
    expect(formatBytes(4.1 * 1024 ** 3)).toBe('4.1 GB');
    expect(formatBytes(-1)).toBe('—');
    expect(formatBytes(null)).toBe('—');
  });

  it('durations, CPU and idle time left', () => {
    expect(formatSecs(45)).toBe('45 s');
    expect(formatSecs(725)).toBe('12 min 5 s');
    expect(formatSecs(3 * 3600 + 4 * 60)).toBe('3 h 04 min');
    expect(formatSecs(2 * 86400 + 3 * 3600)).toBe('2 d 3 h');
    expect(formatSecs(NaN)).toBe('—');
    expect(formatCpu(3.14159)).toBe('3.1 %');
    expect(formatCpu(42.6)).toBe('43 %');
    expect(idleLeft(null, 0, 0)).toBe('—');
    expect(idleLeft(300, 1000, 61_000)).toBe('4 min');
    expect(idleLeft(30, 0, 90_000)).toBe('0 s');
    // The session's idle deadline wins: the same figure as its header's "idle suspend in …".
    expect(idleLeft(null, 0, 60_000, new Date(660_000).toISOString())).toBe('10 min');
  });

  it('start times: clock time today, date and minute otherwise', () => {
    const now = new Date(2026, 10, 1, 15, 0, 0).getTime();
    expect(formatStart(new Date(2026, 10, 1, 14, 3, 7).toISOString(), now)).toBe('14:03:07');
    expect(formatStart(new Date(2026, 9, 30, 9, 5, 0).toISOString(), now)).toBe('30 Oct 2026, 09:05');
    expect(formatStart(null, now)).toBe('—');
  });
});

describe('ResourceView', () => {
  it('lists the rows with their numbers and the counters, and polls', async () => {
    let reads = 0;
    const data: Resources = {
      rows: [
        { sessionId: 's1', cwd: '/home/me/proj', pid: 4242, startedAt: new Date().toISOString(), uptimeSecs: 125, rssBytes: 300 * 1024 * 1024, cpuPercent: 12.5, state: 'running', idleRemainingSecs: 420, recoveryCount: 2 },
        { sessionId: 's2', cwd: '/home/me/other', pid: null, startedAt: null, uptimeSecs: 0, rssBytes: 0, cpuPercent: 0, state: 'suspended', idleRemainingSecs: null, recoveryCount: 0 },
      ],
      metrics: { rssBytes: { s1: 300 * 1024 * 1024 }, zombieProcessesCleanedTotal: 4, orphansKilledTotal: 1, recoveriesTotal: 7, suspensionsTotal: 3, terminationsTotal: 2, restartsTotal: 1 },
    };
    const b = new MockBackend({
      resources: () => {
        reads++;
        return data;
      },
      roster_snapshot: () => snapshot({ seq: 0, sessions: [session('s1', { title: 'Fix the parser' })], roots: [], demo: false }),
    });
    const store = new RosterStore(b);
    await store.start();
    const { container } = render(ResourceView, { props: { store, onopen: () => {}, interval: 30 }, context: engineContext({ backend: b }) });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=resource-row]')).toHaveLength(2));
    const first = container.querySelector('[data-testid=resource-row][data-session-id=s1]') as HTMLElement;
    expect(first.textContent).toContain('Fix the parser');
    expect(first.textContent).toContain('4242');
    expect(first.textContent).toContain('300 MB');
    expect(first.textContent).toContain('13 %');
    expect(first.textContent).toContain('7 min');
    const view = container.querySelector('[data-testid=resource-view]') as HTMLElement;
    expect(view.textContent).toContain('Zombies reaped');
    expect(view.textContent).toContain('Recoveries');
    await waitFor(() => expect(reads).toBeGreaterThan(2));
    await flush();
  });
});
