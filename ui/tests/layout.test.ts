import { fireEvent, render } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import Divider from '../src/components/Divider.svelte';
import { clampShare, loadShare, saveShare } from '../src/lib/layout';

it('the roster share is kept between 20 and 70 percent and remembered', () => {
  expect(clampShare(5)).toBe(20);
  expect(clampShare(95)).toBe(70);
  expect(clampShare(Number.NaN)).toBe(40);
  const mem = new Map<string, string>();
  const storage = { getItem: (k: string) => mem.get(k) ?? null, setItem: (k: string, v: string) => void mem.set(k, v) };
  expect(loadShare(storage)).toBe(40);
  saveShare(33.4, storage);
  expect(loadShare(storage)).toBe(33);
});

it('the divider moves with the arrow keys', async () => {
  let value = 40;
  const { container } = render(Divider, { props: { value, onchange: (p: number) => (value = p) } });
  const d = container.querySelector('[data-testid=divider]') as HTMLElement;
  expect(d.getAttribute('role')).toBe('separator');
  await fireEvent.keyDown(d, { key: 'ArrowRight' });
  expect(value).toBe(42);
  await fireEvent.keyDown(d, { key: 'ArrowLeft', shiftKey: true });
  expect(value).toBe(30);
});
