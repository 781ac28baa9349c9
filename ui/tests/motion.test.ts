// No endless animation anywhere: attention is a few beats on a change, then still (an endless
// one repaints the window for as long as something needs the user: 17.6 % of a core, issue 37).
// Every component's compiled stylesheet and the global one are read as the browser gets them.
import { compile } from 'svelte/compiler';
import { describe, expect, it } from 'vitest';
import app from '../src/app.css?raw';

const CSS = import.meta.glob<string>('../src/**/*.css', { query: '?raw', import: 'default', eager: true });
const SVELTE = import.meta.glob<string>('../src/**/*.svelte', { query: '?raw', import: 'default', eager: true });

/** Every stylesheet: the global ones and each component's, compiled. */
function sheets(): { file: string; css: string }[] {
  const out = Object.entries(CSS).map(([file, css]) => ({ file, css }));
  for (const [file, src] of Object.entries(SVELTE)) {
    const css = compile(src, { filename: file, css: 'external' }).css?.code ?? '';
    if (css) out.push({ file, css });
  }
  return out;
}

/** The declarations of `css` that animate: `animation` and `animation-iteration-count`. */
function animations(css: string): string[] {
  const plain = css.replace(/\/\*[\s\S]*?\*\//g, '');
  return [...plain.matchAll(/animation(?:-iteration-count)?\s*:\s*([^;}]+)/g)].map((m) => m[1].trim());
}

describe('motion', () => {
  it('no stylesheet rule animates endlessly', () => {
    const all = sheets();
    // The components are there (a wrong path would pass vacuously).
    expect(all.length).toBeGreaterThan(20);
    const endless = all.flatMap(({ file, css }) => animations(css).filter((a) => /\binfinite\b/.test(a)).map((a) => `${file}: ${a}`));
    expect(endless).toEqual([]);
    // And there are animations to check: the status badge's and the toolbar's beats.
    expect(all.flatMap(({ css }) => animations(css)).length).toBeGreaterThan(3);
    // (Compiling every component takes seconds on a busy machine.)
  }, 60_000);

  it('a user who asks for reduced motion gets none', () => {
    const reduced = app.match(/@media \(prefers-reduced-motion: reduce\)\s*\{([\s\S]*?)\n\}/);
    expect(reduced?.[1]).toMatch(/animation:\s*none\s*!important/);
    expect(reduced?.[1]).toMatch(/transition:\s*none\s*!important/);
  });
});
