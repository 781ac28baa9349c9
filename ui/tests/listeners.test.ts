import { describe, expect, it } from 'vitest';
import { AppController } from '../src/lib/app.svelte';
import { Listeners } from '../src/lib/listeners';
import { RosterStore } from '../src/lib/store.svelte';
import { SupervisionStore } from '../src/lib/supervision.svelte';
import { TimelineView } from '../src/lib/timeline.svelte';
import { MockBackend, flush, snapshot } from './helpers';

/** A backend whose listeners arrive only when `arrive` is called (a slow round trip). */
function slowBackend() {
  let arrive!: () => void;
  const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 1, sessions: [] }), approvals_pending: () => [] });
  b.listening = new Promise<void>((r) => (arrive = r));
  return { b, arrive };
}

describe('listeners', () => {
  it('a store stopped while its listeners are on their way holds none of them once they come', async () => {
    for (const make of [(b: MockBackend) => new RosterStore(b), (b: MockBackend) => new SupervisionStore(b), (b: MockBackend) => new TimelineView(b)]) {
      const { b, arrive } = slowBackend();
      const store = make(b);
      const started = store.start();
      store.stop();
      arrive();
      await started;
      await flush();
      expect(b.held()).toEqual({});
    }
  });

  it('one that fails lets go of the others, and says why', async () => {
    const b = new MockBackend();
    const l = new Listeners();
    const refused = Promise.reject(new Error('refused'));
    await expect(l.add(b.on('store:events', () => {}), refused)).rejects.toThrow('refused');
    expect(b.held()).toEqual({});
  });

  it('the started window holds each event once (attention and hosts have one holder)', async () => {
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 1, sessions: [] }), approvals_pending: () => [] });
    const app = new AppController(() => Promise.resolve(b));
    await app.start();
    const held = b.held();
    expect(held['attention:changed']).toBe(1);
    expect(held['hosts:changed']).toBe(1);
    expect(Object.values(held).every((n) => n === 1)).toBe(true);
    app.stop();
    expect(b.held()).toEqual({});
  });

  it('the next session that needs the user cycles through the attention set in its order', async () => {
    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 1, sessions: [] }) });
    const store = new RosterStore(b);
    await store.start();
    expect(store.nextAttention(null)).toBeNull();
    b.fire('attention:changed', { count: 3, sessionIds: ['a', 'b', 'c'], title: 'Mimesis — 3 need you' });
    expect(store.attention.size).toBe(3);
    expect(store.nextAttention(null)).toBe('a');
    expect(store.nextAttention('a')).toBe('b');
    expect(store.nextAttention('c')).toBe('a');
    expect(store.nextAttention('zzz')).toBe('a');
  });
});
