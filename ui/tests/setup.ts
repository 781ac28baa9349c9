// jsdom has no layout: give it the few browser APIs the UI touches.
class NoopResizeObserver {
  observe(): void {}
  unobserve(): void {}
  disconnect(): void {}
}
globalThis.ResizeObserver ??= NoopResizeObserver as unknown as typeof ResizeObserver;

// Each test starts from an empty document (apps left mounted would answer each other's queries).
import { cleanup } from '@testing-library/svelte';
import { afterEach } from 'vitest';
afterEach(() => cleanup());
