// The size the embedded terminal will have, so a new session's agent starts at it and its
// first screen does not wrap: a PTY is created before its terminal is on screen.

import { loadTerminalFonts, TERMINAL_FONT } from './fonts';

export interface TermSize {
  cols: number;
  rows: number;
}

/** The options every embedded terminal is made with (its cell size follows from them). */
export const TERMINAL_OPTIONS = { fontFamily: TERMINAL_FONT, fontSize: 13, lineHeight: 1.15 } as const;

/** The terminal's padding (`.terminal-wrap` in TerminalPane), in CSS pixels. */
export const TERMINAL_PADDING = { x: 12 + 4, y: 8 + 4 };

/** About the height of the session view's bars above and below its terminal, in CSS pixels. */
const CHROME_HEIGHT = 130;

export function validSize(s: TermSize): boolean {
  return Number.isInteger(s.cols) && Number.isInteger(s.rows) && s.cols >= 20 && s.cols <= 1000 && s.rows >= 5 && s.rows <= 500;
}

/** Where the terminal of a session will be, from the size of the pane that will show it. */
export function hostOf(pane: { width: number; height: number }): { width: number; height: number } {
  return { width: pane.width - TERMINAL_PADDING.x, height: pane.height - CHROME_HEIGHT - TERMINAL_PADDING.y };
}

/**
 * The columns and rows an embedded terminal gets in a host of this size, measured by a
 * hidden terminal made like the real one (same fonts, same fitting): exact for the width,
 * which is what decides whether the agent's lines wrap. Null when it cannot be measured.
 */
export async function measureTerminalSize(host: { width: number; height: number }): Promise<TermSize | null> {
  if (host.width <= 0 || host.height <= 0) return null;
  const el = document.createElement('div');
  el.setAttribute('aria-hidden', 'true');
  Object.assign(el.style, { position: 'fixed', left: '-10000px', top: '0', width: `${host.width}px`, height: `${host.height}px`, visibility: 'hidden' });
  document.body.append(el);
  try {
    const [{ Terminal }, { FitAddon }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit'), loadTerminalFonts()]);
    const t = new Terminal({ ...TERMINAL_OPTIONS, scrollback: 3_000 });
    const fit = new FitAddon();
    t.loadAddon(fit);
    t.open(el);
    const d = fit.proposeDimensions();
    t.dispose();
    const size = d ? { cols: d.cols, rows: d.rows } : null;
    return size && validSize(size) ? size : null;
  } catch {
    return null;
  } finally {
    el.remove();
  }
}
