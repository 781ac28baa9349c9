import { describe, expect, it } from 'vitest';
import type { Component } from 'svelte';
import { Lazy, parts, preloadParts } from '../src/lib/lazy.svelte';

const Part = (() => {}) as unknown as Component;

describe('a part of the window loaded after the launch', () => {
  it('is null until its chunk has loaded, then its component, loaded once', async () => {
    let loads = 0;
    const part = new Lazy(() => {
      loads++;
      return Promise.resolve({ default: Part });
    });
    expect(part.get()).toBeNull();
    expect(part.get()).toBeNull();
    await part.load();
    expect(part.get()).toBe(Part);
    expect(loads).toBe(1);
  });

  it('is asked for again after a load that failed', async () => {
    let fail = true;
    const part = new Lazy(() => (fail ? Promise.reject(new Error('gone')) : Promise.resolve({ default: Part })));
    await expect(part.load()).rejects.toThrow('gone');
    fail = false;
    expect(part.get()).toBeNull();
    await part.load();
    expect(part.get()).toBe(Part);
  });

  it('every part of the window loads (the app preloads them once its roster is painted)', async () => {
    await preloadParts('all');
    for (const [name, p] of Object.entries(parts)) expect(p.get(), name).not.toBeNull();
  });
});
