//! What the session is doing, from three sources, most exact first: the live registry
//! entry of the supervised process, its screen, and the roster's status (transcript, hooks,
//! time). A turn is open from the first busy sign until it ends.

use super::Activity;
use crate::status::{RegistryState, Status};

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Observed {
    /// What the live registry entry of the current process says (the most exact).
    pub registry: Activity,
    pub screen: Activity,
    pub transcript: Activity,
    /// A turn started (working or a dialog) and has not finished.
    pub turn_open: bool,
}

impl Observed {
    pub(super) fn activity(&self) -> Activity {
        [self.registry, self.screen, self.transcript].into_iter().find(|a| *a != Activity::Unknown).unwrap_or_default()
    }

    /// A new process: nothing it says is known yet (the transcript is the session's).
    pub(super) fn new_process(&mut self) {
        self.registry = Activity::Unknown;
        self.screen = Activity::Unknown;
        self.turn_open = false;
    }

    /// The process is gone.
    pub(super) fn forget(&mut self) {
        self.registry = Activity::Unknown;
        self.screen = Activity::Unknown;
        self.transcript = Activity::Unknown;
    }
}

/// What a registry entry's state means for supervision.
pub(super) fn from_registry(state: RegistryState) -> Activity {
    match state {
        RegistryState::Busy => Activity::Working,
        RegistryState::Idle => Activity::Idle,
        // A dialog or a question: the user is needed; nothing may be restarted under it.
        RegistryState::WaitingForApproval | RegistryState::WaitingForInput | RegistryState::WaitingForDialog => {
            Activity::Permission
        }
        RegistryState::Unknown => Activity::Unknown,
    }
}

/// What the roster's status means for supervision.
pub(super) fn from_status(status: Status) -> Activity {
    match status {
        Status::Working => Activity::Working,
        Status::WaitingForApproval => Activity::Permission,
        Status::WaitingForInput | Status::Idle => Activity::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_outranks_the_screen_which_outranks_the_transcript() {
        let mut o = Observed { transcript: Activity::Working, ..Observed::default() };
        assert_eq!(o.activity(), Activity::Working);
        o.screen = Activity::Idle;
        assert_eq!(o.activity(), Activity::Idle);
        o.registry = from_registry(RegistryState::WaitingForDialog);
        assert_eq!(o.activity(), Activity::Permission);
        o.new_process();
        assert_eq!(o.activity(), Activity::Working, "the transcript is the session's, not the process's");
        o.forget();
        assert_eq!(o.activity(), Activity::Unknown, "nothing known");
        assert_eq!(from_status(Status::WaitingForInput), Activity::Idle);
    }
}
