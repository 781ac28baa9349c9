// The page's half of the recorder (src-tauri/src/record.rs, cargo feature `record`): when the
// app records (MIMESIS_RECORD set, so its script set `window.__MIMESIS_RECORD__`), the
// backend notes each command it invoked with its reply or error, and each event it was given,
// in the order the page met them, and sends the notes to the app in batches. The format is
// what ./replay.ts reads back:
//   {"t":0,"load":"/","at":"2026-…Z"}                    the page loaded, and when
//   {"t":12,"call":"open_timeline","args":{…},"sent":9,"ok":{…}}  a command and its reply
//   {"t":15,"call":"pty_create","args":{…},"sent":14,"err":"…"}    a command the engine refused
//   {"t":40,"event":"store:events","payload":{…}}       an event the page received
// `t` and `sent` are milliseconds since the page loaded (`t`: when it was answered).

import type { Backend } from './backend';
import type { Commands, Events } from './types';

export type Note = Record<string, unknown> & { t: number };

/** Arguments as JSON: a channel (`pty_attach`'s `onData`) is only named. */
function plain(args: unknown): unknown {
  if (args === undefined) return undefined;
  return JSON.parse(JSON.stringify(args, (_k, v: unknown) => (v && typeof v === 'object' && 'onmessage' in v ? '<channel>' : v)));
}

/** `inner`, noting what crosses it; `send` takes each batch of notes. */
export function recorded(inner: Backend, send: (notes: Note[]) => Promise<unknown>): Backend {
  const t0 = performance.now();
  let queue: Note[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  const note = (n: Omit<Note, 't'>) => {
    queue.push({ t: Math.round(performance.now() - t0), ...n });
    timer ??= setTimeout(() => {
      timer = null;
      const batch = queue;
      queue = [];
      send(batch).catch((e: unknown) => console.warn('recorder: cannot write', e));
    }, 50);
  };
  // The wall time of the load: a replay moves the recorded timestamps to its own day.
  note({ load: location.pathname + location.search, at: new Date().toISOString() });
  const heard = new Set<string>();

  return {
    fake: inner.fake,
    channel: (onmessage, onlost) => inner.channel(onmessage, onlost),
    call: ((cmd: keyof Commands, args?: unknown) => {
      const a = plain(args);
      // Noted when answered (so in order with the events around it), with when it was sent:
      // what came in between is what the command caused.
      const sent = Math.round(performance.now() - t0);
      return (inner.call as (c: string, x?: unknown) => Promise<unknown>)(cmd, args).then(
        (ok) => {
          note({ call: cmd, args: a, sent, ok: ok ?? null });
          return ok;
        },
        (err: unknown) => {
          note({ call: cmd, args: a, sent, err: String(err) });
          throw err;
        },
      );
    }) as Backend['call'],
    on: async <E extends keyof Events>(event: E, handler: (payload: Events[E]) => void) => {
      // One note per event, however many listeners it has: the first listener's turn comes
      // after this one, so the note precedes whatever the page does on it.
      if (!heard.has(event)) {
        heard.add(event);
        await inner.on(event, (payload) => note({ event, payload }));
      }
      return inner.on(event, handler);
    },
  };
}
