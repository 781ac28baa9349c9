import { svelte } from '@sveltejs/vite-plugin-svelte';
import type { Plugin } from 'vite';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The app freezes `Object.prototype` (tauri.conf.json `freezePrototype`). xterm's bundled
 * `KeyCode` namespace then throws "Attempted to assign to readonly property" when it sets
 * its own `toString` by assignment (a property a frozen prototype makes read-only on
 * plain objects), and the terminal never loads. Defining the property instead means the same.
 */
function xtermFrozenPrototype(): Plugin {
  const assign = /([\w$]+)\.toString=([\w$]+);(function [\w$]+\([\w$]+\)\{return [\w$]+\.strToKeyCode\()/g;
  return {
    name: 'xterm-frozen-prototype',
    transform(code, id) {
      if (!/[\\/]@xterm[\\/]/.test(id) || !id.endsWith('.mjs')) return null;
      let n = 0;
      const out = code.replace(assign, (_m, ns: string, fn: string, rest: string) => {
        n++;
        return `Object.defineProperty(${ns},"toString",{value:${fn},writable:true,configurable:true,enumerable:true});${rest}`;
      });
      if (n === 0 && /\.toString=[\w$]+;function [\w$]+\([\w$]+\)\{return [\w$]+\.strToKeyCode/.test(code)) {
        this.error(`xterm-frozen-prototype: could not patch ${id}`);
      }
      return n ? { code: out, map: null } : null;
    },
  };
}

export default defineConfig({
  plugins: [svelte(), xtermFrozenPrototype()],
  // Tauri loads the built files from disk: relative paths, no external resources.
  base: './',
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
  },
  resolve: process.env.VITEST ? { conditions: ['browser'] } : undefined,
  test: {
    environment: 'jsdom',
    include: ['tests/**/*.test.ts'],
    setupFiles: ['tests/setup.ts'],
    // At least two files at a time (vitest's default is one fewer worker than cores: one on a
    // 2-core machine, where a run took 170 s, most of it setting up jsdom, file after file).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A deadline, not a duration (as tests/setup.ts's for waits): a test that passes is no slower.
    testTimeout: 30_000,
    // Likewise the set-up's preload of every lazily loaded part (tests/setup.ts): 10 s by
    // default, which a loaded machine (load 9) overran.
    hookTimeout: 120_000,
    // The theme's colours are read as text by the contrast test.
    css: { include: [/app\.css/] },
  },
});
