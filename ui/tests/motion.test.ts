// No endless animation anywhere: attention is a few beats on a change, then still (an endless
// one repaints the window for as long as something needs the user: 17.6 % of a core, issue 37).
// Every component's compiled stylesheet and the global one are read as the browser gets them.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { compile } from 'svelte/compiler';
import { describe, expect, it } from 'vitest';

const SRC = join(__dirname, '..', 'src');

function files(dir: string, ext: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), ext) : e.name.endsWith(ext) ? [join(dir, e.name)] : [],
  );
}

/** Every stylesheet: app.css and each component's, compiled. */
function sheets(): { file: string; css: string }[] {
  const out = files(SRC, '.css').map((file) => ({ file, css: readFileSync(file, 'utf8') }));
  for (const file of files(SRC, '.svelte')) {
    const css = compile(readFileSync(file, 'utf8'), { filename: file, css: 'external' }).css?.code ?? '';
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
  });

  it('a user who asks for reduced motion gets none', () => {
    const app = readFileSync(join(SRC, 'app.css'), 'utf8');
    const reduced = app.match(/@media \(prefers-reduced-motion: reduce\)\s*\{([\s\S]*?)\n\}/);
    expect(reduced?.[1]).toMatch(/animation:\s*none\s*!important/);
    expect(reduced?.[1]).toMatch(/transition:\s*none\s*!important/);
  });
});
