// A dialog keeps the keys when its focused control is disabled or removed (focus falls to the
// page's body): Escape closes it, Tab comes back in, nothing reaches the window's shortcuts.
import { fireEvent, render, screen } from '@testing-library/svelte';
import { expect, it, vi } from 'vitest';
import QuitDialog from '../src/components/QuitDialog.svelte';

it('keys that land outside the open dialog are its own', async () => {
  const oncancel = vi.fn();
  const shortcuts = vi.fn();
  window.addEventListener('keydown', shortcuts);
  try {
    render(QuitDialog, { props: { running: 1, onstop: () => {}, oncancel } });
    const dialog = screen.getByTestId('quit-dialog');
    expect(dialog.contains(document.activeElement)).toBe(true);
    // The focused button goes away: the focus is on the body.
    (document.activeElement as HTMLElement).blur();
    expect(document.activeElement).toBe(document.body);
    await fireEvent.keyDown(document.body, { key: 'n' });
    expect(shortcuts).not.toHaveBeenCalled();
    await fireEvent.keyDown(document.body, { key: 'Tab' });
    expect(dialog.contains(document.activeElement)).toBe(true);
    (document.activeElement as HTMLElement).blur();
    await fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(oncancel).toHaveBeenCalledTimes(1);
    expect(shortcuts).not.toHaveBeenCalled();
  } finally {
    window.removeEventListener('keydown', shortcuts);
  }
});
