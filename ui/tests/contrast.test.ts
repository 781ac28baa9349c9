import { expect, it } from 'vitest';
import css from '../src/app.css?raw';

/** WCAG relative luminance of #rrggbb. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const lin = (c: number) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

it('the primary button has a contrast of at least 4.5:1 in both themes', () => {
  const all = (name: string) => [...css.matchAll(new RegExp(`--${name}:\\s*(#[0-9a-fA-F]{6})`, 'g'))].map((m) => m[1]);
  const accents = all('accent');
  const on = all('on-accent');
  expect(accents.length).toBe(2);
  expect(on.length).toBe(2);
  for (let i = 0; i < 2; i++) expect(contrast(accents[i], on[i])).toBeGreaterThanOrEqual(4.5);
});
