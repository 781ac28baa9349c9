// Budgets (issue 36): the sentences and checks the Settings fields and the suspended
// session's banner share. The engine checks again (crates/core supervision/budget.rs,
// `check_usd`): these are its words.

import { cents } from './format';
import type { Supervision } from './types';

/** The largest budget taken (the engine's MAX_BUDGET_USD). */
export const MAX_BUDGET_USD = 1_000_000;

/** Why a budget cannot be taken, or null. `null` (an empty field) is no budget. */
export function budgetProblem(v: number | null): string | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'must be a number of dollars';
  if (v <= 0) return 'must be more than $0 (leave it empty for no budget)';
  if (v > MAX_BUDGET_USD) return 'must be at most $1,000,000.00';
  return null;
}

/** `$4.00`, `$0.0006`, as the engine writes sums. */
export function dollars(v: number): string {
  if (v > 0 && v < 0.01) return '$' + v.toFixed(4).replace(/0+$/, '');
  return '$' + cents.format(v);
}

/** A suspended session's budget: whose it is (its own, or the fleet's daily one), and a raise to offer. */
export function budgetStop(s: Supervision | null | undefined): { daily: boolean; spent: number; budget: number | null; suggested: number } | null {
  if (!s || s.state !== 'suspended' || s.suspendedReason !== 'budget') return null;
  const spent = s.spentUsd ?? 0;
  const own = s.budgetUsd !== null && spent >= s.budgetUsd;
  const budget = own ? s.budgetUsd : null;
  const base = Math.max(budget ?? 0, spent);
  // Twice what is spent, in whole cents (at least a cent more).
  const suggested = Math.max(Math.ceil(base * 2 * 100) / 100, base + 0.01);
  return { daily: !own, spent, budget, suggested: Math.min(suggested, MAX_BUDGET_USD) };
}
