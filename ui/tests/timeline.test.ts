import { describe, expect, it } from 'vitest';
import { Heights } from '../src/lib/heights';
import { TimelineView } from '../src/lib/timeline.svelte';
import { CHUNK, TimelineCache } from '../src/lib/timelineCache';
import type { TimelineItem, TimelinePage } from '../src/lib/types';
import { MockBackend, flush, prompt } from './helpers';

function pageOf(sessionId: string, total: number, start: number, end: number, text = (i: number) => `prompt ${i}`): TimelinePage {
  const items: TimelineItem[] = [];
  for (let i = start; i < Math.min(end, total); i++) items.push(prompt(i, text(i)));
  return { sessionId, total, start, items, waiting: false, seq: 0 };
}

describe('TimelineCache', () => {
  it('stores pages sparsely and lists the chunks still missing', () => {
    const c = new TimelineCache('s');
    c.applyPage(pageOf('s', 1000, 800, 1000));
    expect(c.total).toBe(1000);
    expect(c.get(799)).toBeUndefined();
    expect((c.get(800) as { text: string }).text).toBe('prompt 800');
    // The viewport shows 750–850: chunk 7 (700–799) is missing, chunk 8 is complete.
    expect(c.missingChunks(750, 850)).toEqual([7]);
    c.inFlight.add(7);
    expect(c.missingChunks(750, 850)).toEqual([]);
    expect(c.chunkRange(9)).toEqual({ start: 900, end: 1000 });
    expect(c.chunkRange(7)).toEqual({ start: 7 * CHUNK, end: 8 * CHUNK });
  });

  it('appends and changes items from updates and truncates on a shorter total', () => {
    const c = new TimelineCache('s');
    c.applyPage(pageOf('s', 10, 0, 10));
    expect(c.applyUpdate({ sessionId: 's', total: 12, reset: false, changed: [{ index: 10, item: prompt(10) }, { index: 11, item: prompt(11) }] })).toBe(true);
    expect(c.total).toBe(12);
    expect(c.get(11)?.uuid).toBe('u11');
    c.applyUpdate({ sessionId: 's', total: 12, reset: false, changed: [{ index: 3, item: prompt(3, 'changed') }] });
    expect((c.get(3) as { text: string }).text).toBe('changed');
    c.applyUpdate({ sessionId: 's', total: 5, reset: false, changed: [] });
    expect(c.get(7)).toBeUndefined();
    // Another session's update is not ours.
    c.applyUpdate({ sessionId: 'other', total: 99, reset: false, changed: [] });
    expect(c.total).toBe(5);
  });

  it('does not let a page fetched before an update undo it', () => {
    const c = new TimelineCache('s');
    c.applyPage(pageOf('s', 10, 0, 10));
    const epoch = c.epoch; // a range request goes out now…
    c.applyUpdate({ sessionId: 's', total: 11, reset: false, changed: [{ index: 4, item: prompt(4, 'result arrived') }, { index: 10, item: prompt(10) }] });
    c.applyPage(pageOf('s', 10, 0, 10, (i) => `stale ${i}`), epoch); // …and answers late
    expect((c.get(4) as { text: string }).text).toBe('result arrived');
    expect((c.get(3) as { text: string }).text).toBe('stale 3');
    expect(c.total).toBe(11);
  });

  it('numbered updates: older ones are ignored, a lost one makes the timeline read again', () => {
    const c = new TimelineCache('s');
    const up = (seq: number, prev: number, total: number) => ({ sessionId: 's', total, reset: false, changed: [{ index: total - 1, item: prompt(total - 1) }], seq, prev });
    // One update arrives while the first page is on its way; the page was read after it.
    expect(c.applyUpdate(up(7, 3, 11))).toBe(true);
    c.applyPage({ ...pageOf('s', 11, 0, 11), seq: 7 });
    expect(c.seq).toBe(7);
    expect(c.applyUpdate(up(7, 3, 11))).toBe(true); // a duplicate: nothing changes
    expect(c.applyUpdate(up(9, 7, 12))).toBe(true);
    expect(c.total).toBe(12);
    expect(c.seq).toBe(9);
    // Update 12 follows 11, which never came: read again.
    expect(c.applyUpdate(up(12, 11, 14))).toBe(false);
    expect(c.items.size).toBe(0);
    expect(c.seq).toBeNull();
  });

  it('clears on reset and evicts far items past its budget', () => {
    const c = new TimelineCache('s', 300);
    for (let s = 0; s < 1000; s += 100) c.applyPage(pageOf('s', 1000, s, s + 100));
    expect(c.items.size).toBe(1000);
    c.evict(500, 550);
    expect(c.get(520)).toBeDefined();
    expect(c.get(0)).toBeUndefined();
    expect(c.get(999)).toBeUndefined();
    expect(c.items.size).toBeLessThanOrEqual(300);
    expect(c.applyUpdate({ sessionId: 's', total: 0, reset: true, changed: [] })).toBe(false);
    expect(c.items.size).toBe(0);
  });
});

describe('Heights', () => {
  it('answers offsets and item-at-y over estimates and measurements', () => {
    const h = new Heights(5, 10);
    expect(h.total()).toBe(50);
    expect(h.offset(3)).toBe(30);
    expect(h.indexAt(0)).toBe(0);
    expect(h.indexAt(29.9)).toBe(2);
    expect(h.indexAt(30)).toBe(3);
    expect(h.indexAt(1e9)).toBe(4);
    expect(h.set(1, 100)).toBe(90);
    expect(h.isMeasured(1)).toBe(true);
    expect(h.offset(2)).toBe(110);
    expect(h.indexAt(50)).toBe(1);
    expect(h.indexAt(110)).toBe(2);
  });

  it('grows and shrinks, keeping measurements', () => {
    const h = new Heights(3, 10);
    h.set(0, 50);
    h.resize(1000);
    expect(h.total()).toBe(50 + 999 * 10);
    h.resize(2);
    expect(h.total()).toBe(60);
    h.resize(4);
    expect(h.total()).toBe(80);
    expect(h.get(0)).toBe(50);
  });

  it('handles hundreds of thousands of items', () => {
    const h = new Heights(350_000, 40);
    h.set(200_000, 400);
    expect(h.total()).toBe(350_000 * 40 + 360);
    expect(h.indexAt(200_000 * 40 + 399)).toBe(200_000);
    expect(h.indexAt(200_000 * 40 + 400)).toBe(200_001);
  });
});

describe('TimelineView', () => {
  function setup(total = 1000) {
    let n = total;
    const b = new MockBackend({
      open_timeline: ({ sessionId, tail }) => pageOf(sessionId, n, Math.max(0, n - tail), n),
      timeline_range: ({ sessionId, start, end }) => pageOf(sessionId, n, start, end),
      timeline_item: ({ index }) => prompt(index, 'the whole text'),
      close_timeline: () => null,
    });
    return { b, view: new TimelineView(b), setTotal: (t: number) => (n = t) };
  }

  it('waits for the first prompt of a session without a transcript, then follows it', async () => {
    const b = new MockBackend({
      open_timeline: ({ sessionId }) => ({ sessionId, total: 0, start: 0, items: [], waiting: true, seq: 0 }),
      close_timeline: () => null,
    });
    const view = new TimelineView(b);
    await view.start();
    await view.open('new');
    expect(view.error).toBeNull();
    expect([view.total, view.waiting]).toEqual([0, true]);
    b.fire('timeline:update', { sessionId: 'new', total: 1, reset: false, changed: [{ index: 0, item: prompt(0) }] });
    expect([view.total, view.waiting]).toEqual([1, false]);
    expect(view.item(0)?.uuid).toBe('u0');
  });

  it('opens the tail, fetches ranges on demand, and closes the previous timeline', async () => {
    const { b, view } = setup();
    await view.start();
    await view.open('s1');
    expect(b.calls[0]).toEqual({ cmd: 'open_timeline', args: { sessionId: 's1', tail: 200 } });
    expect(view.total).toBe(1000);
    expect(view.item(999)?.uuid).toBe('u999');
    expect(view.item(500)).toBeUndefined();

    view.ensure(480, 530);
    view.ensure(480, 530); // asked twice, fetched once
    await flush();
    expect(b.calls.filter((c) => c.cmd === 'timeline_range').map((c) => c.args)).toEqual([
      { sessionId: 's1', start: 400, end: 500 },
      { sessionId: 's1', start: 500, end: 600 },
    ]);
    expect(view.item(500)?.uuid).toBe('u500');

    await view.open('s2');
    expect(b.calls.some((c) => c.cmd === 'close_timeline' && (c.args as { sessionId: string }).sessionId === 's1')).toBe(true);
  });

  it('applies timeline:update, reloads on reset, and ignores other sessions', async () => {
    const { b, view, setTotal } = setup(10);
    await view.start();
    await view.open('s1');
    b.fire('timeline:update', { sessionId: 's1', total: 11, reset: false, changed: [{ index: 10, item: prompt(10, 'new') }] });
    expect(view.total).toBe(11);
    expect((view.item(10) as { text: string }).text).toBe('new');
    b.fire('timeline:update', { sessionId: 'other', total: 99, reset: false, changed: [] });
    expect(view.total).toBe(11);

    setTotal(3);
    const generation = view.generation;
    b.fire('timeline:update', { sessionId: 's1', total: 0, reset: true, changed: [] });
    await flush();
    await flush();
    expect(b.count('open_timeline')).toBe(2);
    expect(view.total).toBe(3);
    expect(view.generation).toBeGreaterThan(generation);
  });

  it('fetches a truncated item whole', async () => {
    const { view } = setup(10);
    await view.open('s1');
    await view.showAll(4);
    expect((view.item(4) as { text: string }).text).toBe('the whole text');
  });
});

describe('the timeline feed', () => {
  it('is busy exactly while a page is on its way, and numbers its articles over the whole transcript', async () => {
    const { render, screen, waitFor, within } = await import('@testing-library/svelte');
    const { default: Timeline } = await import('../src/components/Timeline.svelte');
    const { session } = await import('./helpers');
    const answers: (() => void)[] = [];
    const later = (page: () => TimelinePage) => new Promise<TimelinePage>((r) => answers.push(() => r(page())));
    const b = new MockBackend({
      open_timeline: (a) => later(() => pageOf(a.sessionId, 1000, 800, 1000)),
      timeline_range: (a) => later(() => pageOf(a.sessionId, 1000, a.start, a.end)),
      close_timeline: () => null,
    });
    const view = new TimelineView(b);
    render(Timeline, { props: { view, session: session('s1', { goal: 'tidy up' }) } });
    const feed = screen.getByRole('feed', { name: 'Timeline of tidy up' });
    expect(feed.getAttribute('aria-busy')).toBe('false');

    void view.open('s1');
    await waitFor(() => expect(feed.getAttribute('aria-busy')).toBe('true'));
    // The tail arrives; the view (at the top: jsdom has no layout) asks for the first items.
    answers.shift()?.();
    await waitFor(() => expect(b.count('timeline_range')).toBeGreaterThan(0));
    expect(feed.getAttribute('aria-busy')).toBe('true');
    await waitFor(() => {
      while (answers.length) answers.shift()?.();
      expect(feed.getAttribute('aria-busy')).toBe('false');
    });

    const articles = within(feed).getAllByRole('article');
    expect(articles.length).toBeGreaterThan(0);
    expect(articles.map((a) => [a.getAttribute('aria-posinset'), a.getAttribute('aria-setsize')])).toEqual(articles.map((_, i) => [String(i + 1), '1000']));
  });
});
