//! The fleet's daily budget (`limits.dailyBudgetUsd`, where every session is followed: the
//! app) on one of Claude Code 2.1.332's background sessions (issue 36): today's spend warned
//! at 85 %, reached mid-turn, the session stopped through `claude stop` once its turn ends,
//! resumed by `claude respawn` with nothing lost (the scenario: `tests/support/bg_budget.rs`).
//!
//! One test in its own binary: it gives the process the home's environment (Claude Code's
//! verbs inherit it), which no other test shares.

use mimesis_core::supervision::budget::Scope;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleets_daily_budget_stops_a_background_session_at_its_turns_end() -> anyhow::Result<()> {
    // SAFETY: the only test of this binary, first thing.
    unsafe { mimesis_tests::bg_budget::stopped_over_budget(Scope::Fleet) }.await
}
