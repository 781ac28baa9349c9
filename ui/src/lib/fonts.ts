// The terminal's fonts, bundled so every machine draws Claude Code's screen alike: DejaVu
// Sans Mono (box drawing, blocks, ●, ✻, ❯, ☐ …), and for the few characters it lacks
// (⏺ ⎿ ⏵ ⏸ ⧉ ※ ⎯) those of STIX Two Math, limited to them. Both under free licences
// (Bitstream Vera / public domain; SIL OFL 1.1), from the @fontsource packages.

import monoUrl from '@fontsource/dejavu-mono/files/dejavu-mono-latin-400-normal.woff2?url';
import symbolsUrl from '@fontsource/stix-two-math/files/stix-two-math-latin-400-normal.woff2?url';

export const TERMINAL_FONT = "'Mimesis Mono', 'Mimesis Symbols', monospace";

/** What the terminal font's fallback adds; each a character Claude Code draws. */
export const SYMBOL_RANGE = 'U+203B, U+23AF, U+23BF, U+23F5-23FA, U+29C9';

let loading: Promise<void> | null = null;

/** Loads both faces once; resolves (never rejects) when they are ready or failed to load. */
export function loadTerminalFonts(): Promise<void> {
  loading ??= (async () => {
    if (typeof FontFace === 'undefined' || !document.fonts) return;
    const faces = [new FontFace('Mimesis Mono', `url(${monoUrl}) format('woff2')`), new FontFace('Mimesis Symbols', `url(${symbolsUrl}) format('woff2')`, { unicodeRange: SYMBOL_RANGE })];
    await Promise.all(
      faces.map(async (f) => {
        try {
          document.fonts.add(await f.load());
        } catch {
          // A font that does not load: the system's monospace draws instead.
        }
      }),
    );
  })();
  return loading;
}
