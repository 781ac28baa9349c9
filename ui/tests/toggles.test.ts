// Toggle groups as assistive technology meets them: radio groups where one choice holds
// (arrows move and check, one tab stop), pressed buttons where several may.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import ApprovalBar from '../src/components/ApprovalBar.svelte';
import Toolbar from '../src/components/Toolbar.svelte';
import App from '../src/App.svelte';
import { recorded, startSession } from './recorded';
import { radioStep } from '../src/lib/radiogroup';
import { RosterStore } from '../src/lib/store.svelte';
import type { SupervisionStore } from '../src/lib/supervision.svelte';
import type { PermissionRequest } from '../src/lib/types';
import { MockBackend, session, snapshot } from './helpers';

/** The radios of a group, and which one is checked and which one Tab reaches. */
function radios(group: HTMLElement) {
  const all = within(group).getAllByRole('radio');
  return {
    all,
    checked: all.filter((r) => r.getAttribute('aria-checked') === 'true').map((r) => r.textContent?.trim()),
    tabStops: all.filter((r) => r.tabIndex === 0).map((r) => r.textContent?.trim()),
  };
}

it('arrows step through a radio group and wrap; other keys do not', () => {
  expect(radioStep('ArrowRight', 0, 3)).toBe(1);
  expect(radioStep('ArrowDown', 2, 3)).toBe(0);
  expect(radioStep('ArrowLeft', 0, 3)).toBe(2);
  expect(radioStep('ArrowUp', 1, 3)).toBe(0);
  expect(radioStep('Tab', 1, 3)).toBeNull();
  expect(radioStep('ArrowRight', -1, 3)).toBeNull();
});

describe('the status filter', () => {
  function mount() {
    const store = new RosterStore(new MockBackend());
    store.applySnapshot(snapshot({ seq: 0, demo: false, roots: [], sessions: [session('a')] }));
    const noop = () => {};
    render(Toolbar, { props: { store, page: 'sessions', attention: 0, onescape: noop, onleave: noop, onpage: noop, onnew: noop, onattention: noop } });
    return { store, group: screen.getByRole('radiogroup', { name: 'Filter by status' }) };
  }

  it('is a radio group: one tab stop, arrows move and check', async () => {
    const { store, group } = mount();
    expect(radios(group).checked).toEqual(['All 1']);
    expect(radios(group).tabStops).toEqual(['All 1']);

    const all = within(group).getByRole('radio', { name: /^All/ });
    all.focus();
    await fireEvent.keyDown(all, { key: 'ArrowRight' });
    const needs = within(group).getByRole('radio', { name: /^Needs you/, checked: true });
    expect(document.activeElement).toBe(needs);
    expect(store.filters.status).toBe('needs_you');
    expect(radios(group).tabStops).toEqual([needs.textContent?.trim()]);

    await fireEvent.keyDown(needs, { key: 'ArrowLeft' });
    await fireEvent.keyDown(document.activeElement as HTMLElement, { key: 'ArrowLeft' });
    expect(within(group).getByRole('radio', { checked: true })).toBe(document.activeElement);
    expect(store.filters.status).toBe('idle');
  });

  it('a key on the checked chip keeps it; a click on it goes back to All', async () => {
    const { store, group } = mount();
    const working = within(group).getByRole('radio', { name: /^Working/ });
    await fireEvent.click(working, { detail: 1 });
    expect(store.filters.status).toBe('working');
    // Space or Enter on a button clicks it with no click count.
    await fireEvent.click(working, { detail: 0 });
    expect(working.getAttribute('aria-checked')).toBe('true');
    await fireEvent.click(working, { detail: 1 });
    expect(within(group).getByRole('radio', { checked: true }).textContent).toMatch(/^All/);
  });
});

describe("a question's answers", () => {
  const request: PermissionRequest = {
    id: 'r1',
    sessionId: 'q',
    tool: 'AskUserQuestion',
    target: null,
    cwd: null,
    since: '2026-11-01T12:00:00.000Z',
    knownSession: true,
    channel: 'hook',
    detail: {
      kind: 'questions',
      questions: [
        { question: 'Which database?', options: [{ label: 'SQLite' }, { label: 'Postgres' }], multiSelect: false },
        { question: 'Which checks?', options: [{ label: 'Lint' }, { label: 'Types' }], multiSelect: true },
      ],
    },
  };
  const sup = { requestOf: () => request, dialogOf: () => Promise.resolve(null) } as unknown as SupervisionStore;

  it('one answer is a radio group, several are pressed buttons', async () => {
    render(ApprovalBar, { props: { session: session('q', { status: 'waiting_for_approval' }), sup } });
    const one = screen.getByRole('radiogroup', { name: 'Which database?' });
    expect(radios(one).checked).toEqual([]);
    // Nothing checked yet: the first radio is the tab stop.
    expect(radios(one).tabStops).toEqual(['SQLite']);
    const sqlite = within(one).getByRole('radio', { name: 'SQLite' });
    sqlite.focus();
    await fireEvent.keyDown(sqlite, { key: 'ArrowDown' });
    expect(radios(one).checked).toEqual(['Postgres']);
    expect(document.activeElement).toBe(within(one).getByRole('radio', { name: 'Postgres' }));

    const many = screen.getByRole('group', { name: 'Which checks?' });
    expect(within(many).queryAllByRole('radio')).toHaveLength(0);
    const lint = within(many).getByRole('button', { name: 'Lint', pressed: false });
    await fireEvent.click(lint);
    await fireEvent.click(within(many).getByRole('button', { name: 'Types' }));
    expect(within(many).getAllByRole('button', { pressed: true }).map((b) => b.textContent)).toEqual(['Lint', 'Types']);
    await fireEvent.keyDown(lint, { key: 'ArrowRight' });
    expect(within(many).getAllByRole('button', { pressed: true })).toHaveLength(2);
  });
});

it("a supervised session's panes are a radio group: arrows switch the pane and move the focus with the check", async () => {
  const b = recorded('pty');
  render(App, { props: { connect: () => Promise.resolve(b) } });
  await startSession(b);
  const group = await waitFor(() => screen.getByRole('radiogroup', { name: 'Show' }));
  const terminal = within(group).getByRole('radio', { name: 'Terminal', checked: true });
  expect(radios(group).tabStops).toEqual(['Terminal']);
  terminal.focus();
  await fireEvent.keyDown(terminal, { key: 'ArrowLeft' });
  const timeline = within(group).getByRole('radio', { name: 'Timeline', checked: true });
  expect(document.activeElement).toBe(timeline);
  await waitFor(() => expect(screen.getByRole('feed')).not.toBeNull());
  await fireEvent.keyDown(timeline, { key: 'ArrowRight' });
  expect(within(group).getByRole('radio', { name: 'Terminal', checked: true })).toBe(document.activeElement);
});
