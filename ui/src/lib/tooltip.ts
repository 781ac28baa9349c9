// Tooltips that come on hover or keyboard focus after a short delay and go when the pointer
// or the focus leaves, a key or a press comes, or the page scrolls: never the native `title`,
// which lingers over rows and cannot be reached from the keyboard. An element asks for one
// with `data-tip="…"`; one set of listeners on the document serves them all (rows come and go
// by the hundred: nothing is attached to each), and one tooltip element shows it. Nothing is
// shown when the element already shows the whole text. A moment's tip (`data-tip-at="<ISO
// time>"`, say "24 Nov 2026, 14:03") is written when it shows: a row need not format its date
// to be drawn.

import { formatMoment } from './format';

/** How long the pointer or the focus rests on an element before its tooltip shows. */
export const TOOLTIP_DELAY_MS = 500;

/** Starts the page's tooltips; returns how to stop them. */
export function installTooltips(doc: Document = document): () => void {
  const win = doc.defaultView ?? window;
  const bubble = doc.createElement('div');
  bubble.id = 'mimesis-tooltip';
  bubble.className = 'tooltip';
  bubble.setAttribute('role', 'tooltip');
  bubble.hidden = true;
  doc.body.append(bubble);
  let owner: HTMLElement | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const tipOf = (t: EventTarget | null): HTMLElement | null =>
    t instanceof win.Element ? (t.closest('[data-tip], [data-tip-at]') as HTMLElement | null) : null;

  function hide(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    owner?.removeAttribute('aria-describedby');
    owner = null;
    bubble.hidden = true;
  }

  function show(el: HTMLElement): void {
    const at = el.dataset.tipAt;
    const text = el.dataset.tip ?? (at ? formatMoment(at, Date.now()) : '');
    if (!el.isConnected || !text || showsItAll(el, text)) return;
    bubble.textContent = text;
    bubble.hidden = false;
    owner = el;
    el.setAttribute('aria-describedby', bubble.id);
    const r = el.getBoundingClientRect();
    const w = bubble.offsetWidth;
    const h = bubble.offsetHeight;
    bubble.style.left = `${Math.max(4, Math.min(r.left, win.innerWidth - w - 4))}px`;
    bubble.style.top = `${r.bottom + 6 + h <= win.innerHeight ? r.bottom + 6 : Math.max(4, r.top - 6 - h)}px`;
  }

  function later(el: HTMLElement): void {
    if (owner === el) return;
    hide();
    timer = setTimeout(() => {
      timer = null;
      show(el);
    }, TOOLTIP_DELAY_MS);
  }

  const over = (e: Event) => {
    const el = tipOf(e.target);
    if (el) later(el);
    else hide();
  };
  const out = (e: Event) => {
    const el = tipOf(e.target);
    if (el && !el.contains((e as PointerEvent).relatedTarget as Node | null)) hide();
  };
  const focusin = (e: Event) => {
    const el = tipOf(e.target);
    // Keyboard focus only: a click's focus is not a request for help.
    if (el && el === e.target && el.matches(':focus-visible')) later(el);
  };
  const key = (e: KeyboardEvent) => {
    if (e.key === 'Escape' || owner) hide();
  };
  const listeners: [string, (e: never) => void, boolean][] = [
    ['pointerover', over, false],
    ['pointerout', out, false],
    ['pointerdown', hide, true],
    ['focusin', focusin, false],
    ['focusout', hide, false],
    ['keydown', key, true],
    ['scroll', hide, true],
  ];
  for (const [type, fn, capture] of listeners) doc.addEventListener(type, fn as EventListener, capture);
  return () => {
    hide();
    for (const [type, fn, capture] of listeners) doc.removeEventListener(type, fn as EventListener, capture);
    bubble.remove();
  };
}

/** Whether `el` shows `text` whole already (then a tooltip would only repeat it). */
function showsItAll(el: HTMLElement, text: string): boolean {
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  return norm(el.textContent ?? '') === norm(text) && el.scrollWidth <= el.clientWidth;
}
