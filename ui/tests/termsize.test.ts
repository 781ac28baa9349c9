import { expect, it } from 'vitest';
import { SYMBOL_RANGE } from '../src/lib/fonts';
import { hostOf, measureTerminalSize, TERMINAL_PADDING, validSize } from '../src/lib/termsize';

it("a new session's terminal is measured in the place it will have, never nonsense", async () => {
  expect(hostOf({ width: 1000, height: 800 }).width).toBe(1000 - TERMINAL_PADDING.x);
  expect(validSize({ cols: 120, rows: 40 })).toBe(true);
  expect(validSize({ cols: 3, rows: 40 })).toBe(false);
  expect(validSize({ cols: 120.5, rows: 40 })).toBe(false);
  // (What other files left in the document, when they share it: `vitest --no-isolate`.)
  const before = document.body.children.length;
  expect(await measureTerminalSize({ width: 0, height: 800 })).toBeNull();
  // No canvas here (jsdom): it cannot be measured, and says so instead of guessing.
  expect(await measureTerminalSize({ width: 900, height: 600 })).toBeNull();
  // Its measuring element is gone again.
  expect(document.body.children.length).toBe(before);
});

it("the terminal's symbol font covers the characters Claude Code draws that DejaVu Sans Mono lacks", () => {
  const covered = (c: string): boolean =>
    SYMBOL_RANGE.split(',').some((r) => {
      const [a, b] = r.trim().slice(2).split('-');
      const cp = c.codePointAt(0) ?? 0;
      return cp >= parseInt(a, 16) && cp <= parseInt(b ?? a, 16);
    });
  for (const c of ['⏺', '⎿', '⏵', '⏸', '⧉', '※', '⎯']) expect(covered(c), c).toBe(true);
});
