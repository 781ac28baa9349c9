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

// The window's lazily loaded parts (src/lib/lazy.svelte.ts) are all loaded before any test
// (the app preloads the likely ones once its roster is painted, the rest at first use): a
// test's click finds them at once. tests/lazy.test.ts covers the loading itself.
import { beforeAll } from 'vitest';
import { preloadParts } from '../src/lib/lazy.svelte';
beforeAll(() => preloadParts('all'));
