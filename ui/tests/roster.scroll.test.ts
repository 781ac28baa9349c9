// The roster while the engine moves its rows: where the view stays, and the cursor row.
// jsdom lays nothing out: the scroller's geometry is given.
import { fireEvent, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { mountTwoGroups, twoGroupsTime as at } from './helpers';

describe('the roster under the engine\'s batches', () => {
  it('rows moving above the view leave it on the row the user reads; at the very top it stays at the top', async () => {
    const { store, list, g } = mountTwoGroups();
    const top = () => within(list).getAllByRole('option')[0].textContent;
    // At the top, new activity comes into view there.
    store.receive([{ type: 'updated', seq: 1, sessionId: 's60', changes: { lastActivityAt: at(-1), goal: 'moved up' } }]);
    await waitFor(() => expect(top()).toContain('moved up'));
    expect(g.top).toBe(0);

    // Scrolled down to s50's row (alpha's header, s60 now first, s0…s49 before it).
    await g.scroll(30 + 51 * 58);
    store.receive([{ type: 'updated', seq: 2, sessionId: 's70', changes: { lastActivityAt: at(-2) } }]);
    await waitFor(() => expect(g.top).toBe(30 + 52 * 58));
    // A whole group moving above it: still on the same row.
    store.receive([{ type: 'updated', seq: 3, sessionId: 's150', changes: { lastActivityAt: at(-3) } }]);
    await waitFor(() => expect(g.top).toBe(30 + 100 * 58 + 30 + 52 * 58));
  });

  it('the cursor row in view stays in view when rows move; one the user scrolled away from does not pull the view back', async () => {
    const { store, list, g } = mountTwoGroups();
    list.focus();
    await fireEvent.keyDown(list, { key: 'Home' });
    for (let i = 0; i < 3; i++) await fireEvent.keyDown(list, { key: 'j' });
    expect(list.getAttribute('aria-activedescendant')).toBe('row-s3');
    expect(g.top).toBe(0);
    // The order holds while the focus is in the roster (roster.keys.test.ts): it has left.
    list.blur();
    // Beta goes on top: alpha's s3 would be far below; the view follows it (its bottom at the view's).
    store.receive([{ type: 'updated', seq: 1, sessionId: 's150', changes: { lastActivityAt: at(-1) } }]);
    await waitFor(() => expect(g.top).toBe(30 + 100 * 58 + 30 + 4 * 58 - 300));
    expect(list.getAttribute('aria-activedescendant')).toBe('row-s3');

    await g.scroll(0);
    store.receive([{ type: 'updated', seq: 2, sessionId: 's151', changes: { lastActivityAt: at(-2) } }]);
    await waitFor(() => expect(within(list).getAllByRole('option')[0].getAttribute('data-session-id')).toBe('s151'));
    expect(g.top).toBe(0);
  });

});
