// What a screen reader hears without looking (issue 37 §4): live regions there from the start,
// written into when a request comes or the open session's status changes.
import { render, screen } from '@testing-library/svelte';
import { tick } from 'svelte';
import { expect, it } from 'vitest';
import Announcer from '../src/components/Announcer.svelte';
import { RosterStore } from '../src/lib/store.svelte';
import { SupervisionStore } from '../src/lib/supervision.svelte';
import type { PermissionRequest } from '../src/lib/types';
import { MockBackend, session, snapshot } from './helpers';

it('announces a new approval request and the open session\'s status changes, in regions that were there first', async () => {
  const store = new RosterStore(new MockBackend());
  store.applySnapshot(snapshot({ sessions: [session('a', { goal: 'fix the parser' }), session('b', { goal: 'write docs' })] }));
  const sup = new SupervisionStore(new MockBackend(), { later: () => {} });
  render(Announcer, { props: { store, sup } });
  const status = screen.getByTestId('announce-status');
  const urgent = screen.getByTestId('announce-approval');
  expect(status.getAttribute('role')).toBe('status');
  expect(urgent.getAttribute('aria-live')).toBe('assertive');
  expect([status.textContent, urgent.textContent]).toEqual(['', '']);

  const req = (id: string, target: string): PermissionRequest => ({ id, since: '2026-11-01T12:00:00Z', knownSession: true, sessionName: null, sessionId: 'a', tool: 'Bash', target, cwd: '/r', channel: 'hook' });
  sup.approvals = [req('req_1', 'rm -rf build')];
  await tick();
  expect(urgent.textContent).toBe('Approval requested: Bash rm -rf build, in fix the parser');
  // The same list again (another request answered): nothing new is said.
  sup.approvals = [req('req_1', 'rm -rf build'), req('req_2', 'ls')];
  await tick();
  expect(urgent.textContent).toBe('Approval requested: Bash ls, in fix the parser');

  store.openSession('a');
  await tick();
  // Opening a session says nothing; its status changing does.
  expect(status.textContent).toBe('');
  store.receive([{ type: 'updated', sessionId: 'a', changes: { status: 'waiting_for_approval' }, seq: 1 }]);
  await tick();
  expect(status.textContent).toBe('fix the parser: Needs approval');
  store.openSession('b');
  await tick();
  expect(status.textContent).toBe('fix the parser: Needs approval');
});

it('says an answer given from here, and a second one alike again, though the bar that asked is gone', async () => {
  const store = new RosterStore(new MockBackend());
  const req: PermissionRequest = { id: 'req_1', since: '2026-11-01T12:00:00Z', knownSession: true, sessionName: null, sessionId: 'a', tool: 'Bash', target: 'rm -rf build', cwd: '/r', channel: 'hook' };
  const backend = new MockBackend({ approval_decide: (a) => ({ ...req, id: a.id }), pty_answer: () => 'typed' });
  const sup = new SupervisionStore(backend, { later: () => {} });
  render(Announcer, { props: { store, sup } });
  const status = screen.getByTestId('announce-status');
  expect(await sup.decide(req, false, 'not now')).toBe(true);
  await tick();
  expect(status.textContent).toBe('Denied: Bash rm -rf build');
  await sup.decide({ ...req, id: 'req_2' }, false);
  await tick();
  // Alike, yet changed: said again.
  expect(status.textContent?.replace('\u200b', '')).toBe('Denied: Bash rm -rf build');
  expect(status.textContent).not.toBe('Denied: Bash rm -rf build');
  await sup.decide({ ...req, id: 'req_3', tool: 'AskUserQuestion', target: null }, true, null, { 'Which?': 'A' });
  await tick();
  expect(status.textContent).toBe('Answered: AskUserQuestion');
  await sup.choose('a', 'Yes');
  await tick();
  expect(status.textContent?.replace('\u200b', '')).toBe('Chose “Yes”');
  // A failed answer says nothing here (the error bar says why).
  backend.handlers.approval_decide = () => {
    throw 'gone';
  };
  expect(await sup.decide({ ...req, id: 'req_4' }, true)).toBe(false);
  await tick();
  expect(status.textContent?.replace('\u200b', '')).toBe('Chose “Yes”');
});
