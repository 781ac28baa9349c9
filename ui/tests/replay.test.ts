// The replay's own rules, on a few lines written here: which reply answers a read, how an
// action moves the replay on, what an unrecorded call says, and the timestamps moved to now.
import { describe, expect, it } from 'vitest';
import { ReplayBackend, type Entry } from '../src/lib/replay';

const AT = '2026-11-01T12:00:00.000Z';
const lines: Entry[] = [
  { t: 0, load: '/', at: AT },
  { t: 5, call: 'roster_snapshot', ok: { seq: 0, sessions: [], roots: [], demo: false } },
  { t: 10, event: 'attention:changed', payload: { count: 0, sessionIds: [], title: 'Mimesis' } },
  { t: 20, event: 'store:resync', payload: {} },
  { t: 30, call: 'start_demo', sent: 25, ok: null },
  { t: 31, call: 'roster_snapshot', ok: { seq: 8, sessions: [], roots: [], demo: true } },
  { t: 40, event: 'timeline:update', payload: { sessionId: 's', total: 3, reset: false, changed: [{ index: 2, item: { kind: 'prompt', uuid: 'c', timestamp: '2026-11-01T12:00:01.000Z', text: 'c' } }], seq: 2, prev: 1 } },
  { t: 50, call: 'open_timeline', args: { sessionId: 's', tail: 200 }, ok: { sessionId: 's', total: 2, start: 0, items: [{ kind: 'prompt', uuid: 'a', timestamp: AT, text: 'a' }, { kind: 'prompt', uuid: 'b', timestamp: AT, text: 'b' }] } },
  { t: 60, call: 'pty_stop', args: { sessionId: 's' }, sent: 55, err: 'This session is not supervised by Mimesis' },
  { t: 0, load: '/' },
  { t: 5, call: 'settings_get', ok: { second: true } },
];

const heard = (b: ReplayBackend) => {
  const seen: string[] = [];
  for (const e of ['attention:changed', 'store:resync', 'timeline:update'] as const) void b.on(e, () => seen.push(e));
  return seen;
};

describe('ReplayBackend', () => {
  it('answers a read from its scene, plays events up to the next action and waits there', async () => {
    const b = new ReplayBackend(lines, { auto: false });
    const seen = heard(b);
    expect((await b.call('roster_snapshot')).demo).toBe(false);
    expect(b.next).toEqual({ cmd: 'start_demo', args: undefined });
    await b.play();
    expect(seen).toEqual(['attention:changed', 'store:resync']);
    await b.call('start_demo');
    // The read after the action is the one recorded after it.
    expect((await b.call('roster_snapshot')).demo).toBe(true);
    await b.play();
    expect(seen).toEqual(['attention:changed', 'store:resync', 'timeline:update']);
  });

  it('an action plays what came before it first, and is answered as the engine did, refusals included', async () => {
    const b = new ReplayBackend(lines, { auto: false });
    const seen = heard(b);
    await b.call('start_demo');
    expect(seen).toEqual(['attention:changed', 'store:resync']);
    await expect(b.call('pty_stop', { sessionId: 's' })).rejects.toBe('This session is not supervised by Mimesis');
    expect(b.next).toBeNull();
  });

  it('refuses an unrecorded call, naming it and what the recording expects next', async () => {
    const b = new ReplayBackend(lines, { auto: false, name: 'r.jsonl' });
    await expect(b.call('pty_stop', { sessionId: 'other' })).rejects.toMatch(/^r\.jsonl has no reply to pty_stop\(\{"sessionId":"other"\}\); it next expects start_demo/);
    await expect(b.call('doctor')).rejects.toMatch(/has no reply to doctor/);
  });

  it('builds a timeline page from the items the recording holds, and only from them', async () => {
    const b = new ReplayBackend(lines, { auto: false });
    const page = await b.call('timeline_range', { sessionId: 's', start: 1, end: 3 });
    expect(page.items.map((i) => i.uuid)).toEqual(['b', 'c']);
    expect((await b.call('timeline_range', { sessionId: 's', start: 0, end: 9 })).items).toHaveLength(3);
    await expect(b.call('timeline_range', { sessionId: 'x', start: 0, end: 2 })).rejects.toMatch(/has no reply to timeline_range/);
  });

  it('moves the recorded timestamps to now, as far apart as they were', async () => {
    const b = new ReplayBackend(lines, { auto: false });
    const before = Date.now();
    const page = await b.call('open_timeline', { sessionId: 's', tail: 200 });
    const at = Date.parse(String(page.items[0].timestamp));
    // Recorded 50 ms after the load, at the load's own time: 50 ms before "now".
    expect(at).toBeGreaterThanOrEqual(before - 50 - 5);
    expect(at).toBeLessThanOrEqual(Date.now() - 50 + 5);
  });

  it('plays by itself, waiting for a listener, and replays one page load of several', async () => {
    const b = new ReplayBackend(lines);
    await b.call('roster_snapshot');
    const seen = heard(b);
    await expect.poll(() => seen.length).toBe(2);
    expect(b.next?.cmd).toBe('start_demo');
    const second = new ReplayBackend(lines, { load: 2 });
    expect(await second.call('settings_get')).toEqual({ second: true });
    expect(() => new ReplayBackend(lines, { load: 3 })).toThrow('has 2 page loads, not 3');
  });
});
