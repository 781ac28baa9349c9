// The roster as a screen reader and a keyboard meet it: found by role and name only.
import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { tick } from 'svelte';
import { afterEach, describe, expect, it, vi } from 'vitest';
import Roster from '../src/components/Roster.svelte';
import { prefs } from '../src/lib/prefs.svelte';
import { RosterStore } from '../src/lib/store.svelte';
import { MockBackend, session, snapshot } from './helpers';

const at = (m: number) => `2026-11-01T12:${String(m).padStart(2, '0')}:00.000Z`;

/** Two groups, most recent first: alpha (a1, a2), then beta (b1). */
function mount() {
  const store = new RosterStore(new MockBackend());
  store.applySnapshot(
    snapshot({
      sessions: [
        session('a1', { repoRoot: '/r/alpha', goal: 'fix the parser', lastActivityAt: at(50) }),
        session('a2', { repoRoot: '/r/alpha', goal: 'write the docs', lastActivityAt: at(30) }),
        session('b1', { repoRoot: '/r/beta', goal: 'bump the deps', lastActivityAt: at(40) }),
      ],
    }),
  );
  const onopen = vi.fn();
  render(Roster, { props: { store, onopen } });
  return { store, onopen, list: screen.getByRole('listbox', { name: 'Sessions' }) };
}

const names = (els: HTMLElement[]) => els.map((e) => e.textContent?.match(/fix the parser|write the docs|bump the deps/)?.[0]);

describe('the roster listbox', () => {
  it('holds only groups of options; the group headers are buttons outside it', async () => {
    const { list } = mount();
    const groups = [...list.children];
    expect(groups.map((g) => [g.getAttribute('role'), g.getAttribute('aria-label')])).toEqual([
      ['group', 'alpha'],
      ['group', 'beta'],
    ]);
    for (const g of groups) for (const o of g.children) expect(o.getAttribute('role')).toBe('option');
    expect(within(list).queryAllByRole('button')).toHaveLength(0);
    expect(names(within(within(list).getByRole('group', { name: 'alpha' })).getAllByRole('option'))).toEqual(['fix the parser', 'write the docs']);

    // Every option says where it is among all of them.
    const options = within(list).getAllByRole('option');
    expect(options.map((o) => [o.getAttribute('aria-posinset'), o.getAttribute('aria-setsize')])).toEqual([
      ['1', '3'],
      ['2', '3'],
      ['3', '3'],
    ]);

    // Collapsing a group takes its options out of the set.
    const alpha = screen.getByRole('button', { name: /alpha/, expanded: true });
    await fireEvent.click(alpha);
    expect(alpha.getAttribute('aria-expanded')).toBe('false');
    expect(within(list).queryByRole('group', { name: 'alpha' })).toBeNull();
    const left = within(list).getAllByRole('option');
    expect(names(left)).toEqual(['bump the deps']);
    expect([left[0].getAttribute('aria-posinset'), left[0].getAttribute('aria-setsize')]).toEqual(['1', '1']);
    await fireEvent.click(screen.getByRole('button', { name: /alpha/, expanded: false }));
    expect(within(list).getAllByRole('option')).toHaveLength(3);
  });

  it('a virtual window of rows still says where each row is among all of them', async () => {
    const store = new RosterStore(new MockBackend());
    const many = Array.from({ length: 200 }, (_, i) =>
      session(`s${i}`, { repoRoot: i < 100 ? '/r/alpha' : '/r/beta', lastActivityAt: new Date(Date.UTC(2026, 10, 1, 12, 0, 200 - i)).toISOString() }),
    );
    store.applySnapshot(snapshot({ seq: 0, demo: false, roots: [], sessions: many }));
    render(Roster, { props: { store, onopen: () => {} } });
    const list = screen.getByRole('listbox', { name: 'Sessions' });
    const places = () =>
      within(list)
        .getAllByRole('option')
        .map((o): [string | undefined, number, number] => [o.dataset.sessionId, Number(o.getAttribute('aria-posinset')), Number(o.getAttribute('aria-setsize'))]);
    const top = places();
    expect(top.length).toBeGreaterThan(0);
    expect(top.length).toBeLessThan(200);
    expect(top).toEqual(top.map((_, i) => [`s${i}`, i + 1, 200]));

    // Scrolled to the second group (jsdom has no layout: say where the scroller is).
    const scroller = list.parentElement?.parentElement as HTMLElement;
    Object.defineProperty(scroller, 'scrollTop', { configurable: true, value: 30 + 100 * 58 + 30 + 40 * 58 });
    await fireEvent.scroll(scroller);
    const lower = places();
    const first = lower[0]?.[1] ?? 0;
    expect(first).toBeGreaterThan(100);
    expect(lower).toEqual(lower.map((_, i) => [`s${first + i - 1}`, first + i, 200]));
    expect(within(list).getAllByRole('group').map((g) => g.getAttribute('aria-label'))).toEqual(['beta']);
  });

  it('arrows, j/k, Home and End move the selected option; Enter opens it', async () => {
    const { list, onopen } = mount();
    list.focus();
    expect(within(list).queryByRole('option', { selected: true })).toBeNull();
    expect(list.getAttribute('aria-activedescendant')).toBeNull();

    const selected = () => {
      const o = within(list).getByRole('option', { selected: true });
      // The listbox keeps the focus and points at the selected option.
      expect(list.getAttribute('aria-activedescendant')).toBe(o.id);
      return names([o])[0];
    };
    await fireEvent.keyDown(list, { key: 'ArrowDown' });
    expect(selected()).toBe('fix the parser');
    await fireEvent.keyDown(list, { key: 'j' });
    expect(selected()).toBe('write the docs');
    await fireEvent.keyDown(list, { key: 'ArrowDown' });
    expect(selected()).toBe('bump the deps');
    await fireEvent.keyDown(list, { key: 'ArrowDown' });
    expect(selected()).toBe('bump the deps');
    await fireEvent.keyDown(list, { key: 'k' });
    expect(selected()).toBe('write the docs');
    await fireEvent.keyDown(list, { key: 'Home' });
    expect(selected()).toBe('fix the parser');
    await fireEvent.keyDown(list, { key: 'End' });
    expect(selected()).toBe('bump the deps');
    await fireEvent.keyDown(list, { key: 'ArrowUp' });
    expect(selected()).toBe('write the docs');
    expect(within(list).getAllByRole('option', { selected: true })).toHaveLength(1);
    expect(document.activeElement).toBe(list);

    await fireEvent.keyDown(list, { key: 'Enter' });
    expect(onopen).toHaveBeenCalledWith('a2', true);

    // A click opens the row; the focus stays on the listbox, not on the row (as a browser's mousedown puts it).
    const row = within(list).getByRole('option', { name: /bump the deps/ });
    row.focus();
    await fireEvent.click(row);
    expect(onopen).toHaveBeenLastCalledWith('b1', false);
    expect(document.activeElement).toBe(list);
  });

  it('holds still while the user is in it: a click opens the row it landed on, new activity is marked in place', async () => {
    const { store, onopen, list } = mount();
    const scroller = list.closest('.roster') as HTMLElement;
    await fireEvent.pointerEnter(scroller);
    // b1 gets activity and a new session comes, between the press and the release.
    const row = within(list).getByRole('option', { name: /write the docs/ });
    await fireEvent.pointerDown(row);
    store.receive([
      { type: 'updated', sessionId: 'b1', changes: { lastActivityAt: at(59) }, seq: 1 },
      { type: 'discovered', session: session('n1', { repoRoot: '/r/alpha', goal: 'brand new', lastActivityAt: at(58) }), seq: 2 },
    ]);
    await tick();
    await fireEvent.click(row);
    expect(onopen).toHaveBeenLastCalledWith('a2', false);
    // Nothing moved; b1 is marked, the new one waits behind a button.
    expect(names(within(list).getAllByRole('option'))).toEqual(['fix the parser', 'write the docs', 'bump the deps']);
    const b1 = within(list).getByRole('option', { name: /bump the deps/ });
    expect(within(b1).getByText('New activity')).toBeTruthy();
    const show = screen.getByRole('button', { name: /1 new session/ });
    // The focus is in the roster too: the pointer leaving does not re-sort under the cursor.
    await fireEvent.pointerLeave(scroller);
    expect(names(within(list).getAllByRole('option'))).toEqual(['fix the parser', 'write the docs', 'bump the deps']);
    await fireEvent.click(show);
    expect(within(list).getAllByRole('option').map((o) => o.textContent?.match(/fix the parser|write the docs|bump the deps|brand new/)?.[0])).toEqual([
      'bump the deps',
      'brand new',
      'fix the parser',
      'write the docs',
    ]);
    expect(screen.queryByRole('button', { name: /new session/ })).toBeNull();
    // `r` applies the order too; leaving with the focus lets it follow activity again.
    store.receive([{ type: 'updated', sessionId: 'a2', changes: { lastActivityAt: '2026-11-01T13:00:00.000Z' }, seq: 3 }]);
    await fireEvent.keyDown(list, { key: 'r' });
    expect(store.lines.order()[0].sessionId).toBe('a2');
    list.blur();
    await fireEvent.focusOut(list);
    store.receive([{ type: 'updated', sessionId: 'b1', changes: { lastActivityAt: '2026-11-01T13:01:00.000Z' }, seq: 4 }]);
    expect(store.lines.order()[0].sessionId).toBe('b1');
  });

  it('skips a collapsed group', async () => {
    const { list } = mount();
    await fireEvent.click(screen.getByRole('button', { name: /beta/ }));
    await fireEvent.keyDown(list, { key: 'End' });
    expect(names([within(list).getByRole('option', { selected: true })])).toEqual(['write the docs']);
  });

  describe('with single-key shortcuts off', () => {
    afterEach(() => prefs.setLetterKeys(true));

    it('j and k do nothing; the arrows still move', async () => {
      const { list } = mount();
      prefs.setLetterKeys(false);
      await fireEvent.keyDown(list, { key: 'j' });
      expect(within(list).queryByRole('option', { selected: true })).toBeNull();
      await fireEvent.keyDown(list, { key: 'ArrowDown' });
      await fireEvent.keyDown(list, { key: 'ArrowDown' });
      await fireEvent.keyDown(list, { key: 'k' });
      expect(names([within(list).getByRole('option', { selected: true })])).toEqual(['write the docs']);
    });
  });
});
