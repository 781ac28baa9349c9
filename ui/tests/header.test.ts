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
