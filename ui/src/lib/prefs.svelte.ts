// Preferences of this window (kept in the webview's storage, not the engine's settings).

const LETTER_KEYS = 'mimesis.letter-keys';
const TERMINAL_READER = 'mimesis.terminal-screen-reader';

/** A stored on/off, `fallback` when none is stored (or storage is off). */
function load(storage: Pick<Storage, 'getItem'> | null, key = LETTER_KEYS, fallback = true): boolean {
  try {
    const v = storage?.getItem(key);
    return v === 'on' ? true : v === 'off' ? false : fallback;
  } catch {
    return fallback;
  }
}

function save(key: string, on: boolean): void {
  try {
    globalThis.localStorage?.setItem(key, on ? 'on' : 'off');
  } catch {
    // Storage off: this window still remembers.
  }
}

class Prefs {
  /** Single-character shortcuts (j, k, n, c, r, h, /): on unless turned off (WCAG 2.1.4). */
  letterKeys = $state(load(globalThis.localStorage ?? null));

  /** The embedded terminal's screen-reader mode (xterm's `screenReaderMode`): off unless turned on. */
  terminalReader = $state(load(globalThis.localStorage ?? null, TERMINAL_READER, false));

  setLetterKeys(on: boolean): void {
    this.letterKeys = on;
    save(LETTER_KEYS, on);
  }

  setTerminalReader(on: boolean): void {
    this.terminalReader = on;
    save(TERMINAL_READER, on);
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
