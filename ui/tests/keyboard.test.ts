// The app's key map, where the focus goes between pages, and the modal's focus trap, on
// recordings of the real app; elements are found by role and accessible name.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { afterEach, describe, expect, it } from 'vitest';
import App from '../src/App.svelte';
import { PROJECT, recorded } from './recorded';
import { prefs } from '../src/lib/prefs.svelte';

async function app() {
  const b = recorded('demo', { load: 2 });
  render(App, { props: { connect: () => Promise.resolve(b) } });
  const roster = await waitFor(() => screen.getByRole('listbox', { name: 'Sessions' }));
  await waitFor(() => expect(within(roster).queryAllByRole('option').length).toBeGreaterThan(0));
  return { b, roster };
}

/** A key pressed with nothing focused: it reaches the window from the page's body. */
const press = (key: string, init: KeyboardEventInit = {}) => fireEvent.keyDown(document.activeElement ?? document.body, { key, ...init });

/** The dialog's own tab stops, in order (jsdom lays nothing out: all of them). */
const tabStops = (dialog: HTMLElement) =>
  [...dialog.querySelectorAll<HTMLElement>('button, input, select, textarea, [href], [tabindex]')].filter(
    (e) => !(e as HTMLButtonElement).disabled && e.tabIndex >= 0,
  );

describe('the key map', () => {
  afterEach(() => prefs.setLetterKeys(true));

  it('j, k and the arrows land in the roster; / goes to the search; c opens a new session', async () => {
    const { roster } = await app();
    expect(document.activeElement).toBe(document.body);
    await press('j');
    expect(document.activeElement).toBe(roster);
    const first = within(roster).getByRole('option', { selected: true });
    await press('j');
    expect(within(roster).getByRole('option', { selected: true })).not.toBe(first);
    await press('k');
    expect(within(roster).getByRole('option', { selected: true })).toBe(first);

    await press('/');
    expect(document.activeElement).toBe(screen.getByRole('searchbox', { name: 'Search sessions' }));
    // Letters typed in the search box are text, not shortcuts.
    await press('c');
    expect(screen.queryByRole('dialog')).toBeNull();
    (document.activeElement as HTMLElement).blur();

    await press('c');
    const dialog = await waitFor(() => screen.getByRole('dialog', { name: 'New session' }));
    await fireEvent.keyDown(dialog, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());

  });

  it('Enter in the search box opens the only match at once; with more, the roster takes the keys', async () => {
    const { roster } = await app();
    const id = within(roster).getAllByRole('option')[0].dataset.sessionId as string;
    const search = screen.getByRole('searchbox', { name: 'Search sessions' });
    search.focus();
    await fireEvent.input(search, { target: { value: id } });
    await waitFor(() => expect(within(roster).getAllByRole('option')).toHaveLength(1));
    await fireEvent.keyDown(search, { key: 'Enter' });
    const opened = await waitFor(() => screen.getByRole('region', { name: /^(Timeline|Supervised session)$/ }));
    expect(opened.dataset.sessionId).toBe(id);
    search.focus();
    await fireEvent.input(search, { target: { value: '' } });
    await fireEvent.keyDown(search, { key: 'Enter' });
    expect(document.activeElement).toBe(roster);
  });

  it('n opens the next session that needs you, from any page', async () => {
    // The pty recording: a session started in the shop, asking for a permission.
    const b = recorded('pty');
    render(App, { props: { connect: () => Promise.resolve(b) } });
    const newSession = await waitFor(() => screen.getByRole('button', { name: /New session/ }));
    // Nothing waits yet: `n` says so (in a live region that was there before its words).
    const note = screen.getByTestId('attention-note');
    expect(note.getAttribute('role')).toBe('status');
    expect(note.textContent).toBe('');
    await press('n');
    expect(note.textContent).toBe('Nothing needs you now');
    await fireEvent.click(newSession);
    const dialog = await waitFor(() => screen.getByRole('dialog', { name: 'New session' }));
    await fireEvent.input(within(dialog).getByRole('textbox', { name: 'Folder' }), { target: { value: PROJECT } });
    const start = within(dialog).getByRole('button', { name: 'Start' });
    await waitFor(() => expect((start as HTMLButtonElement).disabled).toBe(false));
    await fireEvent.click(start);
    const needsYou = screen.getByRole('button', { name: /needs you/ });
    await waitFor(() => expect(Number(needsYou.dataset.count)).toBeGreaterThan(0));
    expect(screen.getByTestId('attention-live').textContent).toMatch(/^\d+ sessions? needs? you$/);
    const id = b.recorded('attention:changed').find((a) => a.count > 0)?.sessionIds[0];
    await fireEvent.click(within(screen.getByRole('navigation', { name: 'Views' })).getByRole('button', { name: 'Settings' }));
    await press('n');
    const opened = await waitFor(() => screen.getByRole('region', { name: /^(Timeline|Supervised session)$/ }));
    expect(opened.dataset.sessionId).toBe(id);
  });

  it('with single-key shortcuts off, letters do nothing and the arrows still work', async () => {
    const { roster } = await app();
    prefs.setLetterKeys(false);
    for (const key of ['j', 'k', '/', 'c', 'n']) await press(key);
    expect(document.activeElement).toBe(document.body);
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(within(roster).queryByRole('option', { selected: true })).toBeNull();
    expect(screen.queryByRole('region', { name: /^(Timeline|Supervised session)$/ })).toBeNull();

    await press('ArrowDown');
    expect(document.activeElement).toBe(roster);
    expect(within(roster).getByRole('option', { selected: true })).not.toBeNull();
  });
});

describe('pages', () => {
  it('the focus goes to the new page’s heading, and back to the roster on the way back', async () => {
    const { roster } = await app();
    const views = screen.getByRole('navigation', { name: 'Views' });

    await fireEvent.click(within(views).getByRole('button', { name: 'Settings' }));
    await waitFor(() => expect(document.activeElement).toBe(screen.getByRole('heading', { name: 'Settings' })));
    expect(within(views).getByRole('button', { name: 'Settings' }).getAttribute('aria-current')).toBe('page');

    await fireEvent.click(within(views).getByRole('button', { name: 'Resources' }));
    await waitFor(() => expect(document.activeElement).toBe(screen.getByRole('heading', { name: 'Supervised sessions' })));

    // Escape goes back to the sessions; the roster takes the keyboard, on a row.
    await press('Escape');
    const back = await waitFor(() => {
      const r = screen.getByRole('listbox', { name: 'Sessions' });
      expect(document.activeElement).toBe(r);
      return r;
    });
    expect(back).not.toBe(roster);
    expect(within(back).getByRole('option', { selected: true })).not.toBeNull();
  });
});

describe('the modal', () => {
  it('keeps Tab and Shift-Tab inside; Escape closes it and the focus returns to its opener', async () => {
    await app();
    const opener = screen.getByRole('button', { name: /New session/ });
    opener.focus();
    await fireEvent.click(opener);
    const dialog = await waitFor(() => screen.getByRole('dialog', { name: 'New session' }));
    // The first field has the focus.
    expect(document.activeElement).toBe(within(dialog).getByRole('textbox', { name: 'Folder' }));
    const page = document.querySelector<HTMLElement>('[data-page]');
    expect(page?.inert).toBe(true);

    // jsdom lays nothing out (offsetParent is null): say every element is laid out.
    const offsetParent = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'offsetParent');
    Object.defineProperty(HTMLElement.prototype, 'offsetParent', { configurable: true, get: () => document.body });
    try {
      const stops = tabStops(dialog);
      expect(stops.length).toBeGreaterThan(2);
      const first = stops[0];
      const last = stops[stops.length - 1];
      first.focus();
      await fireEvent.keyDown(first, { key: 'Tab', shiftKey: true });
      expect(document.activeElement).toBe(last);
      await fireEvent.keyDown(last, { key: 'Tab' });
      expect(document.activeElement).toBe(first);
      // In between, Tab is the browser's: the trap does not hold it.
      expect(await fireEvent.keyDown(first, { key: 'Tab' })).toBe(true);
    } finally {
      if (offsetParent) Object.defineProperty(HTMLElement.prototype, 'offsetParent', offsetParent);
    }

    await fireEvent.keyDown(document.activeElement as HTMLElement, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(page?.inert).toBe(false);
    expect(document.activeElement).toBe(opener);
  });
});
