// The key map on its own: which binding a press picks, given where the focus is. The same
// keys through the whole window are in keyboard.test.ts.
import { describe, expect, it } from 'vitest';
import { bindingFor, focusFacts, NAV_KEYS, type KeyContext, type KeyPress } from '../src/lib/keymap';

const idle: KeyContext = { typing: false, inTimeline: false, onButton: false, atBody: false, dialogOpen: false, onSessions: true, searching: false, letterKeys: true };
const press = (key: string, mods: Partial<KeyPress> = {}): KeyPress => ({ key, altKey: false, ctrlKey: false, metaKey: false, defaultPrevented: false, ...mods });
const action = (key: string, c: Partial<KeyContext> = {}, mods: Partial<KeyPress> = {}) => bindingFor(press(key, mods), { ...idle, ...c })?.action ?? null;

describe('bindingFor', () => {
  it('n, c, / and the navigation keys, away from fields', () => {
    expect(action('n')).toBe('next-attention');
    expect(action('c')).toBe('new-session');
    expect(action('/')).toBe('focus-search');
    expect(action('?')).toBe('show-keys');
    expect(action('?', { typing: true })).toBeNull();
    for (const k of NAV_KEYS) {
      expect(action(k, { atBody: true })).toBe('focus-roster');
      expect(action(k)).toBeNull();
    }
    expect(action('x')).toBeNull();
  });

  it('keys typed in a field, a dialog or the terminal are text', () => {
    for (const k of ['n', 'c', '/', 'j', 'h', 'ArrowLeft']) expect(action(k, { typing: true, atBody: true, inTimeline: true })).toBeNull();
    // Escape typed in the timeline's own field still goes back to the roster.
    expect(action('Escape', { typing: true, inTimeline: true })).toBe('focus-roster');
    expect(action('Escape', { typing: true, searching: true, onSessions: false })).toBeNull();
  });

  it('n and c wait while the new-session dialog is open', () => {
    expect(action('n', { dialogOpen: true })).toBeNull();
    expect(action('c', { dialogOpen: true })).toBeNull();
  });

  it('Escape: another page first, then the timeline, then the search; only clearing the search keeps its default', () => {
    expect(action('Escape', { onSessions: false, inTimeline: true, searching: true })).toBe('go-sessions');
    expect(action('Escape', { inTimeline: true, searching: true })).toBe('focus-roster');
    const clear = bindingFor(press('Escape'), { ...idle, searching: true });
    expect(clear?.action).toBe('clear-search');
    expect(clear?.keepDefault).toBe(true);
    expect(bindingFor(press('Escape'), { ...idle, inTimeline: true })?.keepDefault).toBeFalsy();
    expect(action('Escape')).toBeNull();
  });

  it('h and ArrowLeft leave the timeline, except on a button', () => {
    expect(action('h', { inTimeline: true })).toBe('focus-roster');
    expect(action('ArrowLeft', { inTimeline: true })).toBe('focus-roster');
    expect(action('ArrowLeft', { inTimeline: true, onButton: true })).toBeNull();
    expect(action('h')).toBeNull();
  });

  it('a press already handled, or held with Alt, Ctrl or Meta, is left alone; Shift is not a modifier here', () => {
    expect(action('n', {}, { defaultPrevented: true })).toBeNull();
    expect(action('n', {}, { ctrlKey: true })).toBeNull();
    expect(action('/', {}, { altKey: true })).toBeNull();
    expect(action('c', {}, { metaKey: true })).toBeNull();
    expect(action('/', {}, { shiftKey: true } as Partial<KeyPress>)).toBe('focus-search');
  });

  it('with letter shortcuts off, no single character acts; Escape and the arrows still do', () => {
    const off = { letterKeys: false, atBody: true, inTimeline: false };
    for (const k of ['n', 'c', '/', 'j', 'k']) expect(action(k, off)).toBeNull();
    expect(action('h', { letterKeys: false, inTimeline: true })).toBeNull();
    expect(action('ArrowDown', off)).toBe('focus-roster');
    expect(action('End', off)).toBe('focus-roster');
    expect(action('ArrowLeft', { letterKeys: false, inTimeline: true })).toBe('focus-roster');
    expect(action('Escape', { letterKeys: false, searching: true })).toBe('clear-search');
  });
});

describe('focusFacts', () => {
  it('reads fields, dialogs, the terminal, the timeline and buttons from the target', () => {
    document.body.replaceChildren();
    const tl = document.createElement('div');
    tl.dataset.testid = 'timeline';
    const btn = document.createElement('button');
    const input = document.createElement('input');
    tl.append(btn, input);
    const term = document.createElement('div');
    term.className = 'xterm';
    const inner = document.createElement('span');
    term.append(inner);
    const dialog = document.createElement('div');
    dialog.setAttribute('role', 'dialog');
    const inDialog = document.createElement('a');
    dialog.append(inDialog);
    document.body.append(tl, term, dialog);

    const facts = (t: EventTarget | null) => focusFacts(t, document.body);
    expect(facts(document.body)).toEqual({ typing: false, inTimeline: false, onButton: false, atBody: true });
    expect(facts(tl)).toEqual({ typing: false, inTimeline: true, onButton: false, atBody: false });
    expect(facts(btn)).toEqual({ typing: false, inTimeline: true, onButton: true, atBody: false });
    expect(facts(input).typing).toBe(true);
    expect(facts(inner).typing).toBe(true);
    expect(facts(inDialog).typing).toBe(true);
    expect(facts(null)).toEqual({ typing: false, inTimeline: false, onButton: false, atBody: false });
    document.body.replaceChildren();
  });
});
