//! Whether the process is up and alive (P13): a starting process is up once anything of its
//! own shows it, once its quiet output says so ([`Readiness`]), or after
//! [`READY_FALLBACK`]; a live one is checked on an interval.

use std::time::Duration;

use crate::clock::Mono;
use crate::supervision::readiness::Readiness;

/// A process that shows nothing recognisable this long after its spawn is taken to be up.
pub const READY_FALLBACK: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
pub(super) struct HealthPart {
    next_check: Mono,
    /// Whether the agent's screen or registry says when it is up (else its quiet output).
    pub readiness: Readiness,
}

impl HealthPart {
    pub(super) fn new(now: Mono, every: Duration) -> HealthPart {
        HealthPart { next_check: now.plus(every), readiness: Readiness::default() }
    }

    /// A new process: its first check one interval from its start.
    pub(super) fn spawned(&mut self, now: Mono, every: Duration) {
        self.next_check = now.plus(every);
    }

    pub(super) fn next_check(&self) -> Mono {
        self.next_check
    }

    /// Is a check due at `now`? Schedules the next one when it is.
    pub(super) fn due(&mut self, now: Mono, every: Duration) -> bool {
        if self.next_check > now {
            return false;
        }
        self.next_check = now.plus(every);
        true
    }

    /// The limits changed: the next check no later than one new interval from now.
    pub(super) fn sooner(&mut self, now: Mono, every: Duration) {
        self.next_check = self.next_check.min(now.plus(every));
    }

    /// When a process that started at `since`, whose output last came at `last_output`,
    /// is taken to be up without a word of its own.
    pub(super) fn startup_deadlines(&self, since: Mono, last_output: Mono) -> [Option<Mono>; 2] {
        [Some(since.plus(READY_FALLBACK)), self.readiness.quiet_deadline(since, last_output)]
    }

    /// Is a starting process up by `now` without a word of its own?
    pub(super) fn up_by(&self, since: Mono, last_output: Mono, now: Mono) -> bool {
        self.startup_deadlines(since, last_output).into_iter().flatten().any(|t| t <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervision::activity::Activity;

    fn s(n: u64) -> Mono {
        Mono::from_millis(n * 1000)
    }

    #[test]
    fn a_silent_process_is_up_after_the_fallback_or_its_quiet_output() {
        let mut h = HealthPart::new(s(0), Duration::from_secs(10));
        assert!(!h.up_by(s(0), s(0), s(29)));
        assert!(h.up_by(s(0), s(0), s(30)));
        h.readiness.turn(Activity::Unknown, Activity::Unknown);
        assert!(h.up_by(s(0), s(2), s(3)), "a mute screen that went quiet");
    }

    #[test]
    fn checks_come_once_per_interval() {
        let every = Duration::from_secs(10);
        let mut h = HealthPart::new(s(0), every);
        assert!(!h.due(s(9), every));
        assert!(h.due(s(10), every));
        assert!(!h.due(s(19), every));
        h.sooner(s(12), Duration::from_secs(2));
        assert_eq!(h.next_check(), s(14));
    }
}
