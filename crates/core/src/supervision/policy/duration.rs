//! The duration limit of one session (P8): when it counts from, when it is checked next,
//! its warning and end ([`DurationLimit`]) and the grace an in-flight turn gets at the end.
//! What happens when it fires (a warning, the end of the session) is the policy's.

use std::time::Duration;

use super::process::{StopHow, StopWhy};
use super::{Proc, SessionPolicy};
use crate::clock::{Mono, Now, Timestamp};
use crate::supervision::event::{EventKind, wording};
use crate::supervision::limit_clock::{DurationLimit, DurationVerdict};
use crate::supervision::limits::Limits;
use crate::supervision::view::SupervisionState;

#[derive(Clone, Debug, PartialEq)]
pub(super) struct DurationPart {
    /// When the session (or its latest run after the limit) was created: shown (wall) and
    /// counted from (monotonic).
    pub created_wall: Timestamp,
    pub created_at: Mono,
    next_check: Mono,
    /// The warning and end (when it was last checked: a warning/limit instant at or before
    /// that was already acted on, or found moot).
    limit: DurationLimit,
    /// The limit was reached mid-turn: the turn has until then.
    pub grace_until: Option<Mono>,
}

impl DurationPart {
    pub(super) fn new(at: Now, limits: &Limits) -> DurationPart {
        DurationPart {
            created_wall: at.wall,
            created_at: at.mono,
            next_check: at.mono.plus(limits.duration_check),
            limit: DurationLimit::new(at.mono),
            grace_until: None,
        }
    }

    /// When the limit ends the session.
    pub(super) fn end(&self, limits: &Limits) -> Mono {
        self.created_at.plus(limits.max_duration)
    }

    /// The warning's and the limit's own instants, so the check interval never delays
    /// them (a 2 s limit with the default 60 s check still ends at 2 s): the next of them
    /// that the duration check has not seen yet.
    pub(super) fn due(&self, limits: &Limits) -> Option<Mono> {
        self.limit.due(self.created_at, limits)
    }

    /// The instants this part wants a tick at; `counting` is false once the session ended.
    pub(super) fn deadlines(&self, limits: &Limits, counting: bool) -> [Option<Mono>; 3] {
        let checks = counting.then_some(self.next_check);
        [self.grace_until, checks, if counting { self.due(limits) } else { None }]
    }

    /// Is a check due at `now`? Moves the periodic check on past `now` when it is.
    pub(super) fn check_due(&mut self, now: Mono, limits: &Limits, counting: bool) -> bool {
        let due = counting && self.due(limits).is_some_and(|t| t <= now);
        if self.next_check > now && !due {
            return false;
        }
        while self.next_check <= now {
            self.next_check = self.next_check.plus(limits.duration_check.max(Duration::from_millis(1)));
        }
        true
    }

    /// Notes a check at `now` that found nothing to do (the session ended, or is ending).
    pub(super) fn moot(&mut self, now: Mono) {
        self.limit.checked_at = now;
    }

    pub(super) fn check(&mut self, now: Mono, limits: &Limits) -> DurationVerdict {
        self.limit.check(self.created_at, now, limits)
    }

    /// Did the grace of a turn run out at `now`?
    pub(super) fn grace_over(&self, now: Mono) -> bool {
        self.grace_until.is_some_and(|t| t <= now)
    }

    /// A new run after the limit ended the last one: the limit counts again from now.
    pub(super) fn new_run(&mut self, at: Now, limits: &Limits) {
        self.created_at = at.mono;
        self.created_wall = at.wall;
        self.next_check = at.mono.plus(limits.duration_check);
        self.limit.warned = false;
    }

    /// New limits apply to what is still ahead: the warning and the limit are checked again
    /// at once, the next check comes no later than one new interval from now, and a grace
    /// no later than the new grace.
    pub(super) fn new_limits(&mut self, old: &Limits, new: &Limits, now: Mono) {
        if old.max_duration != new.max_duration || old.duration_warn_percent != new.duration_warn_percent {
            let elapsed = now.since(self.created_at);
            if elapsed.as_millis() * 100 < new.max_duration.as_millis() * u128::from(new.duration_warn_percent) {
                self.limit.warned = false; // the warning is ahead again
            }
            if elapsed < new.max_duration {
                self.grace_until = None; // no longer over the limit
            }
            self.next_check = now;
        }
        self.next_check = self.next_check.min(now.plus(new.duration_check));
        if let Some(at) = self.grace_until {
            self.grace_until = Some(at.min(now.plus(new.turn_grace)));
        }
    }
}

impl SessionPolicy {
    pub(super) fn end_for_duration(&mut self, incomplete: bool) {
        self.duration.grace_until = None;
        if matches!(self.proc, Proc::None) {
            return self.after_stop(StopWhy::Duration { incomplete });
        }
        self.input.queue.clear();
        // EC-003: interrupt the turn (Esc in the TUI), then terminate.
        let how = if incomplete { StopHow::Interrupt } else { StopHow::Term };
        self.begin_stop(StopWhy::Duration { incomplete }, how);
    }

    pub(super) fn duration_check(&mut self) {
        let ending = matches!(self.proc, Proc::Stopping { why: StopWhy::Duration { .. }, .. });
        if self.state == SupervisionState::Terminated || self.duration.grace_until.is_some() || ending {
            return self.duration.moot(self.now);
        }
        match self.duration.check(self.now, &self.limits) {
            DurationVerdict::Reached => {
                let busy = matches!(self.proc, Proc::Live { .. }) && self.activity().busy() && !self.frozen;
                if busy && !self.limits.turn_grace.is_zero() {
                    tracing::info!(session = %self.id, "duration limit reached mid-turn: waiting for the turn to finish");
                    self.duration.grace_until = Some(self.now.plus(self.limits.turn_grace));
                } else {
                    self.end_for_duration(busy);
                }
            }
            DurationVerdict::Warn(remaining) => self.emit(EventKind::SessionWarning {
                reason: "duration".into(),
                remaining_seconds: Some(remaining.as_secs()),
                message: wording::duration_warning(remaining),
            }),
            DurationVerdict::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Now {
        Now { wall: Timestamp::from_millis(1_000_000 + secs as i64 * 1000), mono: Mono::from_millis(secs * 1000) }
    }

    fn limits(max: u64, check: u64) -> Limits {
        Limits {
            max_duration: Duration::from_secs(max),
            duration_check: Duration::from_secs(check),
            duration_warn_percent: 90,
            ..Limits::default()
        }
    }

    #[test]
    fn the_warning_and_the_end_are_due_on_their_own_instants_not_the_check_interval() {
        let l = limits(100, 60);
        let mut d = DurationPart::new(at(0), &l);
        assert_eq!(d.due(&l), Some(at(90).mono));
        assert!(!d.check_due(at(30).mono, &l, true));
        assert!(d.check_due(at(60).mono, &l, true), "the periodic check");
        assert_eq!(d.check(at(60).mono, &l), DurationVerdict::Nothing);
        assert!(d.check_due(at(90).mono, &l, true), "the warning's own instant");
        assert_eq!(d.check(at(90).mono, &l), DurationVerdict::Warn(Duration::from_secs(10)));
        assert_eq!(d.due(&l), Some(at(100).mono));
        assert_eq!(d.check(at(100).mono, &l), DurationVerdict::Reached);
        assert!(!d.check_due(at(100).mono, &l, false) || d.due(&l).is_none());
    }

    #[test]
    fn a_new_run_counts_again_and_new_limits_bring_the_check_forward() {
        let l = limits(100, 60);
        let mut d = DurationPart::new(at(0), &l);
        d.grace_until = Some(at(130).mono);
        let longer = limits(1000, 60);
        d.new_limits(&l, &longer, at(120).mono);
        assert_eq!(d.grace_until, None, "no longer over the limit");
        assert!(d.check_due(at(120).mono, &longer, true), "checked again at once");
        d.new_run(at(200), &longer);
        assert_eq!(d.end(&longer), at(1200).mono);
        assert_eq!(d.created_wall, at(200).wall);
    }
}
