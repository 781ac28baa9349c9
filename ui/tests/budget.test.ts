// Issue 36: the budget banner of a suspended session and the Settings' budget fields.
import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import BudgetBanner from '../src/components/pty/BudgetBanner.svelte';
import TimelineHeader from '../src/components/TimelineHeader.svelte';
import { budgetProblem, budgetStop, dollars } from '../src/lib/budget';
import { DEFAULT_SETTINGS, validateSettings } from '../src/lib/settings';
import type { Settings, Supervision } from '../src/lib/types';
import { session } from './helpers';

const sup = (over: Partial<Supervision>): Supervision =>
  ({ state: 'running', mode: 'persistent', agent: 'claude', cwd: '/p', pid: null, processStartedAt: null, createdAt: '2026-11-01T11:00:00.000Z',
    recoveryCount: 0, restartCount: 0, consecutiveCrashes: 0, pendingCrashRecovery: false, awaitingPermission: false,
    idleDeadline: null, durationDeadline: null, queuedInputs: 0, lastExitCode: null, terminatedReason: null, restartsHeld: null,
    budgetUsd: null, spentUsd: null, suspendedReason: null, ...over }) as Supervision;

describe('budgets', () => {
  it('bad budgets are refused with the engine’s sentences; empty is none', () => {
    expect(budgetProblem(null)).toBeNull();
    expect(budgetProblem(2.5)).toBeNull();
    expect(budgetProblem(-1)).toBe('must be more than $0 (leave it empty for no budget)');
    expect(budgetProblem(0)).toBe('must be more than $0 (leave it empty for no budget)');
    expect(budgetProblem(NaN)).toBe('must be a number of dollars');
    expect(budgetProblem(Infinity)).toBe('must be a number of dollars');
    expect(budgetProblem(2e6)).toBe('must be at most $1,000,000.00');
    expect(dollars(12345.6)).toBe('$12,345.60');
    expect(dollars(0.0006)).toBe('$0.0006');
  });

  it('the Settings check both budgets field by field', () => {
    const s: Settings = structuredClone(DEFAULT_SETTINGS);
    expect(validateSettings(s)).toEqual([]);
    s.limits.budgetUsd = -3;
    s.limits.dailyBudgetUsd = NaN;
    expect(validateSettings(s)).toEqual([
      { field: 'limits.budgetUsd', message: 'must be more than $0 (leave it empty for no budget)' },
      { field: 'limits.dailyBudgetUsd', message: 'must be a number of dollars' },
    ]);
    s.limits.budgetUsd = 5;
    s.limits.dailyBudgetUsd = 50;
    expect(validateSettings(s)).toEqual([]);
  });

  it('only a session suspended for its budget shows the banner', () => {
    expect(budgetStop(sup({ state: 'suspended', suspendedReason: 'idle' }))).toBeNull();
    expect(budgetStop(sup({ state: 'running', budgetUsd: 1, spentUsd: 2 }))).toBeNull();
    expect(budgetStop(sup({ state: 'suspended', suspendedReason: 'budget', budgetUsd: 1, spentUsd: 1.2 }))).toEqual({
      daily: false,
      spent: 1.2,
      budget: 1,
      suggested: 2.4,
    });
    // Under its own budget: the fleet's daily budget stopped it.
    expect(budgetStop(sup({ state: 'suspended', suspendedReason: 'budget', budgetUsd: 5, spentUsd: 1 }))?.daily).toBe(true);
  });

  it('the banner says why and Continue raises the budget, refusing a bad one in a sentence', async () => {
    const onraise = vi.fn();
    render(BudgetBanner, { props: { supervision: sup({ state: 'suspended', suspendedReason: 'budget', budgetUsd: 1, spentUsd: 1.2 }), onraise } });
    expect(screen.getByTestId('budget-why').textContent).toContain("$1.20 of this session's budget of $1.00 is spent");
    const input = screen.getByTestId('budget-input') as HTMLInputElement;
    expect(input.value).toBe('2.4');
    const go = screen.getByTestId('budget-continue') as HTMLButtonElement;
    expect(go.textContent).toBe('Continue (raise the budget)');
    await fireEvent.input(input, { target: { value: '-5' } });
    expect(go.disabled).toBe(true);
    expect(screen.getByTestId('budget-error').textContent).toBe('The budget must be more than $0 (leave it empty for no budget).');
    await fireEvent.input(input, { target: { value: '3' } });
    expect(go.disabled).toBe(false);
    await fireEvent.click(go);
    expect(onraise).toHaveBeenCalledWith(3, false);
  });

  it('no banner for a session that is not over budget', () => {
    render(BudgetBanner, { props: { supervision: sup({ state: 'suspended', suspendedReason: 'idle' }), onraise: () => {} } });
    expect(screen.queryByTestId('budget-banner')).toBeNull();
  });

  it('the session header shows its spend against its budget', () => {
    const s = session('s', { source: 'pty', supervision: sup({ pid: 7, budgetUsd: 5, spentUsd: 4.25 }) });
    render(TimelineHeader, { props: { session: s, total: 3 } });
    expect(screen.getByTestId('budget-used').textContent).toBe('$4.25 of $5.00 budget');
  });
});
