// The keyboard of a radio group (WAI-ARIA's radio group pattern). The component keeps the
// roving tabindex (the checked radio, else the first, has tabindex 0; the others -1), so Tab
// enters and leaves the group in one step and the arrows move within it.

import type { Attachment } from 'svelte/attachments';

/** Where an arrow key goes from radio `index` of `count`, wrapping; null for any other key. */
export function radioStep(key: string, index: number, count: number): number | null {
  if (index < 0 || count === 0) return null;
  if (key === 'ArrowRight' || key === 'ArrowDown') return (index + 1) % count;
  if (key === 'ArrowLeft' || key === 'ArrowUp') return (index - 1 + count) % count;
  return null;
}

/**
 * Arrows check the next or previous radio of the group and move the focus to it.
 * `check(i)` checks the group's i-th radio (in document order).
 */
export function radioKeys(check: (index: number) => void): Attachment<HTMLElement> {
  return (group) => {
    const onkeydown = (e: KeyboardEvent): void => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const radios = [...group.querySelectorAll<HTMLElement>('[role=radio]')];
      const next = radioStep(e.key, radios.indexOf(e.target as HTMLElement), radios.length);
      if (next === null) return;
      e.preventDefault();
      check(next);
      radios[next].focus();
    };
    group.addEventListener('keydown', onkeydown);
    return () => group.removeEventListener('keydown', onkeydown);
  };
}
