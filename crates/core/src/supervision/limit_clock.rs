//! Two small machines the supervision policies share: the duration limit's warning and end
//! ([`DurationLimit`], P8) and the start limit of automatic restarts with its back-off
//! ([`RestartLimit`], R2). A supervised session's policy (`policy.rs`) and a background
//! session's (`background.rs`) each hold one of each; what they do when one fires is theirs.

use std::collections::VecDeque;
use std::time::Duration;

use crate::clock::Mono;
use crate::supervision::limits::Limits;

/// The first wait between consecutive automatic restarts; it doubles with each restart in
/// the window, up to [`RESTART_BACKOFF_MAX`].
pub const RESTART_BACKOFF: Duration = Duration::from_secs(10);
pub const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(5 * 60);

/// What the duration limit says at an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DurationVerdict {
    Nothing,
    /// The warning's share of the limit is reached: this much is left (whole seconds,
    /// rounded up: 0.2 s left is 1 second, never 0).
    Warn(Duration),
    /// The limit is reached.
    Reached,
}

/// The duration limit of one session, counted from when it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationLimit {
    /// The last instant checked.
    pub checked_at: Mono,
    pub warned: bool,
}

impl DurationLimit {
    pub fn new(now: Mono) -> DurationLimit {
        DurationLimit { checked_at: now, warned: false }
    }

    /// The warning's and the limit's own instants, so the check interval never delays
    /// them (a 2 s limit with the default 60 s check still ends at 2 s): the next of them
    /// not checked yet.
    pub fn due(&self, started: Mono, limits: &Limits) -> Option<Mono> {
        let max = limits.max_duration;
        let limit_at = started.plus(max);
        let warn_ms = (max.as_millis() * u128::from(limits.duration_warn_percent)).div_ceil(100);
        let warn_at = started.plus(Duration::from_millis(u64::try_from(warn_ms).unwrap_or(u64::MAX)));
        let due = if self.warned { limit_at } else { warn_at.min(limit_at) };
        (due > self.checked_at).then_some(due)
    }

    /// Checks at `now`: the warning is given once (it is noted as given).
    pub fn check(&mut self, started: Mono, now: Mono, limits: &Limits) -> DurationVerdict {
        self.checked_at = now;
        let max = limits.max_duration;
        let elapsed = now.since(started);
        if elapsed >= max {
            return DurationVerdict::Reached;
        }
        if !self.warned && elapsed.as_millis() * 100 >= max.as_millis() * u128::from(limits.duration_warn_percent) {
            self.warned = true;
            return DurationVerdict::Warn(Duration::from_secs((max - elapsed).as_millis().div_ceil(1000) as u64));
        }
        DurationVerdict::Nothing
    }
}

/// Automatic restarts of one session within the limit's window, like systemd's start
/// limit: at most `restart_limit_burst` in `restart_limit_window`, with a back-off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartLimit {
    restarts: VecDeque<Mono>,
}

impl RestartLimit {
    /// Restarts within the window at `now`, after forgetting older ones.
    pub fn recent(&mut self, now: Mono, limits: &Limits) -> usize {
        let window = limits.restart_limit_window;
        while self.restarts.front().is_some_and(|t| now.since(*t) >= window) {
            self.restarts.pop_front();
        }
        self.restarts.len()
    }

    /// Takes one restart from the limit; false when it is reached.
    pub fn take(&mut self, now: Mono, limits: &Limits) -> bool {
        if self.recent(now, limits) >= limits.restart_limit_burst as usize {
            return false;
        }
        self.restarts.push_back(now);
        true
    }

    /// Is the limit reached (no restart may be taken now)?
    pub fn exhausted(&mut self, now: Mono, limits: &Limits) -> bool {
        self.recent(now, limits) >= limits.restart_limit_burst as usize
    }

    /// When the next restart may begin (the back-off), if later than `now`.
    pub fn backoff_until(&mut self, now: Mono, limits: &Limits) -> Option<Mono> {
        let n = self.recent(now, limits) as u32;
        let last = *self.restarts.back()?;
        let wait = RESTART_BACKOFF.saturating_mul(2u32.saturating_pow(n.saturating_sub(1))).min(RESTART_BACKOFF_MAX);
        Some(last.plus(wait)).filter(|t| *t > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Mono {
        Mono::from_millis(s * 1000)
    }

    #[test]
    fn the_warning_once_then_the_end_at_their_own_instants() {
        let limits = Limits { max_duration: Duration::from_secs(100), duration_warn_percent: 90, ..Limits::default() };
        let mut d = DurationLimit::new(at(0));
        assert_eq!(d.due(at(0), &limits), Some(at(90)));
        assert_eq!(d.check(at(0), at(50), &limits), DurationVerdict::Nothing);
        assert_eq!(d.check(at(0), Mono::from_millis(90_200), &limits), DurationVerdict::Warn(Duration::from_secs(10)));
        assert_eq!(d.due(at(0), &limits), Some(at(100)));
        assert_eq!(d.check(at(0), at(95), &limits), DurationVerdict::Nothing, "warned once");
        assert_eq!(d.check(at(0), at(100), &limits), DurationVerdict::Reached);
        assert_eq!(d.due(at(0), &limits), None);
    }

    #[test]
    fn restarts_are_limited_per_window_with_a_doubling_back_off() {
        let limits =
            Limits { restart_limit_burst: 3, restart_limit_window: Duration::from_secs(1000), ..Limits::default() };
        let mut r = RestartLimit::default();
        assert_eq!(r.backoff_until(at(0), &limits), None);
        assert!(r.take(at(0), &limits));
        assert_eq!(r.backoff_until(at(1), &limits), Some(at(10)));
        assert!(r.take(at(10), &limits));
        assert_eq!(r.backoff_until(at(11), &limits), Some(at(30)), "doubled");
        assert!(r.take(at(30), &limits));
        assert!(r.exhausted(at(31), &limits));
        assert!(!r.take(at(31), &limits));
        assert!(!r.exhausted(at(1000), &limits), "the first one left the window");
        assert_eq!(r.recent(at(1000), &limits), 2);
    }
}
