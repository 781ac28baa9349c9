// The browser preview's fake backend must say what the engine says. `golden/engine-events.jsonl`
// is what the real engine emitted (`mimesis run --events-json` with the stand-in agent: a
// prompt, a crash and its recovery, an exit; a duration limit's warning and end). Every
// supervision event the fake emits in its scripted stories is compared, by type and reason,
// with the engine's: same fields, same wording (values such as durations may differ).

import { describe, expect, it } from 'vitest';
import { createFakeBackend } from '../src/lib/fake/fakeBackend';
import recorded from './golden/engine-events.jsonl?raw';
import type { SupervisionEvent } from '../src/lib/types';

type Ev = Record<string, unknown>;

const engine: Ev[] = recorded
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Ev);

const key = (e: Ev) => `${String(e.type)}/${String(e.reason ?? '')}`;

/** The wording with its values taken out: numbers, durations, session ids. */
function shape(message: unknown): string {
  return String(message ?? '')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
    .replace(/\d+-(second|minute|hour)/g, 'N-UNIT')
    .replace(/\d+ (second|minute|hour)s?/g, 'N UNIT')
    .replace(/\d+/g, 'N');
}

function fields(e: Ev): string[] {
  return Object.keys(e)
    .filter((k) => k !== 'at' && k !== 'sessionId' && k !== 'resumeSessionId')
    .sort();
}

describe('the fake backend against the engine', () => {
  it('emits the engine’s events with the engine’s fields and wording', async () => {
    const seen: Ev[] = [];
    // The stories run on the fake's own timers (about a second each).
    const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
    for (const story of ['warning', 'terminated', 'crash', 'toasts', 'pty']) {
      const b = createFakeBackend(new URLSearchParams(story));
      await b.on('supervision:event', (e: SupervisionEvent) => seen.push(e as unknown as Ev));
      await settle(1_600);
      if (story === 'pty') {
        const snap = await b.call('roster_snapshot');
        const sup = snap.sessions.find((s) => s.supervision?.state === 'running');
        if (sup) {
          await b.call('pty_stop', { sessionId: sup.sessionId });
          await b.call('pty_resume', { sessionId: sup.sessionId });
          await settle(1_200);
        }
      }
    }
    const byKey = new Map(engine.map((e) => [key(e), e]));
    let compared = 0;
    for (const f of seen) {
      const e = byKey.get(key(f));
      if (!e) continue; // an event the recorded run did not produce
      compared++;
      expect(fields(f), key(f)).toEqual(fields(e));
      expect(shape(f.message), key(f)).toBe(shape(e.message));
    }
    expect(compared).toBeGreaterThanOrEqual(3);
  }, 60_000);
});
