// The whole app on a recording of the real app (tests/recorded.ts): test hooks, the empty
// state, the demo, opening a timeline, filters.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from '../src/App.svelte';
import { app, recorded } from './recorded';

const rows = (c: HTMLElement) => [...c.querySelectorAll<HTMLElement>('[data-testid=roster-row]')];

it('shows the roster with its test hooks and opens a timeline with what the engine sent', async () => {
  const b = recorded('demo', { load: 2 });
  const { container } = app(b);
  await waitFor(() => expect(rows(container).length).toBeGreaterThan(0));
  expect(container.querySelector('[data-testid=search]')).not.toBeNull();
  // A row on screen whose timeline the recording opened: its page is the engine's.
  const pages = b.replies('open_timeline');
  const row = rows(container).find((r) => pages.some((p) => p.args.sessionId === r.dataset.sessionId)) as HTMLElement;
  const id = row.dataset.sessionId as string;
  const page = pages.filter((p) => p.args.sessionId === id).pop();
  await fireEvent.click(row);
  await waitFor(() => expect(container.querySelector('[data-testid=timeline]')?.getAttribute('data-session-id')).toBe(id));
  await waitFor(() => expect(container.querySelectorAll('[data-testid=timeline-item]').length).toBeGreaterThan(0));
  const sent = new Set(page?.ok?.items.map((i) => i.kind));
  const shown = new Set([...container.querySelectorAll('[data-testid=timeline-item]')].map((e) => e.getAttribute('data-kind')));
  for (const k of shown) expect(sent.has(k as never), `shown ${k}`).toBe(true);
  expect(container.querySelector('img, script')).toBeNull();
  // The app was told the roster is on screen (its search index waits for that), once.
  await waitFor(() => expect(b.calls.filter((c) => c.cmd === 'roster_shown')).toHaveLength(1));
});

it('says plainly where it looked when there are no sessions, and runs the demo', async () => {
  const { container } = app(recorded('demo', { load: 1 }));
  const empty = await waitFor(() => {
    const e = container.querySelector('[data-testid=empty-state]');
    expect(e).not.toBeNull();
    return e as HTMLElement;
  });
  expect(empty.textContent).toContain('/home/user/.claude');
  expect(empty.textContent).toContain('does not exist');

  await fireEvent.click(container.querySelector('[data-testid=demo-button]') as HTMLElement);
  // jsdom has no layout, so the virtual roster renders only a few rows: count in the status bar.
  await waitFor(() => expect(container.querySelector('footer')?.textContent).toContain('8 sessions'));
  expect(rows(container).length).toBeGreaterThan(0);
  expect(container.textContent).toContain('Demo mode');

  const stop = await waitFor(() => {
    const btn = [...container.querySelectorAll('button')].find((x) => x.textContent?.includes('Stop demo'));
    expect(btn?.disabled).toBe(false);
    return btn as HTMLButtonElement;
  });
  await fireEvent.click(stop);
  await waitFor(() => expect(container.querySelector('[data-testid=empty-state]')).not.toBeNull());
});

it('filters with the search box and the status chips', async () => {
  const b = recorded('demo', { load: 2 });
  const { container } = app(b);
  await waitFor(() => expect(rows(container).length).toBeGreaterThan(0));
  const idle = [...container.querySelectorAll('button')].find((x) => x.textContent?.startsWith('Idle')) as HTMLElement;
  await fireEvent.click(idle);
  await waitFor(() => {
    const statuses = rows(container).map((r) => r.getAttribute('data-status'));
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 'idle')).toBe(true);
  });
  const all = [...container.querySelectorAll('button')].find((x) => x.textContent?.startsWith('All')) as HTMLElement;
  await fireEvent.click(all);
  // A word of one recorded goal finds that session.
  const session = b.replies('roster_snapshot')[0].ok?.sessions.find((s) => s.goal?.includes('Postgres'));
  expect(session).toBeDefined();
  await fireEvent.input(container.querySelector('[data-testid=search]') as HTMLInputElement, { target: { value: 'Postgres' } });
  await waitFor(() => expect(rows(container).map((r) => r.dataset.sessionId)).toContain(session?.sessionId));
  await fireEvent.input(container.querySelector('[data-testid=search]') as HTMLInputElement, { target: { value: 'zzz-no-match' } });
  await waitFor(() => expect(rows(container).length).toBe(0));
});

it('a first index in progress says how far it has come, never that there are no sessions', async () => {
  const { MockBackend, session, snapshot } = await import('./helpers');
  const snap = snapshot({ seq: 0, sessions: [], roots: [{ path: '/home/me/.claude', exists: true, sessionCount: 0 }], demo: false });
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
  await waitFor(() => expect(container.querySelector('[data-testid=indexing]')?.textContent).toBe(''));
});

it('the timeline takes the keyboard on a click, and Home reaches its first item at once', async () => {
  const { container } = app(recorded('demo', { load: 2 }));
  await waitFor(() => expect(rows(container).length).toBeGreaterThan(0));
  await fireEvent.click(rows(container)[0]);
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
