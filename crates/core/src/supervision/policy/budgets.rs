//! The budget sub-machine's place in the session's policy (issue 36): the rules are
//! [`crate::supervision::budget`]; here they meet the session. A budget reached suspends the
//! session at its next idle moment, never mid-turn, the way an idle one is suspended (so it
//! resumes with `--resume`, nothing lost); while the budget stays reached, a message typed
//! to it is kept, not sent.

use super::{SessionPolicy, SuspendCause};
use crate::supervision::budget::{Crossed, Scope, wording};
use crate::supervision::event::EventKind;
use crate::supervision::view::{SupervisionState, SuspendedReason};

/// The row's `suspendedReason` for a cause.
pub(super) fn view_reason(cause: SuspendCause) -> SuspendedReason {
    match cause {
        SuspendCause::Idle => SuspendedReason::Idle,
        SuspendCause::Cap => SuspendedReason::Cap,
        SuspendCause::Budget(_) => SuspendedReason::Budget,
    }
}

impl SessionPolicy {
    pub(super) fn spend(&mut self, usd: f64) {
        let crossed = self.budget.observe(usd);
        self.budget_crossed(crossed);
    }

    pub(super) fn own_budget(&mut self, usd: Option<f64>) {
        let crossed = self.budget.set_own(usd);
        self.budget_crossed(crossed);
    }

    /// `session_warning` (`budget`) at 80 % and at 100 % (then the suspension follows at
    /// the next idle moment).
    pub(super) fn budget_crossed(&mut self, crossed: Option<Crossed>) {
        let message = match crossed {
            None => return,
            Some(Crossed::Warn { spent, limit }) => wording::warning(Scope::Session, spent, limit),
            Some(Crossed::Reached { spent, limit }) if self.claude_like() => format!(
                "{} It will be suspended when its turn ends.",
                wording::reached_external(Scope::Session, spent, limit)
            ),
            Some(Crossed::Reached { spent, limit }) => wording::reached_external(Scope::Session, spent, limit),
        };
        self.emit(EventKind::SessionWarning { reason: "budget".into(), remaining_seconds: None, message });
    }

    /// A budget is reached: the session stays suspended until it is raised.
    pub(super) fn budget_holds(&self) -> bool {
        self.budget.exhausted().is_some()
    }

    /// At an idle moment with a budget reached: suspend, as an idle session is.
    pub(super) fn suspend_if_over_budget(&mut self) {
        if let Some((scope, ..)) = self.budget.exhausted()
            && self.state == SupervisionState::Running
            && self.suspendable()
        {
            self.try_suspend(SuspendCause::Budget(scope));
        }
    }

    pub(super) fn budget_suspended_message(&self) -> String {
        match self.budget.exhausted() {
            Some((scope, spent, limit)) => wording::suspended(scope, spent, limit),
            None => wording::suspended(Scope::Session, self.budget.spent(), self.budget.limit().unwrap_or_default()),
        }
    }

    pub(super) fn suspended_reason(&self) -> Option<SuspendedReason> {
        self.suspended_for.filter(|_| self.state == SupervisionState::Suspended).map(view_reason)
    }
}
