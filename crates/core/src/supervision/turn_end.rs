//! When one of Claude Code's background sessions is at the end of its turn, for the stops
//! and restarts Mimesis makes "at the turn's end" through the service's own verbs (the
//! budget's `claude stop`, the duration limit's, the memory limit's `claude respawn`).
//!
//! The roster's status leaves `working` when the service's job says idle: the service
//! classifies the job as soon as the turn's last reply came back, a moment before the
//! worker writes that reply to the transcript (more than half a second under load: CI,
//! `bg_budget`). A verb in that moment kills the worker before it writes the turn's last
//! words. The transcript is the exact signal that they are written, so the turn is over
//! when the status says so and the transcript shows it ([`crate::status::turn_written`]);
//! a transcript that never does is given [`TRANSCRIPT_GRACE`], and the verb then goes
//! anyway, saying so ([`TurnVerdict::Unwritten`]).

use std::time::Duration;

use crate::clock::Mono;

/// How long after the status said the turn is over the transcript may take to show it.
pub const TRANSCRIPT_GRACE: Duration = Duration::from_secs(10);

/// Where the session's turn is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TurnVerdict {
    /// A turn runs (the status says so).
    Running,
    /// The status says the turn is over and the transcript does not show it yet: wait for
    /// it, at most until `until`.
    Writing { until: Mono },
    /// Over: the transcript shows it.
    Over,
    /// The status said the turn was over [`TRANSCRIPT_GRACE`] ago and the transcript still
    /// does not show it: its last words may never be written.
    Unwritten,
}

impl TurnVerdict {
    /// The turn is over, its words written or not.
    pub fn over(self) -> bool {
        matches!(self, TurnVerdict::Over | TurnVerdict::Unwritten)
    }
}

/// The turn of one session, as its status and its transcript tell.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnEnd {
    /// A turn runs, by the status.
    busy: bool,
    /// The transcript shows the turn over (as last asked, since the last turn ran).
    written: bool,
    /// When the status last said the turn is over while the transcript did not show it.
    since: Option<Mono>,
}

impl TurnEnd {
    /// The status: a turn runs or not.
    pub fn status(&mut self, busy: bool, now: Mono) -> TurnVerdict {
        if busy {
            // A new turn: what the transcript showed was the end of the one before.
            self.written = false;
            self.since = None;
        }
        self.busy = busy;
        self.verdict(now)
    }

    /// What the transcript shows: the turn over, or not. Said while the status says a turn
    /// runs, it is of the turn before (the status comes first): not kept.
    pub fn transcript(&mut self, written: bool, now: Mono) -> TurnVerdict {
        if !self.busy {
            self.written = written;
        }
        self.verdict(now)
    }

    /// Where the turn is at `now` (the grace ends on the clock alone).
    pub fn verdict(&mut self, now: Mono) -> TurnVerdict {
        if self.busy {
            return TurnVerdict::Running;
        }
        if self.written {
            self.since = None;
            return TurnVerdict::Over;
        }
        let until = self.since.get_or_insert(now).plus(TRANSCRIPT_GRACE);
        if now >= until { TurnVerdict::Unwritten } else { TurnVerdict::Writing { until } }
    }

    /// The status says the turn is over and the transcript has not shown it (yet).
    pub fn waiting_for_transcript(&self) -> bool {
        !self.busy && !self.written
    }

    /// When the grace for the transcript ends, while it runs.
    pub fn deadline(&self) -> Option<Mono> {
        self.since.filter(|_| self.waiting_for_transcript()).map(|s| s.plus(TRANSCRIPT_GRACE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Mono {
        Mono::from_millis(ms)
    }

    #[test]
    fn the_job_idle_with_the_transcript_mid_turn_waits_for_the_transcript() {
        let mut t = TurnEnd::default();
        assert_eq!(t.status(true, at(0)), TurnVerdict::Running);
        let until = at(1_000).plus(TRANSCRIPT_GRACE);
        assert_eq!(t.status(false, at(1_000)), TurnVerdict::Writing { until });
        assert!(t.waiting_for_transcript());
        assert_eq!(t.transcript(false, at(1_400)), TurnVerdict::Writing { until }, "the grace counts from the idle");
        assert_eq!(t.deadline(), Some(until));
        assert_eq!(t.transcript(true, at(1_700)), TurnVerdict::Over);
        assert!(!t.waiting_for_transcript());
        assert_eq!(t.deadline(), None);
    }

    #[test]
    fn a_transcript_that_never_shows_the_end_is_given_the_grace_then_said_unwritten() {
        let mut t = TurnEnd::default();
        t.status(true, at(0));
        t.status(false, at(2_000));
        assert!(!t.verdict(at(1_999).plus(TRANSCRIPT_GRACE)).over());
        assert_eq!(t.verdict(at(2_000).plus(TRANSCRIPT_GRACE)), TurnVerdict::Unwritten);
        assert!(t.verdict(at(2_000).plus(TRANSCRIPT_GRACE)).over());
        // Written late: over after all.
        assert_eq!(t.transcript(true, at(60_000)), TurnVerdict::Over);
    }

    #[test]
    fn a_new_turn_forgets_the_last_ones_end() {
        let mut t = TurnEnd::default();
        t.status(false, at(0));
        assert_eq!(t.transcript(true, at(10)), TurnVerdict::Over);
        assert_eq!(t.status(true, at(20)), TurnVerdict::Running);
        assert_eq!(t.transcript(true, at(30)), TurnVerdict::Running, "the status is newer: a turn runs");
        let until = at(40).plus(TRANSCRIPT_GRACE);
        assert_eq!(t.status(false, at(40)), TurnVerdict::Writing { until }, "the last turn's end is not this one's");
        // Busy again before the transcript showed the end: the grace starts anew.
        t.status(true, at(50));
        assert_eq!(t.deadline(), None);
        assert_eq!(t.status(false, at(5_000)), TurnVerdict::Writing { until: at(5_000).plus(TRANSCRIPT_GRACE) });
    }
}
