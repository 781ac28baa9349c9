// The one door to the engine: the Tauri commands and events of docs/ipc.md.
// Inside Tauri it is `invoke` / `listen`; in a plain browser (development, screenshots)
// it is a replay of what the real app recorded (./preview, ./replay).

// Imported with the page (4 kB): the first roster waits for no module fetched later.
import { invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { byteChannel, type PageChannel } from './channel';
import type { Commands, Events, RosterSnapshot } from './types';

export type { PageChannel };

export type Unlisten = () => void;

export interface Backend {
  /** True when this is not the engine (a replay of a recording, a test's mock). */
  readonly fake: boolean;
  call<K extends keyof Commands>(
    cmd: K,
    ...args: Commands[K]['args'] extends undefined ? [] : [Commands[K]['args']]
  ): Promise<Commands[K]['ret']>;
  on<E extends keyof Events>(event: E, handler: (payload: Events[E]) => void): Promise<Unlisten>;
  /**
   * A channel for bulk bytes (`pty_attach`'s `onData`): Tauri's channel protocol inside the
   * app, delivered in order. `onlost` is told once if a message never comes (`InOrder`): the
   * channel is then dead, and what it carried must be asked for again.
   */
  channel(onmessage: (data: ArrayBuffer) => void, onlost?: () => void): PageChannel;
  /**
   * The roster the page asked for at document start (`roster_snapshot_held`), once: the
   * engine read it while the page loaded its code. Its events wait in the app until the page
   * calls `roster_listening`. Null when there is none (or it was taken).
   */
  earlyRoster?(): Promise<RosterSnapshot> | null;
}

export function insideTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

function tauriBackend(): Promise<Backend> {
  const b: Backend = {
    fake: false,
    call: (cmd, ...args) => invoke(cmd, args[0]),
    on: (event, handler) => listen(event, (e) => handler(e.payload as Events[typeof event])),
    channel: (onmessage, onlost) => byteChannel(onmessage, onlost ?? (() => {})),
    earlyRoster: takeEarlyRoster,
  };
  // A build with the recorder (the `record` feature) notes what the page meets, for ./replay.
  // (Its module is loaded only then: a launch waits for nothing it does not need.)
  if (!recording()) return Promise.resolve(b);
  return import('./record').then(({ recorded }) => recorded(b, (entries) => invoke('record_write', { entries })));
}

/** The app records (`MIMESIS_RECORD` set: its script set `window.__MIMESIS_RECORD__`), see ./record. */
export function recording(): boolean {
  return typeof window !== 'undefined' && (window as { __MIMESIS_RECORD__?: boolean }).__MIMESIS_RECORD__ === true;
}

/** `window.__MIMESIS_ROSTER__`, set by the app's script at document start; taken once. */
function takeEarlyRoster(): Promise<RosterSnapshot> | null {
  const w = window as { __MIMESIS_ROSTER__?: Promise<RosterSnapshot>; __MIMESIS_ROSTER_SENT__?: unknown };
  const early = w.__MIMESIS_ROSTER__ ?? null;
  w.__MIMESIS_ROSTER__ = undefined;
  // Its resolver, once called, would hold the promise and so the snapshot for the page's life:
  // every row as the launch saw it, long after the store replaced them.
  const forget = () => {
    w.__MIMESIS_ROSTER_SENT__ = undefined;
  };
  early?.then(forget, forget);
  return early;
}

let current: Promise<Backend> | null = null;

/** The backend for this page, created once. */
export function backend(): Promise<Backend> {
  current ??= insideTauri()
    ? tauriBackend()
    : import('./preview').then((m) => m.previewBackend(new URLSearchParams(location.search)));
  return current;
}
