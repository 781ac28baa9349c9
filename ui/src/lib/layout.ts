// The window's layout choices that are remembered: the roster's share of the width.

const SHARE_KEY = 'mimesis.rosterShare';

/** A share of the width for the roster, kept between 20 and 70 percent. */
export function clampShare(p: number): number {
  if (!Number.isFinite(p)) return 40;
  return Math.min(70, Math.max(20, p));
}

export function loadShare(storage: Pick<Storage, 'getItem'> | null = globalThis.localStorage ?? null): number {
  const v = Number(storage?.getItem(SHARE_KEY));
  return v ? clampShare(v) : 40;
}

export function saveShare(p: number, storage: Pick<Storage, 'setItem'> | null = globalThis.localStorage ?? null): void {
  try {
    storage?.setItem(SHARE_KEY, String(Math.round(clampShare(p))));
  } catch {
    // (Storage full or refused: the width is simply not remembered.)
  }
}
