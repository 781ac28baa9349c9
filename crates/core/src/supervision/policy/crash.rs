//! Crashes and their recovery (P4, P5): the count of crashes in a row, a crash waiting for
//! a safe idle, the debounce after a recovery, and the resume attempts after an abnormal
//! exit. The policy decides when a crash happened; this part says whether and when to
//! recover.

use super::process::{StopHow, StopWhy};
use super::{Activity, MAX_CONSECUTIVE_CRASHES, Proc, SessionPolicy};
use crate::clock::Mono;
use crate::supervision::event::{EventKind, wording};
use crate::supervision::limits::Limits;
use crate::supervision::view::{Mode, SupervisionState};

/// Resume attempts after a crash (P5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Retry {
    /// When the next attempt starts (None while one runs).
    pub at: Option<Mono>,
    /// Attempts that failed so far.
    pub failed: u32,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct CrashPart {
    /// Crashes since the last finished turn.
    pub consecutive: u32,
    /// A crash was seen mid-turn: recover at the next safe idle.
    pub pending: bool,
    /// The last recovery attempt: when, and whether it succeeded (debounce).
    pub(super) last_recovery: Option<(Mono, bool)>,
    pub retry: Option<Retry>,
    /// Recoveries that brought the agent back.
    pub recovered: u32,
}

impl CrashPart {
    /// Within the debounce of the last recovery: 30 s after a success, 5 s after a failure.
    pub(super) fn debounced(&self, now: Mono, limits: &Limits) -> bool {
        match self.last_recovery {
            Some((at, ok)) => {
                let window = if ok { limits.crash_debounce_success } else { limits.crash_debounce_failure };
                now.since(at) < window
            }
            None => false,
        }
    }

    /// Counts a crash (a pending one is the same crash); true when it is one too many.
    pub(super) fn count(&mut self) -> bool {
        self.pending = false;
        self.consecutive += 1;
        self.consecutive > MAX_CONSECUTIVE_CRASHES
    }

    /// A recovery brought the agent back at `now`.
    pub(super) fn succeeded(&mut self, now: Mono) {
        self.recovered += 1;
        self.last_recovery = Some((now, true));
    }

    /// The first resume attempt after an abnormal exit, after the delay.
    pub(super) fn first_attempt(&mut self, now: Mono, limits: &Limits) {
        self.retry = Some(Retry { at: Some(now.plus(limits.recovery_retry_delay)), failed: 0 });
    }

    /// A resume attempt failed at `now`: true when another is scheduled, false when the
    /// attempts are used up.
    pub(super) fn attempt_failed(&mut self, now: Mono, limits: &Limits) -> bool {
        self.last_recovery = Some((now, false));
        let failed = self.retry.map_or(0, |r| r.failed) + 1;
        if failed < limits.recovery_retries {
            self.retry = Some(Retry { at: Some(now.plus(limits.recovery_retry_delay)), failed });
            return true;
        }
        false
    }

    /// Is a resume attempt due at `now`? Marks it running when it is.
    pub(super) fn retry_due(&mut self, now: Mono) -> bool {
        match self.retry {
            Some(Retry { at: Some(at), failed }) if at <= now => {
                self.retry = Some(Retry { at: None, failed });
                true
            }
            _ => false,
        }
    }

    /// The instants this part wants a tick at; `last_output` for a pending crash's quiet
    /// spell.
    pub(super) fn deadlines(&self, last_output: Mono, limits: &Limits) -> [Option<Mono>; 3] {
        let retry = self.retry.and_then(|r| r.at);
        let quiet = self.pending.then(|| last_output.plus(limits.idle_timeout));
        let debounce = match self.last_recovery {
            Some((at, false)) if self.pending => Some(at.plus(limits.crash_debounce_failure)),
            _ => None,
        };
        [retry, quiet, debounce]
    }

    /// The user took over (resume, restart): crashes so far are forgiven.
    pub(super) fn forgive(&mut self) {
        self.consecutive = 0;
        self.pending = false;
    }
}

impl SessionPolicy {
    fn debounced(&self) -> bool {
        self.crash.debounced(self.now, &self.limits)
    }

    pub(super) fn crash_seen(&mut self) {
        if !self.claude_like() {
            tracing::warn!(session = %self.id, "crash pattern on screen; this agent is monitored only, not recovered");
            return;
        }
        if !matches!(self.proc, Proc::Live { .. }) || self.debounced() || self.crash.pending {
            return; // a second chunk of the same dump, or a process already going away
        }
        if matches!(self.state, SupervisionState::Unhealthy | SupervisionState::Recovering) {
            return;
        }
        if self.activity().busy() {
            tracing::info!(session = %self.id, "crash pattern while working: recovery deferred until idle");
            self.crash.pending = true;
            self.emit(EventKind::CrashDetected { deferred: true });
        } else {
            tracing::warn!(session = %self.id, "crash pattern while idle: recovering now");
            self.emit(EventKind::CrashDetected { deferred: false });
            self.recover(StopHow::Forced);
        }
    }

    pub(super) fn harness_dead(&mut self) {
        if !self.claude_like() || !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        if matches!(self.state, SupervisionState::Unhealthy | SupervisionState::Recovering) {
            return;
        }
        tracing::warn!(session = %self.id, "the harness died (bare shell prompt): forced recovery");
        self.crash.pending = false;
        self.emit(EventKind::CrashDetected { deferred: false });
        self.recover(StopHow::Forced);
    }

    /// A pending crash recovery runs once the session is safely idle: not working, not
    /// at a permission dialog, and not within the failure debounce.
    pub(super) fn maybe_flush_crash(&mut self) {
        if !self.crash.pending || !matches!(self.proc, Proc::Live { .. }) || self.debounced() {
            return;
        }
        let quiet = self.now.since(self.last_output) >= self.limits.idle_timeout;
        match self.activity() {
            Activity::Permission => {}
            Activity::Idle => self.recover(StopHow::Graceful),
            // A harness that stopped drawing may be dead: after a quiet spell, force it.
            Activity::Working | Activity::Unknown if quiet => self.recover(StopHow::Forced),
            _ => {}
        }
    }

    /// Counts a crash; recovers unless that makes it one too many.
    fn recover(&mut self, how: StopHow) {
        if self.crash.count() {
            return self.mark_unhealthy();
        }
        if !self.start_allowed() {
            return self.mark_unhealthy_for_rate();
        }
        self.state = SupervisionState::Recovering;
        self.begin_stop(StopWhy::Recover, how);
    }

    /// A live process exited abnormally: that is the crash (a pending screen crash is the
    /// same one). Resume after the delay, unless it is one too many.
    pub(super) fn crashed_out(&mut self) {
        if self.state == SupervisionState::Unhealthy {
            return; // no more automatic recovery
        }
        if self.crash.count() {
            return self.mark_unhealthy();
        }
        if !self.start_allowed() {
            return self.mark_unhealthy_for_rate();
        }
        if self.limits.recovery_retries == 0 {
            return self.give_up();
        }
        self.state = SupervisionState::Recovering;
        self.crash.first_attempt(self.now, &self.limits);
    }

    fn mark_unhealthy_for_rate(&mut self) {
        self.state = SupervisionState::Unhealthy;
        self.crash.retry = None;
        self.idle.disarm();
        let message = wording::unhealthy_rate(self.recent_restarts(), self.limits.restart_limit_window);
        self.emit(EventKind::SessionUnhealthy { message });
    }

    fn mark_unhealthy(&mut self) {
        self.state = SupervisionState::Unhealthy;
        self.crash.retry = None;
        self.idle.disarm();
        self.emit(EventKind::SessionUnhealthy { message: wording::unhealthy(self.crash.consecutive) });
    }

    /// A resume attempt died before it came up: retry after the delay, or give up and
    /// switch to one-shot mode (P5).
    pub(super) fn attempt_failed(&mut self) {
        if self.crash.attempt_failed(self.now, &self.limits) {
            self.state = SupervisionState::Recovering;
            return;
        }
        self.give_up();
    }

    /// No more automatic resumes: each message becomes its own process (P5).
    fn give_up(&mut self) {
        self.crash.retry = None;
        self.restart.reason = None;
        self.state = SupervisionState::Running;
        self.mode = Mode::OneShot;
        self.emit(EventKind::RecoveryFailed { message: wording::recovery_failed(&self.id) });
        self.emit(EventKind::ModeChange { mode: "one_shot".into(), message: wording::MODE_ONE_SHOT.into() });
        // Keys typed meanwhile become one-shot lines.
        let queued: Vec<Vec<u8>> = self.input.queue.drain(..).collect();
        for b in queued {
            self.one_shot_keys(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn s(n: u64) -> Mono {
        Mono::from_millis(n * 1000)
    }

    #[test]
    fn a_third_crash_in_a_row_is_one_too_many() {
        let mut c = CrashPart::default();
        assert!(!c.count());
        assert!(!c.count());
        assert!(c.count());
        c.forgive();
        assert!(!c.count());
    }

    #[test]
    fn a_recovery_debounces_longer_after_success_than_after_failure() {
        let l = Limits {
            crash_debounce_success: Duration::from_secs(30),
            crash_debounce_failure: Duration::from_secs(5),
            recovery_retries: 2,
            recovery_retry_delay: Duration::from_secs(2),
            ..Limits::default()
        };
        let mut c = CrashPart::default();
        assert!(!c.debounced(s(0), &l));
        c.succeeded(s(10));
        assert!(c.debounced(s(39), &l) && !c.debounced(s(40), &l));
        c.first_attempt(s(50), &l);
        assert!(!c.retry_due(s(51)));
        assert!(c.retry_due(s(52)));
        assert!(!c.retry_due(s(53)), "running now");
        assert!(c.attempt_failed(s(60), &l), "a second attempt");
        assert!(c.debounced(s(64), &l) && !c.debounced(s(65), &l));
        assert!(c.retry_due(s(62)));
        assert!(!c.attempt_failed(s(70), &l), "two attempts, both failed");
    }
}
