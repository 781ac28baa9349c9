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

/** `fg` at `alpha` over `bg` (#rrggbb both), as #rrggbb. */
function blend(fg: string, alpha: number, bg: string): string {
  const c = (hex: string, i: number) => parseInt(hex.slice(i, i + 2), 16);
  return '#' + [1, 3, 5].map((i) => Math.round(c(fg, i) * alpha + c(bg, i) * (1 - alpha)).toString(16).padStart(2, '0')).join('');
}

it('status pills and secondary text read at 4.5:1 in both themes, on the selected row too (axe found them short)', () => {
  const all = (name: string) => [...css.matchAll(new RegExp(`--${name}:\\s*(#[0-9a-fA-F]{6})`, 'g'))].map((m) => m[1]);
  for (const ground of ['bg-pane', 'bg-open', 'bg-selected']) {
    const grounds = all(ground);
    expect(grounds.length, ground).toBe(2);
    for (const name of ['working', 'idle', 'muted', 'faint']) {
      const colours = all(name);
      expect(colours.length, name).toBe(2);
      // A pill is its colour at 13 % over the row; secondary text sits on the row.
      for (let i = 0; i < 2; i++) {
        const bg = name === 'working' || name === 'idle' ? blend(colours[i], 0.13, grounds[i]) : grounds[i];
        expect(contrast(colours[i], bg), `${name} on ${ground} (${i ? 'light' : 'dark'})`).toBeGreaterThanOrEqual(4.5);
      }
    }
  }
});

it('the prompt label and error tags read at 4.5:1 in both themes (axe found the light ones short)', () => {
  const all = (name: string) => [...css.matchAll(new RegExp(`--${name}:\\s*(#[0-9a-fA-F]{6})`, 'g'))].map((m) => m[1]);
  const [accent, promptBg, error, pane] = [all('accent'), all('prompt-bg'), all('error'), all('bg-pane')];
  for (let i = 0; i < 2; i++) {
    expect(contrast(accent[i], promptBg[i]), `accent on prompt (${i})`).toBeGreaterThanOrEqual(4.5);
    expect(contrast(error[i], blend(error[i], 0.09, pane[i])), `error tag (${i})`).toBeGreaterThanOrEqual(4.5);
  }
});

it('every status colour reads at 4.5:1 in both themes: as a pill, and as text on its row (issue 37: the light approval pill was 2.92:1)', () => {
  const all = (name: string) => [...css.matchAll(new RegExp(`--${name}:\\s*(#[0-9a-fA-F]{6})`, 'g'))].map((m) => m[1]);
  const theme = (i: number) => (i ? 'light' : 'dark');
  // Where a row can be: the pane, open, selected (a status row's tint lies over the pane).
  const grounds = ['bg-pane', 'bg-open', 'bg-selected', 'bg-elev'].map(all);
  for (const g of grounds) expect(g.length).toBe(2);
  for (const status of ['working', 'approval', 'input', 'idle', 'live']) {
    const colour = all(status);
    expect(colour.length, status).toBe(2);
    for (let i = 0; i < 2; i++) {
      if (status === 'approval' || status === 'input') {
        // A solid pill: its ink on its colour.
        const ink = all(`${status}-ink`);
        expect(contrast(ink[i], colour[i]), `${status} pill (${theme(i)})`).toBeGreaterThanOrEqual(4.5);
      }
      for (const [k, g] of grounds.entries()) {
        expect(contrast(colour[i], g[i]), `${status} text on ${g[i]} (${theme(i)})`).toBeGreaterThanOrEqual(4.5);
        // A tinted pill (working, idle) on any row; the row's own tint (approval, input, the
        // attention button) only over the pane or a card: an open or selected row shows its own ground.
        if ((status === 'approval' || status === 'input') && (k === 1 || k === 2)) continue;
        // "Live" (a supervised session running) is text and a dot on the ground, never tinted.
        if (status === 'live') continue;
        const tint = blend(colour[i], 0.13, g[i]);
        expect(contrast(colour[i], tint), `${status} on its tint over ${g[i]} (${theme(i)})`).toBeGreaterThanOrEqual(4.5);
      }
    }
  }
});
