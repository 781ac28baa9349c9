// The whole app on the in-browser fake backend: test hooks, empty state, demo, opening a timeline.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import App from '../src/App.svelte';
import { createFakeBackend } from '../src/lib/fake/fakeBackend';

it('shows the roster with its test hooks and opens a timeline', async () => {
  const b = createFakeBackend(new URLSearchParams('still&n=30'));
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  await waitFor(() => expect(container.querySelectorAll('[data-testid=roster-row]').length).toBeGreaterThan(0));
  const row = container.querySelector<HTMLElement>('[data-testid=roster-row][data-status=waiting_for_approval]');
  expect(row?.dataset.sessionId).toBeTruthy();
  expect(container.querySelector('[data-testid=search]')).not.toBeNull();

  await fireEvent.click(row as HTMLElement);
  await waitFor(() => expect(container.querySelector('[data-testid=timeline]')?.getAttribute('data-session-id')).toBe(row?.dataset.sessionId));
  await waitFor(() => expect(container.querySelectorAll('[data-testid=timeline-item]').length).toBeGreaterThan(0));
  const kinds = new Set([...container.querySelectorAll('[data-testid=timeline-item]')].map((e) => e.getAttribute('data-kind')));
  expect(kinds.has('tool_call')).toBe(true);
  expect(container.querySelector('img, script')).toBeNull();
});

it('says plainly where it looked when there are no sessions, and runs the demo', async () => {
  const b = createFakeBackend(new URLSearchParams('still&empty'));
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  const empty = await waitFor(() => {
    const e = container.querySelector('[data-testid=empty-state]');
    expect(e).not.toBeNull();
    return e as HTMLElement;
  });
  expect(empty.textContent).toContain('/home/dana/.claude');
  expect(empty.textContent).toContain('does not exist');

  await fireEvent.click(container.querySelector('[data-testid=demo-button]') as HTMLElement);
  // jsdom has no layout, so the virtual roster renders only a few rows: count in the status bar.
  await waitFor(() => expect(container.querySelector('footer')?.textContent).toContain('8 sessions'));
  expect(container.querySelectorAll('[data-testid=roster-row]').length).toBeGreaterThan(0);
  expect(container.textContent).toContain('Demo mode');

  const stop = await waitFor(() => {
    const btn = [...container.querySelectorAll('button')].find((x) => x.textContent?.includes('Stop demo'));
    expect(btn?.disabled).toBe(false);
    return btn as HTMLButtonElement;
  });
  await fireEvent.click(stop);
  await waitFor(() => expect(container.querySelector('[data-testid=empty-state]')).not.toBeNull());
});

it('filters with the search box and the Needs you chip', async () => {
  const b = createFakeBackend(new URLSearchParams('still&n=30'));
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  await waitFor(() => expect(container.querySelectorAll('[data-testid=roster-row]').length).toBeGreaterThan(0));
  const needs = [...container.querySelectorAll('button')].find((x) => x.textContent?.startsWith('Needs you')) as HTMLElement;
  await fireEvent.click(needs);
  await waitFor(() => {
    const statuses = [...container.querySelectorAll('[data-testid=roster-row]')].map((r) => r.getAttribute('data-status'));
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 'waiting_for_approval' || s === 'waiting_for_input')).toBe(true);
  });
  await fireEvent.input(container.querySelector('[data-testid=search]') as HTMLInputElement, { target: { value: 'zzz-no-match' } });
  await waitFor(() => expect(container.querySelectorAll('[data-testid=roster-row]').length).toBe(0));
});
