//! The idle timer and suspension (P6, P7): the timer starts when a turn completes, is
//! reset by any input or output, and never suspends a busy session or one at a dialog;
//! the fleet's cap suspends the least recently used. The timer's state is [`IdlePart`];
//! what a suspension does to the process is below, on the policy.

use std::time::Duration;

use super::budgets::view_reason;
use super::process::{StopHow, StopWhy, SuspendCause};
use super::{Effect, Launch, Proc, Purpose, SessionPolicy, Sig};
use crate::clock::Mono;
use crate::supervision::event::{EventKind, wording};
use crate::supervision::limits::SuspendMode;
use crate::supervision::view::SupervisionState;

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct IdlePart {
    /// When the idle session is suspended (None: not idle, or not eligible).
    pub deadline: Option<Mono>,
    /// When it was suspended, to say for how long when it comes back.
    suspended_at: Option<Mono>,
}

impl IdlePart {
    /// A turn completed: the timer starts.
    pub(super) fn arm(&mut self, now: Mono, timeout: Duration) {
        self.deadline = Some(now.plus(timeout));
    }

    /// Input or output: a running timer starts again.
    pub(super) fn touch(&mut self, now: Mono, timeout: Duration) {
        if self.deadline.is_some() {
            self.arm(now, timeout);
        }
    }

    pub(super) fn disarm(&mut self) {
        self.deadline = None;
    }

    /// Did the timer run out at `now`? It is spent when it did.
    pub(super) fn due(&mut self, now: Mono) -> bool {
        let due = self.deadline.is_some_and(|t| t <= now);
        if due {
            self.deadline = None;
        }
        due
    }

    /// A running timer keeps its start and takes the new length.
    pub(super) fn retime(&mut self, old: Duration, new: Duration) {
        if let Some(deadline) = self.deadline {
            let started = Mono::from_millis(deadline.millis().saturating_sub(old.as_millis() as u64));
            self.deadline = Some(started.plus(new));
        }
    }

    pub(super) fn suspended(&mut self, now: Mono) {
        self.suspended_at = Some(now);
    }

    /// Comes back at `now`: how long it was suspended.
    pub(super) fn woken(&mut self, now: Mono) -> Duration {
        now.since(self.suspended_at.take().unwrap_or(now))
    }
}

impl SessionPolicy {
    pub(super) fn try_suspend(&mut self, cause: SuspendCause) {
        if !self.suspendable() {
            return;
        }
        self.idle.disarm();
        self.suspended_for = Some(cause);
        // Seed 003 §2.2: the client hears of the mode change before the process is stopped.
        let message = self.suspended_message(cause);
        self.emit(EventKind::ModeChange { mode: "suspended".into(), message });
        match self.limits.suspend_mode {
            SuspendMode::Stop => {
                self.out.push(Effect::Signal(Sig::Stop));
                self.frozen = true;
                self.state = SupervisionState::Suspended;
                self.idle.suspended(self.now);
                self.announce_suspended(cause);
            }
            SuspendMode::Terminate => {
                self.state = SupervisionState::Suspended;
                self.begin_stop(StopWhy::Suspend(cause), StopHow::Term);
            }
        }
    }

    fn suspended_message(&self, cause: SuspendCause) -> String {
        match cause {
            SuspendCause::Idle => wording::suspended_idle(self.limits.idle_timeout),
            SuspendCause::Cap => wording::suspended_cap(self.limits.max_live_sessions),
            SuspendCause::Budget(_) => self.budget_suspended_message(),
        }
    }

    /// The process is stopped (or frozen).
    pub(super) fn announce_suspended(&mut self, cause: SuspendCause) {
        let message = self.suspended_message(cause);
        let reason = view_reason(cause).as_str().to_owned();
        self.emit(EventKind::SessionSuspended { message, reason });
    }

    pub(super) fn resume_from_suspension(&mut self) {
        let idle = self.idle.woken(self.now);
        self.emit(EventKind::SessionResumed { message: wording::resuming(idle) });
        self.suspended_for = None;
        if self.frozen {
            self.out.push(Effect::Signal(Sig::Cont));
            self.frozen = false;
            self.state = SupervisionState::Running;
            self.emit(EventKind::ModeChange { mode: "persistent".into(), message: wording::MODE_PERSISTENT.into() });
            self.flush_queue();
        } else if matches!(self.proc, Proc::None) {
            self.state = SupervisionState::Recovering;
            self.spawn(Launch::Resume, Purpose::ResumeSuspended);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Mono {
        Mono::from_millis(n * 1000)
    }

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn the_timer_runs_only_once_armed_and_moves_with_activity() {
        let mut i = IdlePart::default();
        i.touch(s(10), MIN);
        assert_eq!(i.deadline, None, "not armed: activity starts nothing");
        i.arm(s(10), MIN);
        i.touch(s(40), MIN);
        assert!(!i.due(s(70)));
        assert!(i.due(s(100)));
        assert!(!i.due(s(200)), "spent");
    }

    #[test]
    fn a_new_length_keeps_the_start() {
        let mut i = IdlePart::default();
        i.arm(s(10), MIN);
        i.retime(MIN, Duration::from_secs(30));
        assert_eq!(i.deadline, Some(s(40)));
        i.suspended(s(40));
        assert_eq!(i.woken(s(100)), Duration::from_secs(60));
        assert_eq!(i.woken(s(200)), Duration::ZERO, "said once");
    }
}
