// The one door to the engine: the Tauri commands and events of docs/ipc.md.
// Inside Tauri it is `invoke` / `listen`; in a plain browser (development, screenshots)
// it is a replay of what the real app recorded (./preview, ./replay).

import type { ByteChannel, Commands, Events } from './types';

export type Unlisten = () => void;

export interface Backend {
  /** True when this is not the engine (a replay of a recording, a test's mock). */
  readonly fake: boolean;
  call<K extends keyof Commands>(
    cmd: K,
    ...args: Commands[K]['args'] extends undefined ? [] : [Commands[K]['args']]
  ): Promise<Commands[K]['ret']>;
  on<E extends keyof Events>(event: E, handler: (payload: Events[E]) => void): Promise<Unlisten>;
  /** A channel for bulk bytes (`pty_attach`'s `onData`): a Tauri `Channel` inside the app. */
  channel(onmessage: (data: ArrayBuffer) => void): ByteChannel;
}

export function insideTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

async function tauriBackend(): Promise<Backend> {
  const [{ invoke, Channel }, { listen }] = await Promise.all([import('@tauri-apps/api/core'), import('@tauri-apps/api/event')]);
  const b: Backend = {
    fake: false,
    call: (cmd, ...args) => invoke(cmd, args[0]),
    on: (event, handler) => listen(event, (e) => handler(e.payload as Events[typeof event])),
    channel: (onmessage) => new Channel<ArrayBuffer>(onmessage),
  };
  // A build with the recorder (the `record` feature) notes what the page meets, for ./replay.
  const { recording, recorded } = await import('./record');
  return recording() ? recorded(b, (entries) => invoke('record_write', { entries })) : b;
}

let current: Promise<Backend> | null = null;

/** The backend for this page, created once. */
export function backend(): Promise<Backend> {
  current ??= insideTauri()
    ? tauriBackend()
    : import('./preview').then((m) => m.previewBackend(new URLSearchParams(location.search)));
  return current;
}

/** For tests: use this backend instead. */
export function setBackend(b: Backend | null): void {
  current = b ? Promise.resolve(b) : null;
}
