// The whole app on the in-browser fake backend: test hooks, empty state, demo, opening a timeline.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
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

it('a first index in progress says how far it has come, never that there are no sessions', async () => {
  const { MockBackend, session } = await import('./helpers');
  const snap = { seq: 0, sessions: [], roots: [{ path: '/home/me/.claude', exists: true, sessionCount: 0 }], demo: false };
  const b = new MockBackend({
    roster_snapshot: () => ({ ...snap, progress: { indexing: true, done: 0, total: 2000 } }),
    settings_get: () => {
      throw new Error('not needed');
    },
  });
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  await waitFor(() => expect(container.querySelector('[data-testid=first-index]')?.textContent).toBe('Reading 0 of 2,000 sessions…'));
  expect(container.querySelector('[data-testid=empty-state]')).toBeNull();
  // Rows arrive part by part, provisional until read in full; the status bar counts on.
  b.fire('store:progress', { indexing: true, done: 512, total: 2000 });
  b.fire('store:events', { events: [{ seq: 1, type: 'discovered', session: session('s1', { provisional: true }) }] });
  await waitFor(() => expect(container.querySelector('[data-testid=indexing]')?.textContent).toBe('Reading 512 of 2,000 sessions…'));
  await waitFor(() => expect(container.querySelector('[data-provisional=true]')).not.toBeNull());
  expect(container.querySelector('footer')?.textContent).toContain('1 session');
  expect(container.querySelector('footer')?.textContent).not.toContain('1 sessions');
  b.fire('store:progress', { indexing: false, done: 2000, total: 2000 });
  await waitFor(() => expect(container.querySelector('[data-testid=indexing]')).toBeNull());
});

it('the timeline takes the keyboard on a click, and Home reaches its first item at once', async () => {
  const b = createFakeBackend(new URLSearchParams('still&n=30'));
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  await waitFor(() => expect(container.querySelectorAll('[data-testid=roster-row]').length).toBeGreaterThan(0));
  await fireEvent.click(container.querySelector('[data-testid=roster-row]:not([data-supervised])') as HTMLElement);
  const feed = await waitFor(() => {
    const f = container.querySelector<HTMLElement>('[role=feed]');
    expect(f).not.toBeNull();
    return f as HTMLElement;
  });
  await fireEvent.pointerDown(feed);
  expect(document.activeElement).toBe(feed);
  feed.scrollTop = 5000;
  await fireEvent.keyDown(feed, { key: 'Home' });
  expect(feed.scrollTop).toBe(0);
});

describe('keyboard and modal semantics', () => {
  it('single-key shortcuts can be turned off; keys with modifiers and arrows still act', async () => {
    const { prefs, letterShortcutOff } = await import('../src/lib/prefs.svelte');
    const key = (k: string, mods: Partial<KeyboardEventInit> = {}) => new KeyboardEvent('keydown', { key: k, ...mods });
    prefs.setLetterKeys(false);
    try {
      expect(letterShortcutOff(key('j'))).toBe(true);
      expect(letterShortcutOff(key('/'))).toBe(true);
      expect(letterShortcutOff(key('ArrowDown'))).toBe(false);
      expect(letterShortcutOff(key('L', { ctrlKey: true, shiftKey: true }))).toBe(false);
      expect(localStorage.getItem('mimesis.letter-keys')).toBe('off');
    } finally {
      prefs.setLetterKeys(true);
    }
    expect(letterShortcutOff(key('j'))).toBe(false);
  });

  it('the page behind a modal is inert while it is open', async () => {
    const { render } = await import('@testing-library/svelte');
    const { createRawSnippet } = await import('svelte');
    const { default: Modal } = await import('../src/components/Modal.svelte');
    const page = document.createElement('div');
    page.dataset.page = '';
    document.body.append(page);
    const children = createRawSnippet(() => ({ render: () => '<p>body</p>' }));
    const r = render(Modal, { props: { title: 'T', testid: 'm', onclose: () => {}, children } });
    expect(page.inert).toBe(true);
    r.unmount();
    expect(page.inert).toBe(false);
    page.remove();
  });
});
