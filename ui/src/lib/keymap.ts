// The window's key bindings, as data, and the one function that picks a binding for a key
// press. Pure: the App reads the facts it needs from the DOM (`keyContext`) and runs the
// action; this module never focuses, opens or prevents anything itself. The roster's own
// keys (j, k, Enter, r…) live in Roster.svelte, which holds the focus when they apply.

/** What a binding asks the App to do. */
export type KeyAction = 'next-attention' | 'new-session' | 'go-sessions' | 'focus-roster' | 'focus-search' | 'clear-search' | 'show-keys';

/** Where the key was pressed and what the window shows, as far as the bindings care. */
export interface KeyContext {
  /** The focus is in a field, a dialog or the terminal: keys there are text. */
  typing: boolean;
  /** The focus is inside the timeline. */
  inTimeline: boolean;
  /** The focus is on a button (its own keys come first). */
  onButton: boolean;
  /** Nothing has the focus: the key reached the window from the page's body. */
  atBody: boolean;
  /** The "New session" dialog is open. */
  dialogOpen: boolean;
  /** The Sessions page is shown (not Resources or Settings). */
  onSessions: boolean;
  /** The roster's search has a query. */
  searching: boolean;
  /** Single-character shortcuts are on (the user's preference, WCAG 2.1.4). */
  letterKeys: boolean;
}

/** The parts of a KeyboardEvent the map reads. */
export type KeyPress = Pick<KeyboardEvent, 'key' | 'altKey' | 'ctrlKey' | 'metaKey' | 'defaultPrevented'>;

export interface Binding {
  keys: readonly string[];
  when: (c: KeyContext) => boolean;
  action: KeyAction;
  /** The key still does its default (Escape in the search clears it without taking the key). */
  keepDefault?: boolean;
}

/** The roster's navigation keys: with nothing focused, the first of them lands in the roster. */
export const NAV_KEYS: readonly string[] = ['ArrowDown', 'ArrowUp', 'j', 'k', 'Home', 'End'];

/** In order: the first binding whose key matches and whose condition holds wins. */
export const BINDINGS: readonly Binding[] = [
  { keys: ['n'], when: (c) => !c.typing && !c.dialogOpen, action: 'next-attention' },
  { keys: ['c'], when: (c) => !c.typing && !c.dialogOpen, action: 'new-session' },
  { keys: ['?'], when: (c) => !c.typing && !c.dialogOpen, action: 'show-keys' },
  { keys: ['Escape'], when: (c) => !c.typing && !c.onSessions, action: 'go-sessions' },
  { keys: ['Escape'], when: (c) => c.inTimeline, action: 'focus-roster' },
  { keys: ['ArrowLeft', 'h'], when: (c) => c.inTimeline && !c.typing && !c.onButton, action: 'focus-roster' },
  { keys: ['/'], when: (c) => !c.typing, action: 'focus-search' },
  { keys: ['Escape'], when: (c) => !c.typing && c.searching, action: 'clear-search', keepDefault: true },
  { keys: NAV_KEYS, when: (c) => !c.typing && c.atBody, action: 'focus-roster' },
];

/** A single printable character with no modifier (Shift aside). */
const isLetter = (p: KeyPress) => p.key.length === 1 && !p.ctrlKey && !p.altKey && !p.metaKey;

/**
 * The binding for a key press, or null when the window leaves the key alone: already handled,
 * held with Alt, Ctrl or Meta, a letter while letter shortcuts are off, or no binding applies.
 */
export function bindingFor(p: KeyPress, c: KeyContext, bindings: readonly Binding[] = BINDINGS): Binding | null {
  if (p.defaultPrevented || p.altKey || p.ctrlKey || p.metaKey) return null;
  if (!c.letterKeys && isLetter(p)) return null;
  return bindings.find((b) => b.keys.includes(p.key) && b.when(c)) ?? null;
}

/** Where the focus is, read from the element a key press came from. */
export function focusFacts(target: EventTarget | null, body: HTMLElement | null): Pick<KeyContext, 'typing' | 'inTimeline' | 'onButton' | 'atBody'> {
  const t = target instanceof Element ? target : null;
  return {
    typing: !!t?.closest('input, textarea, select, [contenteditable], [role=dialog], .xterm'),
    inTimeline: !!t?.closest('[data-testid="timeline"]'),
    onButton: !!t?.closest('button'),
    atBody: !!t && t === body,
  };
}

/** Ctrl+Shift+F (⌘⇧F): the search over all history, from anywhere but a dialog. */
export function isHistorySearchKey(p: KeyPress & Pick<KeyboardEvent, 'shiftKey'>): boolean {
  return !p.defaultPrevented && (p.ctrlKey || p.metaKey) && p.shiftKey && !p.altKey && p.key.toLowerCase() === 'f';
}
