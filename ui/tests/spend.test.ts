// Issue 36: the Spend view (its figures, the chart's stacks, the range) and a work chain's
// cost on the roster.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { afterEach, describe, expect, it } from 'vitest';
import RosterRow from '../src/components/RosterRow.svelte';
import SpendViewPage from '../src/components/SpendView.svelte';
import { engineContext } from '../src/lib/app.svelte';
import { prefs } from '../src/lib/prefs.svelte';
import { chainCosts, chartData, chartSummary, dayLabel, formatDollars, offeredDays, seriesLabel, sessionCost, type ChartData } from '../src/lib/spend';
import type { DrawChart } from '../src/lib/spendChart';
import { RosterStore } from '../src/lib/store.svelte';
import type { Cost, SpendView } from '../src/lib/types';
import { MockBackend, flush, session, snapshot } from './helpers';

function view(over: Partial<SpendView> = {}): SpendView {
  return {
    days: ['2026-11-26', '2026-11-27', '2026-11-28'],
    byProject: [
      { name: '/home/me/api', usd: [1, 0, 2.5] },
      { name: '/home/you/api', usd: [0, 0.5, 0] },
      { name: 'Other', usd: [0.25, 0, 0] },
    ],
    byModel: [{ name: 'claude-opus-4-8', usd: [1.25, 0.5, 2.5] }],
    shown: { usd: 4.25, tokens: 3_000_000 },
    today: { usd: 2.5, tokens: 1_000_000 },
    week: { usd: 4.25, tokens: 3_000_000 },
    month: { usd: 1234.5, tokens: 9_000_000 },
    topSessions: [
      { sessionId: 's1', project: '/home/me/api', usd: 3.5, tokens: 2_000_000, lastAt: 0 },
      { sessionId: 'gone-session-id', project: '/home/you/api', usd: 0.5, tokens: 10, lastAt: 0 },
    ],
    prices: 'LiteLLM 1.80.0 (2026-11-20)',
    unknownModels: ['claude-mystery-9'],
    warnings: [],
    ...over,
  };
}

describe('spend figures', () => {
  it('names, days and dollars read as a person reads them', () => {
    expect(seriesLabel('/home/me/src/api/', 'project')).toBe('api');
    expect(seriesLabel('-home-me-p', 'project')).toBe('-home-me-p');
    expect(seriesLabel('claude-sonnet-4-6', 'model')).toBe('sonnet-4-6');
    expect(dayLabel('2026-11-05')).toBe('Nov 5');
    expect(dayLabel('someday')).toBe('someday');
    expect(formatDollars(1234.5)).toBe('$1,234.50');
    expect(formatDollars(0.004)).toBe('<$0.01');
    expect(formatDollars(0)).toBe('$0.00');
    expect(formatDollars(NaN)).toBe('$0.00');
  });

  it('stacks by project or model; folders with the same name keep their full names; Other is grey', () => {
    const byProject = chartData(view(), 'project');
    expect(byProject.labels).toEqual(['Nov 26', 'Nov 27', 'Nov 28']);
    expect(byProject.series.map((s) => s.label)).toEqual(['/home/me/api', '/home/you/api', 'Other']);
    expect(byProject.series[2].color).toBe('#9c9c9c');
    expect(new Set(byProject.series.map((s) => s.color)).size).toBe(3);
    const byModel = chartData(view(), 'model');
    expect(byModel.series.map((s) => s.label)).toEqual(['opus-4-8']);
    expect(chartSummary(view())).toBe('Cost per day over 3 days: $4.25 in all; the costliest day Nov 28, $2.50.');
    expect(chartSummary(view({ byProject: [], shown: { usd: 0, tokens: 0 } }))).toBe('Cost per day over 3 days: $0.00 in all.');
  });

  it("a chain's cost is its sessions' costs, billed where Claude Code said", () => {
    const cost = (estimatedUsd: number | null, billed: number | null = null) => ({
      estimatedUsd,
      unknownModels: [],
      pricesAsOf: '2026-11-20',
      billed: billed === null ? null : { costUsd: billed, usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 } },
    });
    const m = chainCosts([
      session('a', { workChainId: 'a', chainLength: 3, cost: cost(1) }),
      session('b', { workChainId: 'a', chainLength: 3, cost: cost(1, 2) }),
      session('c', { workChainId: 'a', chainLength: 3, cost: cost(null) }),
      session('d', { workChainId: 'd', chainLength: 1, cost: cost(5) }),
    ]);
    expect([...m]).toEqual([['a', 3]]);
  });
});

const cost = (estimatedUsd: number | null, billed: number | null = null): Cost => ({
  estimatedUsd,
  unknownModels: [],
  pricesAsOf: '2026-11-20',
  billed: billed === null ? null : { costUsd: billed, usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 } },
});

describe('SpendView', () => {
  // The days chosen are a preference of the window: each test starts from none chosen.
  afterEach(() => {
    prefs.spendDays = null;
    localStorage.removeItem('mimesis.spend-days');
  });

  async function mount(data: (days: number) => SpendView, sessions = [session('s1', { title: 'Fix the parser' })]) {
    const b = new MockBackend({
      spend_view: (a: { days: number }) => data(a.days),
      roster_snapshot: () => snapshot({ seq: 0, sessions, roots: [], demo: false }),
    });
    const store = new RosterStore(b);
    await store.start();
    const drawn: ChartData[] = [];
    let destroyed = 0;
    const draw: DrawChart = (_canvas, d) => {
      drawn.push(d);
      return { update: (u) => drawn.push(u), destroy: () => destroyed++ };
    };
    const opened: string[] = [];
    const r = render(SpendViewPage, { props: { store, onopen: (id: string) => opened.push(id), draw }, context: engineContext({ backend: b }) });
    return { b, r, drawn, opened, destroyed: () => destroyed };
  }

  it('shows the totals, the costliest sessions and the chart by project, then by model', async () => {
    const { b, r, drawn, opened, destroyed } = await mount(() => view());
    const { container } = r;
    await waitFor(() => expect(container.querySelectorAll('[data-testid=spend-session]')).toHaveLength(2));
    expect(b.calls.find((c) => c.cmd === 'spend_view')?.args).toEqual({ days: 30 });
    expect(container.querySelector('[data-testid=spend-today]')?.textContent).toContain('$2.50');
    expect(container.querySelector('[data-testid=spend-month]')?.textContent).toContain('$1,234.50');
    expect(container.querySelector('[data-testid=spend-shown]')?.textContent).toContain('Last 3 days');
    expect(container.textContent).toContain('No price known for claude-mystery-9');
    expect(container.textContent).toContain('LiteLLM 1.80.0 (2026-11-20)');
    const box = container.querySelector('[data-testid=spend-chart-box]') as HTMLElement;
    expect(box.getAttribute('aria-label')).toContain('$4.25 in all');
    await waitFor(() => expect(drawn).toHaveLength(1));
    expect(drawn[0].series.map((s) => s.name)).toEqual(['/home/me/api', '/home/you/api', 'Other']);

    // A known session opens; one the roster does not have is its id.
    const rows = container.querySelectorAll('[data-testid=spend-session]');
    (rows[0].querySelector('button') as HTMLButtonElement).click();
    expect(opened).toEqual(['s1']);
    expect(rows[0].textContent).toContain('Fix the parser');
    expect(rows[1].querySelector('button')).toBeNull();
    expect(rows[1].textContent).toContain('gone-ses');

    await fireEvent.click(container.querySelector('[data-testid=stack-model]') as HTMLElement);
    await waitFor(() => expect(drawn).toHaveLength(2));
    expect(drawn[1].series.map((s) => s.name)).toEqual(['claude-opus-4-8']);
    expect(container.querySelector('[data-testid=stack-model]')?.getAttribute('aria-checked')).toBe('true');
    r.unmount();
    expect(destroyed()).toBe(1);
  });

  it('asks again for another range; a late answer for an old one is not shown', async () => {
    const answers: ((v: SpendView) => void)[] = [];
    const b = new MockBackend({
      spend_view: () => new Promise<SpendView>((resolve) => answers.push(resolve)),
      roster_snapshot: () => snapshot({ seq: 0, sessions: [], roots: [], demo: false }),
    });
    const store = new RosterStore(b);
    await store.start();
    const { container } = render(SpendViewPage, { props: { store, onopen: () => {}, draw: () => ({ update: () => {}, destroy: () => {} }) }, context: engineContext({ backend: b }) });
    await waitFor(() => expect(answers).toHaveLength(1));
    await fireEvent.click(container.querySelector('[data-testid=range-7]') as HTMLElement);
    await waitFor(() => expect(answers).toHaveLength(2));
    expect(b.calls.filter((c) => c.cmd === 'spend_view').map((c) => c.args)).toEqual([{ days: 30 }, { days: 7 }]);
    answers[1](view({ days: ['2026-11-28'], shown: { usd: 7, tokens: 1 } }));
    await waitFor(() => expect(container.querySelector('[data-testid=spend-shown]')?.textContent).toContain('Last 1 day '));
    answers[0](view());
    await flush();
    expect(container.querySelector('[data-testid=spend-shown]')?.textContent).toContain('$7.00');
  });

  it('remembers the days chosen when the page is left and opened again', async () => {
    expect(offeredDays(null)).toBe(30);
    expect(offeredDays(14)).toBe(30);
    expect(offeredDays(90)).toBe(90);
    const first = await mount(() => view());
    await waitFor(() => expect(first.b.count('spend_view')).toBe(1));
    await fireEvent.click(first.r.container.querySelector('[data-testid=range-90]') as HTMLElement);
    await waitFor(() => expect(first.b.count('spend_view')).toBe(2));
    first.r.unmount();
    expect(localStorage.getItem('mimesis.spend-days')).toBe('90');

    const again = await mount(() => view());
    await waitFor(() => expect(again.b.count('spend_view')).toBe(1));
    expect(again.b.calls.filter((c) => c.cmd === 'spend_view').map((c) => c.args)).toEqual([{ days: 90 }]);
    expect(again.r.container.querySelector('[data-testid=range-90]')?.getAttribute('aria-checked')).toBe('true');
    expect(again.r.container.querySelector('[data-testid=range-30]')?.getAttribute('aria-checked')).toBe('false');
  });

  it('shows each costliest session at the figure of its roster row, saying billed or estimated', async () => {
    const sessions = [
      session('s1', { title: 'Billed one', cost: cost(10.5, 2.29) }),
      session('s2', { title: 'Estimated one', cost: cost(3.5) }),
    ];
    const { r } = await mount(
      () =>
        view({
          topSessions: [
            { sessionId: 's1', project: '/home/me/api', usd: 10.72, tokens: 2_000_000, lastAt: 0 },
            { sessionId: 's2', project: '/home/me/api', usd: 3.5, tokens: 1_000, lastAt: 0 },
            { sessionId: 'gone-session-id', project: '/home/you/api', usd: 0.5, tokens: 10, lastAt: 0 },
          ],
        }),
      sessions,
    );
    const { container } = r;
    await waitFor(() => expect(container.querySelectorAll('[data-testid=spend-session]')).toHaveLength(3));
    const cell = (id: string) => container.querySelector(`[data-testid=spend-session][data-session-id="${id}"]`) as HTMLElement;
    const costOf = (id: string) => cell(id).querySelector('[data-testid=spend-session-cost]') as HTMLElement;
    const inDays = (id: string) => cell(id).querySelector('[data-testid=spend-session-in-days]')?.textContent ?? null;

    // The same words as the session's own row.
    for (const s of sessions) {
      const row = render(RosterRow, { props: { session: s, selected: false, open: false, onpick: () => {}, chainUsd: null } });
      expect(costOf(s.sessionId).textContent).toBe(row.container.querySelector('[data-testid=cost]')?.textContent);
      expect(costOf(s.sessionId).dataset.tip).toBe((row.container.querySelector('[data-testid=cost]') as HTMLElement).dataset.tip);
      row.unmount();
    }
    expect(costOf('s1').textContent).toBe('$2.29 billed');
    expect(costOf('s1').dataset.billed).toBe('true');
    // The estimate that ranks it is said beside, as an estimate.
    expect(inDays('s1')).toBe('≈ $10.72 est. in these days');
    expect(costOf('s2').textContent).toBe('≈ $3.50 est.');
    expect(inDays('s2')).toBeNull();
    // Not on the roster: the estimate over these days, called one.
    expect(costOf('gone-session-id').textContent).toBe('≈ $0.50 est.');
    expect(container.querySelector('[data-testid=spend-sessions-note]')?.textContent).toContain('billed when Claude Code said what it billed, else estimated');
  });

  it('says when the figures cannot be read', async () => {
    const b = new MockBackend({
      spend_view: () => Promise.reject(new Error('the report failed: boom')),
      roster_snapshot: () => snapshot({ seq: 0, sessions: [], roots: [], demo: false }),
    });
    const store = new RosterStore(b);
    await store.start();
    const { container } = render(SpendViewPage, { props: { store, onopen: () => {} }, context: engineContext({ backend: b }) });
    await waitFor(() => expect(container.querySelector('[role=alert]')?.textContent).toContain('Could not read the spend'));
  });
});

describe('a costliest session’s cost', () => {
  const top = { sessionId: 's', project: '/p', usd: 4, tokens: 1, lastAt: 0 };
  it('is the row’s figure, billed before the estimate, with the estimate over the days when it differs', () => {
    expect(sessionCost(top, session('s', { cost: cost(5, 1.25) }))).toEqual({
      text: '$1.25 billed',
      billed: true,
      tip: 'about $5.00 at the prices of 2026-11-20; Claude Code billed $1.25',
      inDays: '≈ $4.00 est. in these days',
    });
    expect(sessionCost(top, session('s', { cost: cost(4.001) }))).toMatchObject({ text: '≈ $4.00 est.', billed: false, inDays: null });
    // A row with no figure (nothing priced) and a session the roster lacks: the estimate over the days.
    expect(sessionCost(top, session('s', { cost: cost(null) }))).toMatchObject({ text: '≈ $4.00 est.', billed: false, inDays: null });
    expect(sessionCost(top, undefined)).toMatchObject({ text: '≈ $4.00 est.', billed: false, inDays: null });
  });
});

describe("a work chain's cost on the roster", () => {
  const priced = (usd: number) => ({ estimatedUsd: usd, unknownModels: [], pricesAsOf: '2026-11-20', billed: null });

  it('the store sums the chain; the row shows it beside the chain length', async () => {
    const b = new MockBackend({
      roster_snapshot: () =>
        snapshot({
          seq: 0,
          sessions: [
            session('a', { superseded: true, supersededBy: 'b', workChainId: 'a', chainLength: 2, cost: priced(1.5) }),
            session('b', { workChainId: 'a', chainLength: 2, cost: priced(0.25) }),
          ],
          roots: [],
          demo: false,
        }),
    });
    const store = new RosterStore(b);
    await store.start();
    expect(store.chainCost('a')).toBe(1.75);
    expect(store.chainCost('nope')).toBeNull();
    const row = store.get('b');
    if (!row) throw new Error('no row b');
    const { container } = render(RosterRow, { props: { session: row, selected: false, open: false, onpick: () => {}, chainUsd: store.chainCost('a') } });
    const tag = container.querySelector('[data-testid=chain-length]') as HTMLElement;
    expect(tag.querySelector('[data-testid=chain-cost]')?.textContent).toContain('$1.75');
    expect(tag.dataset.tip).toContain('$1.75 in all');
    expect(container.querySelector('[data-testid=cost]')?.textContent).toBe('≈ $0.25 est.');
  });
});
