// jsdom has no layout: give it the few browser APIs the UI touches.
class NoopResizeObserver {
  observe(): void {}
  unobserve(): void {}
  disconnect(): void {}
}
globalThis.ResizeObserver ??= NoopResizeObserver as unknown as typeof ResizeObserver;

// Each test starts from an empty document (apps left mounted would answer each other's queries).
import { cleanup, configure } from '@testing-library/svelte';
import { afterEach } from 'vitest';
afterEach(() => cleanup());

// A wait for the page is a deadline, not a duration: 1 s (the library's default) failed on a
// loaded machine (two workers beside a build, load 8) though the page got there. A test that
// passes is no slower; one that fails says so after 10 s.
configure({ asyncUtilTimeout: 10_000 });

// The window's lazily loaded parts (src/lib/lazy.svelte.ts) are all loaded before any test
// (the app preloads the likely ones once its roster is painted, the rest at first use): a
// test's click finds them at once. tests/lazy.test.ts covers the loading itself.
import { beforeAll } from 'vitest';
import { preloadParts } from '../src/lib/lazy.svelte';
beforeAll(() => preloadParts('all'));
