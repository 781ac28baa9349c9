// The one virtual list (components/VirtualList.svelte), as the timeline's feed and as the
// roster's listbox, found by role and name. jsdom lays nothing out: the scroller's geometry
// is given (`geometry`), and item sizes are reported through a ResizeObserver the test drives.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import FeedHarness from './fixtures/FeedHarness.svelte';
import { mountTwoGroups, twoGroupsTime as at, scrollerGeometry as geometry } from './helpers';

/** Stands in for the browser's ResizeObserver: the test says what size an observed element has. */
class Observer {
  static all: Observer[] = [];
  readonly nodes = new Set<Element>();
  constructor(readonly callback: ResizeObserverCallback) {
    Observer.all.push(this);
  }
  observe(n: Element): void {
    this.nodes.add(n);
  }
  unobserve(n: Element): void {
    this.nodes.delete(n);
  }
  disconnect(): void {
    this.nodes.clear();
  }
  /** Elements of the list now measure `height` pixels. */
  static report(els: HTMLElement[], height: number): void {
    for (const o of Observer.all) {
      const entries = els.filter((e) => o.nodes.has(e)).map((target) => ({ target, borderBoxSize: [{ blockSize: height, inlineSize: 300 }] }));
      if (entries.length) o.callback(entries as unknown as ResizeObserverEntry[], o as unknown as ResizeObserver);
    }
  }
}

let saved: typeof ResizeObserver;
beforeEach(() => {
  saved = globalThis.ResizeObserver;
  Observer.all = [];
  globalThis.ResizeObserver = Observer as unknown as typeof ResizeObserver;
});
afterEach(() => {
  globalThis.ResizeObserver = saved;
});

const places = (feed: HTMLElement) => within(feed).getAllByRole('article').map((a) => Number(a.getAttribute('aria-posinset')));

describe('the list as a feed', () => {
  it('renders a window of the items, each numbered over all of them, and moves it with the scroll', async () => {
    render(FeedHarness, { props: { count: 10_000 } });
    const feed = screen.getByRole('feed', { name: 'Numbers' });
    const g = geometry(feed, 400, () => 10_000 * 40);
    await g.scroll(0);
    const first = places(feed);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(100);
    expect(within(feed).getAllByRole('article').every((a) => a.getAttribute('aria-setsize') === '10000')).toBe(true);

    await g.scroll(5000 * 40);
    const middle = places(feed);
    expect(middle[0]).toBeGreaterThan(4900);
    expect(middle).toContain(5001);
    expect(within(feed).getByText('Item 5000')).toBeTruthy();
  });

  it('Home and End reach the first and the last item at once', async () => {
    render(FeedHarness, { props: { count: 10_000 } });
    const feed = screen.getByRole('feed', { name: 'Numbers' });
    const g = geometry(feed, 400, () => 10_000 * 40);
    await g.scroll(5000 * 40);
    await fireEvent.keyDown(feed, { key: 'Home' });
    await waitFor(() => expect(places(feed)[0]).toBe(1));
    expect(g.top).toBe(0);
    await fireEvent.keyDown(feed, { key: 'End' });
    await waitFor(() => expect(places(feed)).toContain(10_000));
    expect(g.top).toBe(10_000 * 40 - 400);
  });

  it('follows its end while the user is there; scrolled up, it stays put and says new items came', async () => {
    const { rerender } = render(FeedHarness, { props: { count: 100 } });
    const feed = screen.getByRole('feed', { name: 'Numbers' });
    let count = 100;
    const g = geometry(feed, 400, () => count * 40);
    const status = screen.getByRole('status');

    count = 120;
    await rerender({ count });
    await waitFor(() => expect(g.top).toBe(120 * 40 - 400));
    expect(status.textContent).toBe('following');

    await g.scroll(1000);
    expect(status.textContent).toBe('not following');
    count = 130;
    await rerender({ count });
    await waitFor(() => expect(status.textContent).toBe('not following, new items below'));
    expect(g.top).toBe(1000);

    // Back at the end, it follows again.
    await g.scroll(130 * 40 - 400);
    expect(status.textContent).toBe('following');
  });

  it('keeps the view on what the user reads when items above it change height', async () => {
    render(FeedHarness, { props: { count: 1000 } });
    const feed = screen.getByRole('feed', { name: 'Numbers' });
    const g = geometry(feed, 400, () => 1000 * 40 + 200);
    // It opens at the end; the user scrolls up.
    await waitFor(() => expect(g.top).toBe(1000 * 40 + 200 - 400));
    await g.scroll(4000);
    await waitFor(() => expect(screen.getByRole('status').textContent).toBe('not following'));
    const article = (n: number) => within(feed).getAllByRole('article').find((a) => a.getAttribute('aria-posinset') === String(n)) as HTMLElement;

    // Item 91 (above the view's top, item 101) grows by 60 pixels: the view moves down as much.
    Observer.report([article(91)], 100);
    await waitFor(() => expect(g.top).toBe(4060));
    // Item 110, in view, grows: what is at the top stays where it is.
    Observer.report([article(110)], 100);
    await new Promise((r) => requestAnimationFrame(r));
    expect(g.top).toBe(4060);
  });
});

describe('the list as the roster', () => {
  it('pins a copy of the header of the group whose rows are under it', async () => {
    const { g } = mountTwoGroups();
    expect(screen.queryByRole('button', { name: /alpha/, hidden: true })).toBeTruthy();
    await g.scroll(30 + 100 * 58 + 30 + 40 * 58);
    // Only beta's rows are rendered, beta's own header is far above: its copy is pinned, for
    // the pointer only (a screen reader has the group's name on the options' group).
    expect(screen.queryByRole('button', { name: /beta/ })).toBeNull();
    expect(screen.getByRole('button', { name: /beta/, hidden: true }).closest('[aria-hidden="true"]')).toBeTruthy();
    expect(screen.queryByRole('button', { name: /alpha/, hidden: true })).toBeNull();
  });

  it('End and Home bring the last and the first row into view at once, the header over the first too', async () => {
    const { list, g } = mountTwoGroups();
    list.focus();
    await fireEvent.keyDown(list, { key: 'End' });
    await waitFor(() => expect(within(list).getByRole('option', { selected: true }).textContent).toContain('task 199'));
    expect(g.top).toBe(60 + 200 * 58 - 300);
    expect(list.getAttribute('aria-activedescendant')).toBe('row-s199');

    await fireEvent.keyDown(list, { key: 'Home' });
    await waitFor(() => expect(within(list).getByRole('option', { selected: true }).textContent).toContain('task 0'));
    expect(g.top).toBe(0);

    // A PageDown moves by the rows a view holds, less one; the view follows the cursor.
    await fireEvent.keyDown(list, { key: 'PageDown' });
    await waitFor(() => expect(within(list).getByRole('option', { selected: true }).textContent).toContain('task 4'));
  });

  it('a batch of the engine re-renders the rows in view, not the list; a moved row keeps its numbering right', async () => {
    const { store, list } = mountTwoGroups();
    const before = within(list).getAllByRole('option');
    store.receive([{ type: 'updated', seq: 1, sessionId: 's50', changes: { lastActivityAt: at(-1), goal: 'moved up' } }]);
    await waitFor(() => expect(within(list).getAllByRole('option')[0].textContent).toContain('moved up'));
    const after = within(list).getAllByRole('option');
    // The first row is a new one, the others are the same elements, one place further.
    expect(after.slice(1, 5)).toEqual(before.slice(0, 4));
    expect(after.slice(0, 5).map((o) => o.getAttribute('aria-posinset'))).toEqual(['1', '2', '3', '4', '5']);
    expect(within(list).getAllByRole('group').map((x) => x.getAttribute('aria-label'))).toEqual(['alpha']);
  });
});
