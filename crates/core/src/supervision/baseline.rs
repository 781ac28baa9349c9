//! P9's memory restarts against what the agent needs at rest (issue 33). A restart frees
//! what a session piled up; it cannot go below what the agent takes right after it starts.
//! A limit under that would restart it on every check until the start limit (2.1.332 takes
//! about 210 MB at rest). So: one restart, then, if the agent is over the limit again at
//! rest (before any turn), hold. The hold ends when the limits change (the policy says so)
//! or when the memory grows past that baseline by a margin, which a restart can free again.
//!
//! Only a turn ends "at rest": keys, mouse reports and the terminal's answers to the
//! agent's queries are input too, and a real terminal sends them all the time.

/// The share of the baseline the memory must grow by before a restart is worth it again.
const MARGIN_PERCENT: u64 = 25;
/// …and at least this much.
const MIN_MARGIN: u64 = 32 * 1024 * 1024;

/// How far the memory may grow over `baseline` bytes before a restart can help again.
pub fn margin(baseline: u64) -> u64 {
    (baseline / 100).saturating_mul(MARGIN_PERCENT).max(MIN_MARGIN)
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum State {
    /// Nothing known: over the limit means restart.
    #[default]
    Unknown,
    /// Restarted for memory, and no turn since.
    AtRest,
    /// Over the limit at rest with this many bytes: restarts are held.
    Held { baseline: u64 },
}

/// What to do about a measurement over the limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Restart (with the usual grace, back-off and start limit).
    Restart,
    /// Over the limit at rest: hold, and say so once (`memory_baseline`).
    Hold { rss: u64 },
    /// Already held, and not grown past the margin: nothing to do.
    Held,
    /// Held, but grown past the baseline by the margin: the hold ends, restart.
    Grew,
}

/// The memory-baseline rule of one session.
#[derive(Clone, Debug, Default)]
pub struct MemoryBaseline {
    state: State,
}

impl MemoryBaseline {
    /// A restart for memory begins: the next process starts at rest.
    pub fn restarting(&mut self) {
        self.state = State::AtRest;
    }

    /// A turn began: the agent is no longer at rest (a hold stays: it holds until the
    /// memory grows past it).
    pub fn turn_started(&mut self) {
        if self.state == State::AtRest {
            self.state = State::Unknown;
        }
    }

    /// Forgets everything (the limits changed, or the user restarted it).
    pub fn reset(&mut self) {
        self.state = State::Unknown;
    }

    /// The bytes at rest that restarts are held at, if they are.
    pub fn held_at(&self) -> Option<u64> {
        match self.state {
            State::Held { baseline } => Some(baseline),
            _ => None,
        }
    }

    /// The agent measured `rss` bytes, over the limit.
    pub fn over_limit(&mut self, rss: u64) -> Verdict {
        match self.state {
            State::Unknown => Verdict::Restart,
            State::AtRest => {
                self.state = State::Held { baseline: rss };
                Verdict::Hold { rss }
            }
            State::Held { baseline } if rss > baseline.saturating_add(margin(baseline)) => {
                self.state = State::Unknown;
                Verdict::Grew
            }
            State::Held { .. } => Verdict::Held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    #[test]
    fn one_restart_then_hold_until_the_memory_grows_past_the_margin() {
        let mut b = MemoryBaseline::default();
        assert_eq!(b.over_limit(300 * MB), Verdict::Restart, "nothing known: restart");
        b.restarting();
        assert_eq!(b.over_limit(213 * MB), Verdict::Hold { rss: 213 * MB }, "over the limit at rest");
        assert_eq!(b.held_at(), Some(213 * MB));
        b.turn_started();
        assert_eq!(b.over_limit(240 * MB), Verdict::Held, "a turn does not end the hold");
        assert_eq!(b.over_limit(213 * MB + margin(213 * MB)), Verdict::Held, "not past the margin");
        assert_eq!(b.over_limit(213 * MB + margin(213 * MB) + 1), Verdict::Grew);
        assert_eq!(b.held_at(), None);
        assert_eq!(b.over_limit(300 * MB), Verdict::Restart);
    }

    #[test]
    fn a_turn_after_the_restart_means_it_was_not_at_rest() {
        let mut b = MemoryBaseline::default();
        b.restarting();
        b.turn_started();
        assert_eq!(b.over_limit(300 * MB), Verdict::Restart);
        b.restarting();
        b.reset();
        assert_eq!(b.over_limit(300 * MB), Verdict::Restart, "reset forgets the restart");
    }

    #[test]
    fn the_margin_is_a_quarter_and_at_least_32_mb() {
        assert_eq!(margin(1000 * MB), 250 * MB);
        assert_eq!(margin(60 * MB), 32 * MB);
    }
}
