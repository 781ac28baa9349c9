// The one door to the engine: the Tauri commands and events of docs/ipc.md.
// Inside Tauri it is `invoke` / `listen`; in a plain browser (development, screenshots)
// it is the in-browser fake in ./fake, which speaks the same contract.

import type { ByteChannel, Commands, Events } from './types';

export type Unlisten = () => void;

export interface Backend {
  /** True when this is the generated in-browser fake, not the engine. */
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
  return {
    fake: false,
    call: (cmd, ...args) => invoke(cmd, args[0]),
    on: (event, handler) => listen(event, (e) => handler(e.payload as Events[typeof event])),
    channel: (onmessage) => new Channel<ArrayBuffer>(onmessage),
  };
}

let current: Promise<Backend> | null = null;

/** The backend for this page, created once. */
export function backend(): Promise<Backend> {
  current ??= insideTauri()
    ? tauriBackend()
    : import('./fake/fakeBackend').then((m) => m.createFakeBackend(new URLSearchParams(location.search)));
  return current;
}

/** For tests: use this backend instead. */
export function setBackend(b: Backend | null): void {
  current = b ? Promise.resolve(b) : null;
}
