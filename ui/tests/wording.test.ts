import { render } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import TerminatedDialog from '../src/components/pty/TerminatedDialog.svelte';
import { TERMINATED_BECAUSE, exitStatus } from '../src/lib/generated/engine';

it('says why a session ended and how a process exited in words, never by code', () => {
  const notice = { message: 'Session ended (4-hour limit reached).', reason: 'duration_limit', resumeSessionId: null, at: '2026-11-25T20:00:00.000Z' };
  const { container } = render(TerminatedDialog, { props: { notice, cwd: '/p', onnew: () => {}, onresume: () => {}, onclose: () => {} } });
  const text = document.body.textContent ?? container.textContent ?? '';
  expect(text).toContain('its duration limit was reached');
  expect(text).not.toContain('duration_limit');
  expect(TERMINATED_BECAUSE.user).toBe('you stopped it');
  expect(exitStatus(143)).toBe('stopped by SIGTERM');
  expect(exitStatus(1)).toBe('exit code 1');
});
