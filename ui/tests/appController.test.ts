// The window's controller without a window: connecting, the page, the next session that
// needs the user, the new-session dialog's folder, and an engine that cannot be reached.
import { waitFor } from '@testing-library/svelte';
import { afterEach, describe, expect, it } from 'vitest';
import { AppController, type Engine } from '../src/lib/app.svelte';
import { PROJECT, recorded } from './recorded';

let app: AppController | null = null;
afterEach(() => app?.stop());

async function started(): Promise<{ a: AppController; e: Engine }> {
  const b = recorded('demo', { load: 2 });
  const a = new AppController(() => Promise.resolve(b));
  app = a;
  await a.start();
  if (!a.engine) throw new Error('not connected');
  return { a, e: a.engine };
}

describe('AppController', () => {
  it('connects: the engine holds the backend and the three stores, started', async () => {
    const { a, e } = await started();
    expect(a.fatal).toBeNull();
    expect(a.fake).toBe(true);
    expect(e.store.loaded).toBe(true);
    expect(e.store.sorted.length).toBe(8);
  });

  it('an engine that cannot be reached is fatal, and nothing else is there', async () => {
    app = new AppController(() => Promise.reject(new Error('no engine')));
    await app.start();
    expect(app.fatal).toBe('Error: no engine');
    expect(app.engine).toBeNull();
  });

  it('showing a session goes back to the Sessions page', async () => {
    const { a, e } = await started();
    a.page = 'settings';
    const id = e.store.sorted[3].sessionId;
    a.showSession(id);
    expect(a.page).toBe('sessions');
    expect(e.store.openId).toBe(id);
  });

  it('the next session that needs the user is shown, on the Sessions page', async () => {
    // The pty recording: the session started in the shop soon asks for a permission.
    const a = new AppController(() => Promise.resolve(recorded('pty')));
    app = a;
    await a.start();
    const e = a.engine as Engine;
    expect(a.nextAttention()).toBeNull();
    const id = await e.sup.create(PROJECT, null);
    // The attention set and the row's status come as two events: wait for both (once, under
    // load, the set had the session before its row said why).
    await waitFor(() => {
      expect(e.store.attention.has(id)).toBe(true);
      expect(e.store.get(id)?.status).toMatch(/^waiting_for_(approval|input)$/);
    });
    a.page = 'resources';
    const next = a.nextAttention();
    expect(next).toBe(id);
    expect(a.page).toBe('sessions');
    expect(e.store.openId).toBe(next);
    expect(e.store.get(id)?.status).toMatch(/^waiting_for_(approval|input)$/);
  });

  it('the new-session dialog starts in the open session’s folder unless told another', async () => {
    const { a, e } = await started();
    expect(a.newSession).toBeNull();
    a.openNewSession();
    expect(a.newSession).toEqual({ cwd: '' });
    const s = e.store.sorted.find((x) => x.cwd) ?? e.store.sorted[0];
    a.showSession(s.sessionId);
    a.openNewSession();
    expect(a.newSession).toEqual({ cwd: s.cwd ?? '' });
    a.openNewSession('/elsewhere');
    expect(a.newSession).toEqual({ cwd: '/elsewhere' });
  });
});
