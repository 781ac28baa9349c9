// The chart library under the app's frozen `Object.prototype` (tauri.conf.json
// `freezePrototype`): it loads, builds, updates and goes without a throw (jsdom has no layout:
// the bars themselves are drawn in tests/webview.rs). This file freezes its own worker.
import { describe, expect, it } from 'vitest';
import { chartData } from '../src/lib/spend';

describe('the Spend chart', () => {
  it('loads and updates with Object.prototype frozen', async () => {
    Object.freeze(Object.prototype);
    const { drawSpend } = await import('../src/lib/spendChart');
    const canvas = document.createElement('canvas');
    document.body.append(canvas);
    const calls: string[] = [];
    // jsdom draws nothing: a 2D context that notes what is asked of it.
    const ctx: Record<string | symbol, unknown> = new Proxy(
      { canvas },
      {
        get: (t, k) => {
          if (k in t) return (t as Record<string | symbol, unknown>)[k];
          if (k === 'measureText') return (s: string) => ({ width: s.length * 6 });
          if (k === 'getTransform') return () => ({ a: 1, d: 1 });
          return () => {
            calls.push(String(k));
          };
        },
        set: (t, k, v) => {
          (t as Record<string | symbol, unknown>)[k] = v;
          return true;
        },
      },
    );
    canvas.getContext = (() => ctx) as unknown as typeof canvas.getContext;
    const view = {
      days: ['2026-11-27', '2026-11-28'],
      byProject: [{ name: '/p', usd: [1, 2] }],
      byModel: [{ name: 'claude-opus-4-8', usd: [1, 2] }],
      shown: { usd: 3, tokens: 1 },
      today: { usd: 2, tokens: 1 },
      week: { usd: 3, tokens: 1 },
      month: { usd: 3, tokens: 1 },
      topSessions: [],
      prices: 'LiteLLM',
      unknownModels: [],
      warnings: [],
    };
    const chart = drawSpend(canvas, chartData(view, 'project'));
    chart.update(chartData(view, 'model'));
    chart.destroy();
    expect(Object.isFrozen(Object.prototype)).toBe(true);
    expect(calls).toContain('save');
  });
});
