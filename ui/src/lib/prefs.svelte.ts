// Preferences of this window (kept in the webview's storage, not the engine's settings).

const LETTER_KEYS = 'mimesis.letter-keys';
const TERMINAL_READER = 'mimesis.terminal-screen-reader';
const SPEND_DAYS = 'mimesis.spend-days';

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

/** A stored whole number, or null (none stored, not a number, or storage off). */
function loadNumber(storage: Pick<Storage, 'getItem'> | null, key: string): number | null {
  try {
    const v = Number(storage?.getItem(key) ?? NaN);
    return Number.isInteger(v) ? v : null;
  } catch {
    return null;
  }
}

class Prefs {
  /** Single-character shortcuts (j, k, n, c, r, h, /): on unless turned off (WCAG 2.1.4). */
  letterKeys = $state(load(globalThis.localStorage ?? null));

  /** The embedded terminal's screen-reader mode (xterm's `screenReaderMode`): off unless turned on. */
  terminalReader = $state(load(globalThis.localStorage ?? null, TERMINAL_READER, false));

  /** The days the Spend page shows (the page checks it is one it offers): null until one is chosen. */
  spendDays = $state(loadNumber(globalThis.localStorage ?? null, SPEND_DAYS));

  setSpendDays(days: number): void {
    this.spendDays = days;
    try {
      globalThis.localStorage?.setItem(SPEND_DAYS, String(days));
    } catch {
      // Storage off: this window still remembers.
    }
  }

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
