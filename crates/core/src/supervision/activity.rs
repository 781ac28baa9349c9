//! What a supervised agent is doing, as its most exact signal tells (policy.rs, readiness.rs).

/// What the agent is doing: as its live registry entry tells, else its screen, else its
/// transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Activity {
    #[default]
    Unknown,
    Working,
    /// At its input prompt.
    Idle,
    /// A permission dialog shows.
    Permission,
}

impl Activity {
    pub(crate) fn busy(self) -> bool {
        matches!(self, Activity::Working | Activity::Permission)
    }
}
