// Preferences of this window (kept in the webview's storage, not the engine's settings).

const LETTER_KEYS = 'mimesis.letter-keys';

function load(storage: Pick<Storage, 'getItem'> | null): boolean {
  try {
    return storage?.getItem(LETTER_KEYS) !== 'off';
  } catch {
    return true;
  }
}

class Prefs {
  /** Single-character shortcuts (j, k, n, c, r, h, /): on unless turned off (WCAG 2.1.4). */
  letterKeys = $state(load(globalThis.localStorage ?? null));

  setLetterKeys(on: boolean): void {
    this.letterKeys = on;
    try {
      globalThis.localStorage?.setItem(LETTER_KEYS, on ? 'on' : 'off');
    } catch {
      // Storage off: this window still remembers.
    }
  }
}

export const prefs = new Prefs();

/**
 * A press of one printable character with no modifier (Shift aside): a shortcut only while
 * single-character shortcuts are on. Keys like Escape, arrows, Home or Enter are not.
 */
export function letterShortcutOff(e: KeyboardEvent): boolean {
  return !prefs.letterKeys && e.key.length === 1 && !e.ctrlKey && !e.altKey && !e.metaKey;
}
