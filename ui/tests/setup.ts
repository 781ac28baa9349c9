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

// The window's lazily loaded parts (src/lib/lazy.svelte.ts) are loaded before any test, as
// the app has them loaded once its roster is painted: a test's click finds them at once.
import { beforeAll } from 'vitest';
import { preloadParts } from '../src/lib/lazy.svelte';
beforeAll(() => preloadParts('all'));
