//! Restarts for memory and disk (P9, P10, R2): the periodic RSS measurement, the pending
//! restart and the grace its turn gets, the start limit with its back-off, and the holds
//! (the agent needs more than the limit at rest; too many restarts in the window).
//! What a restart does to the process is the policy's.

use super::process::{RestartReason, StopHow, StopWhy};
use super::{Proc, SessionPolicy};
use crate::clock::Mono;
use crate::supervision::baseline::{MemoryBaseline, Verdict};
use crate::supervision::event::{EventKind, wording};
use crate::supervision::limit_clock::RestartLimit;
use crate::supervision::limits::Limits;
use crate::supervision::view::{Mode, RestartHold, SupervisionState};

#[derive(Clone, Debug)]
pub(super) struct RestartPart {
    next_rss_check: Mono,
    /// A monitored-only agent was told of its memory once.
    pub rss_warned: bool,
    /// A restart is pending, and why.
    pub reason: Option<RestartReason>,
    /// The pending restart waits for its turn (or its back-off) until then.
    pub grace_until: Option<Mono>,
    /// The automatic restarts (memory, disk, crash recovery) of the start-limit window.
    pub restarts: RestartLimit,
    /// Automatic memory and disk restarts are stopped, and why.
    pub hold: Option<RestartHold>,
    /// One memory restart, then hold while the agent is over the limit at rest.
    pub baseline: MemoryBaseline,
    /// Automatic restarts done.
    pub count: u32,
}

/// What the memory part says of one measurement above the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OverLimit {
    /// Over the limit again right after a memory restart, before any work: hold.
    Hold { rss: u64 },
    /// Already held: nothing to do.
    Held,
    /// Restart (at once when `force`: twice the limit).
    Restart { force: bool },
}

impl RestartPart {
    pub(super) fn new(now: Mono, limits: &Limits) -> RestartPart {
        RestartPart {
            next_rss_check: now.plus(limits.rss_check),
            rss_warned: false,
            reason: None,
            grace_until: None,
            restarts: RestartLimit::default(),
            hold: None,
            baseline: MemoryBaseline::default(),
            count: 0,
        }
    }

    /// A new process: the next measurement one interval from its start.
    pub(super) fn spawned(&mut self, now: Mono, limits: &Limits) {
        self.next_rss_check = now.plus(limits.rss_check);
    }

    pub(super) fn next_rss_check(&self) -> Mono {
        self.next_rss_check
    }

    /// Is a measurement due at `now`? Schedules the next one when it is.
    pub(super) fn rss_due(&mut self, now: Mono, limits: &Limits) -> bool {
        if self.next_rss_check > now {
            return false;
        }
        self.next_rss_check = now.plus(limits.rss_check);
        true
    }

    /// A claude-like agent measured at `bytes`, over the limit `max`.
    pub(super) fn over_limit(&mut self, bytes: u64, max: u64) -> OverLimit {
        match self.baseline.over_limit(bytes) {
            // Over the limit again right after a memory restart, before any work: the
            // limit is below what the agent needs at rest, and restarting cannot help.
            Verdict::Hold { rss } => return OverLimit::Hold { rss },
            Verdict::Held => return OverLimit::Held,
            // Grown past what it needs at rest: a restart can free that again.
            Verdict::Grew if self.hold == Some(RestartHold::MemoryBaseline) => self.hold = None,
            Verdict::Grew | Verdict::Restart => {}
        }
        OverLimit::Restart { force: bytes > max.saturating_mul(2) }
    }

    /// Stops pending restarts; true when the hold is new (to be said once).
    pub(super) fn hold(&mut self, hold: RestartHold) -> bool {
        self.reason = None;
        self.grace_until = None;
        let new = self.hold != Some(hold);
        self.hold = Some(hold);
        new
    }

    /// Lifts a hold: the user acted, or the limits changed.
    pub(super) fn release_hold(&mut self) {
        self.hold = None;
        self.baseline.reset();
        self.rss_warned = false;
    }

    /// Waits for the back-off (still pending) until `at`.
    pub(super) fn wait_until(&mut self, at: Mono) {
        self.grace_until = Some(self.grace_until.map_or(at, |g| g.max(at)));
    }

    pub(super) fn grace_over(&self, now: Mono) -> bool {
        self.grace_until.is_some_and(|t| t <= now)
    }

    /// New limits: the next measurement and a grace come no later than one new interval
    /// from now; a new memory limit or start limit lifts a hold and measures at once.
    pub(super) fn new_limits(&mut self, old: &Limits, new: &Limits, now: Mono) {
        self.next_rss_check = self.next_rss_check.min(now.plus(new.rss_check));
        if let Some(at) = self.grace_until {
            self.grace_until = Some(at.min(now.plus(new.turn_grace)));
        }
        if old.max_rss_mb != new.max_rss_mb
            || old.restart_limit_burst != new.restart_limit_burst
            || old.restart_limit_window != new.restart_limit_window
        {
            self.release_hold();
            self.next_rss_check = now; // measure against the new limit now
        }
    }
}

impl SessionPolicy {
    /// Automatic restarts within the window, after forgetting older ones.
    pub(super) fn recent_restarts(&mut self) -> usize {
        self.restart.restarts.recent(self.now, &self.limits)
    }

    /// Takes one automatic restart from the start limit; false when the limit is reached.
    pub(super) fn start_allowed(&mut self) -> bool {
        self.restart.restarts.take(self.now, &self.limits)
    }

    /// Stops automatic memory and disk restarts; the session keeps running. Said once.
    fn hold_restarts(&mut self, hold: RestartHold, rss: Option<u64>) {
        let new = self.restart.hold(hold);
        if self.state == SupervisionState::RestartPending {
            self.state = SupervisionState::Running;
        }
        if !new {
            return;
        }
        let message = match hold {
            RestartHold::MemoryBaseline => {
                wording::memory_below_baseline(self.limits.max_rss_mb, rss.unwrap_or(0) / (1024 * 1024))
            }
            RestartHold::RateLimit => wording::restart_limit(self.recent_restarts(), self.limits.restart_limit_window),
        };
        let reason = match hold {
            RestartHold::MemoryBaseline => "memory_baseline",
            RestartHold::RateLimit => "restart_limit",
        };
        tracing::info!(session = %self.id, ?hold, "automatic restarts stopped");
        self.emit(EventKind::SessionWarning { reason: reason.into(), remaining_seconds: None, message });
    }

    pub(super) fn rss(&mut self, bytes: u64) {
        if !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        let max = self.limits.max_rss_bytes();
        if bytes <= max {
            return;
        }
        if !self.claude_like() {
            if !self.restart.rss_warned {
                self.restart.rss_warned = true;
                self.emit(EventKind::SessionWarning {
                    reason: "memory".into(),
                    remaining_seconds: None,
                    message: format!(
                        "The agent uses {} MB, over the {} MB limit. It cannot be resumed, so it is not restarted.",
                        bytes / (1024 * 1024),
                        self.limits.max_rss_mb
                    ),
                });
            }
            return;
        }
        let force = match self.restart.over_limit(bytes, max) {
            OverLimit::Hold { rss } => return self.hold_restarts(RestartHold::MemoryBaseline, Some(rss)),
            OverLimit::Held => return,
            OverLimit::Restart { force } => force,
        };
        if self.restart.hold.is_none() {
            tracing::info!(
                session = %self.id,
                "RSS={}MB exceeds threshold={}MB. Flagged for restart.",
                bytes / (1024 * 1024),
                self.limits.max_rss_mb
            );
        }
        self.flag_restart(RestartReason::Memory, Some(force));
    }

    /// P9/P10: flag for restart; restart now unless a turn runs (then after it, or after
    /// the grace, or at once when `force`).
    pub(super) fn flag_restart(&mut self, reason: RestartReason, force: Option<bool>) {
        if !self.claude_like() || !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        if !matches!(self.state, SupervisionState::Running | SupervisionState::RestartPending)
            || self.mode == Mode::OneShot
            || self.restart.hold.is_some()
        {
            return;
        }
        if self.restart.reason.is_none() && self.recent_restarts() >= self.limits.restart_limit_burst as usize {
            return self.hold_restarts(RestartHold::RateLimit, None);
        }
        if self.restart.reason.is_none() {
            self.restart.reason = Some(reason);
            self.state = SupervisionState::RestartPending;
        }
        let force = force.unwrap_or(false);
        if force || !self.activity().busy() || self.limits.turn_grace.is_zero() {
            self.restart_now();
        } else if self.restart.grace_until.is_none() {
            self.restart.grace_until = Some(self.now.plus(self.limits.turn_grace));
        }
    }

    pub(super) fn restart_now(&mut self) {
        let Some(reason) = self.restart.reason else { return };
        if reason != RestartReason::User {
            // Back-off between consecutive automatic restarts: wait, still pending.
            if let Some(at) = self.restart.restarts.backoff_until(self.now, &self.limits) {
                return self.restart.wait_until(at);
            }
            if !self.start_allowed() {
                return self.hold_restarts(RestartHold::RateLimit, None);
            }
            if reason == RestartReason::Memory {
                self.restart.baseline.restarting();
            }
        }
        self.restart.grace_until = None;
        let (tag, message) = match reason {
            RestartReason::Memory => ("memory_limit", wording::RESTARTING),
            RestartReason::Disk => ("disk_limit", wording::DISK_RESTARTING),
            RestartReason::User => ("user", wording::RESTARTING),
        };
        self.emit(EventKind::SessionRestarting { reason: tag.into(), message: message.into() });
        self.begin_stop(StopWhy::Restart(reason), StopHow::Term);
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
    fn rss_is_measured_once_per_interval_and_at_once_after_a_new_limit() {
        let l = Limits { rss_check: Duration::from_secs(30), ..Limits::default() };
        let mut r = RestartPart::new(s(0), &l);
        assert!(!r.rss_due(s(29), &l));
        assert!(r.rss_due(s(30), &l));
        assert!(!r.rss_due(s(31), &l));
        assert_eq!(r.next_rss_check(), s(60));
        let lower = Limits { max_rss_mb: l.max_rss_mb / 2, ..l.clone() };
        r.new_limits(&l, &lower, s(40));
        assert!(r.rss_due(s(40), &lower), "measured against the new limit now");
        assert_eq!(r.next_rss_check().since(s(40)), Duration::from_secs(30));
    }

    #[test]
    fn a_hold_is_new_once_and_lifted_by_new_limits() {
        let l = Limits::default();
        let mut r = RestartPart::new(s(0), &l);
        r.reason = Some(RestartReason::Memory);
        assert!(r.hold(RestartHold::RateLimit));
        assert_eq!(r.reason, None, "a held restart is no longer pending");
        assert!(!r.hold(RestartHold::RateLimit), "said once");
        let other = Limits { restart_limit_burst: l.restart_limit_burst + 1, ..l.clone() };
        r.new_limits(&l, &other, s(1));
        assert_eq!(r.hold, None);
    }

    #[test]
    fn twice_the_limit_restarts_at_once() {
        let mut r = RestartPart::new(s(0), &Limits::default());
        assert_eq!(r.over_limit(150, 100), OverLimit::Restart { force: false });
        assert_eq!(r.over_limit(250, 100), OverLimit::Restart { force: true });
    }
}
