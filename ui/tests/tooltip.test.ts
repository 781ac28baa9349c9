// Tooltips instead of the native `title`: none in any component, and the page's own come on
// hover or keyboard focus after a delay and go when the pointer leaves or a key comes.
import { fireEvent } from '@testing-library/svelte';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatMoment } from '../src/lib/format';
import { TOOLTIP_DELAY_MS, installTooltips } from '../src/lib/tooltip';

const SVELTE = import.meta.glob<string>('../src/**/*.svelte', { query: '?raw', import: 'default', eager: true });

describe('tooltips', () => {
  afterEach(() => vi.useRealTimers());

  it('no element has a native title (a dialog\'s title prop is not one)', () => {
    const files = Object.entries(SVELTE);
    expect(files.length).toBeGreaterThan(20);
    const titled = files.flatMap(([f, src]) =>
      src
        .split('\n')
        .filter((l) => (/\stitle=[{"]/.test(l) || /\s\{title\}/.test(l)) && !/<Modal\b/.test(l))
        .map((l) => `${f}: ${l.trim()}`),
    );
    expect(titled).toEqual([]);
  });

  it('shows after a delay on hover and on keyboard focus, and goes on leave, Escape or a press', async () => {
    vi.useFakeTimers();
    const stop = installTooltips();
    const b = document.createElement('button');
    b.dataset.tip = 'Open the next session';
    b.textContent = '●';
    const s = document.createElement('span');
    s.id = 's';
    s.dataset.tip = 'whole';
    s.textContent = 'whole';
    document.body.append(b, s);
    const bubble = document.getElementById('mimesis-tooltip') as HTMLElement;
    expect(bubble.getAttribute('role')).toBe('tooltip');
    await fireEvent.pointerOver(b);
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS - 1);
    expect(bubble.hidden).toBe(true);
    vi.advanceTimersByTime(1);
    expect(bubble.hidden).toBe(false);
    expect(bubble.textContent).toBe('Open the next session');
    expect(b.getAttribute('aria-describedby')).toBe('mimesis-tooltip');
    await fireEvent.pointerOut(b, { relatedTarget: document.body });
    expect(bubble.hidden).toBe(true);
    expect(b.hasAttribute('aria-describedby')).toBe(false);
    // Escape hides it.
    await fireEvent.pointerOver(b);
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS);
    await fireEvent.keyDown(b, { key: 'Escape' });
    expect(bubble.hidden).toBe(true);
    // A press before the delay: nothing comes.
    await fireEvent.pointerOver(b);
    await fireEvent.pointerDown(b);
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS * 2);
    expect(bubble.hidden).toBe(true);
    // Text the element shows whole already: no tooltip repeats it.
    await fireEvent.pointerOver(document.getElementById('s') as HTMLElement);
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS);
    expect(bubble.hidden).toBe(true);
    stop();
    expect(document.getElementById('mimesis-tooltip')).toBeNull();
  });

  it('writes a moment\'s tip (`data-tip-at`) when it shows', async () => {
    vi.useFakeTimers();
    const stop = installTooltips();
    const when = document.createElement('span');
    when.dataset.tipAt = '2026-11-24T14:03:07Z';
    when.textContent = '5 d ago';
    document.body.append(when);
    const bubble = document.getElementById('mimesis-tooltip') as HTMLElement;
    await fireEvent.pointerOver(when);
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS);
    expect(bubble.hidden).toBe(false);
    expect(bubble.textContent).toBe(formatMoment('2026-11-24T14:03:07Z', Date.now()));
    expect(bubble.textContent).toMatch(/^2[45] Nov 2026, \d\d:\d\d$/);
    stop();
    when.remove();
  });
});
