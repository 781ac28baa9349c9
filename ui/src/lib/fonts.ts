// The terminal's fonts, bundled so every machine draws Claude Code's screen alike: DejaVu
// Sans Mono (box drawing, blocks, ●, ✻, ❯, ☐ …), and for the few characters it lacks
// (⏺ ⎿ ⏵ ⏸ ⧉ ※ ⎯) those of STIX Two Math, limited to them. Both under free licences
// (Bitstream Vera / public domain; SIL OFL 1.1), from the @fontsource packages.

import monoUrl from '@fontsource/dejavu-mono/files/dejavu-mono-latin-400-normal.woff2?url';
import symbolsUrl from '@fontsource/stix-two-math/files/stix-two-math-latin-400-normal.woff2?url';

export const TERMINAL_FONT = "'Mimesis Mono', 'Mimesis Symbols', monospace";

/** What the terminal font's fallback adds; each a character Claude Code draws. */
export const SYMBOL_RANGE = 'U+203B, U+23AF, U+23BF, U+23F5-23FA, U+29C9';

let faces: FontFace[] | null = null;
let loading: Promise<void> | null = null;

/**
 * Makes both faces known to the page without loading them: each loads when text first needs
 * it (the symbols only when one of their characters is drawn), as an @font-face would; the
 * mono face from the system's DejaVu Sans Mono when it is installed.
 */
export function registerTerminalFonts(): FontFace[] {
  if (faces) return faces;
  faces = [];
  if (typeof FontFace === 'undefined' || !document.fonts) return faces;
  faces = [
    // The same face installed on the system is taken as it is (most Linux desktops have it):
    // nothing to fetch and decode, and a launch's monospace text (the roster's folders) is
    // drawn at once rather than hidden until the bundled file has loaded.
    new FontFace('Mimesis Mono', `local('DejaVu Sans Mono'), local('DejaVuSansMono'), url(${monoUrl}) format('woff2')`),
    new FontFace('Mimesis Symbols', `url(${symbolsUrl}) format('woff2')`, { unicodeRange: SYMBOL_RANGE }),
  ];
  for (const f of faces) document.fonts.add(f);
  return faces;
}

/** Loads both faces now (the terminal measures its cell once, with the font it has); resolves, never rejects. */
export function loadTerminalFonts(): Promise<void> {
  loading ??= Promise.all(
    registerTerminalFonts().map((f) =>
      f.load().catch(() => {
        // A font that does not load: the system's monospace draws instead.
      }),
    ),
  ).then(() => undefined);
  return loading;
}
