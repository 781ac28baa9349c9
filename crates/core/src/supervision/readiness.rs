//! When a (re)started agent is up, for an agent that draws a screen unlike Claude Code's and
//! keeps no live registry (issue 33). Such an agent shows nothing the supervisor can read
//! until it writes to its transcript, and a resumed one writes nothing until it is typed
//! into: waiting for a record would wait for the very input it holds back (P2). So, once
//! the session has shown that its screen says nothing (a turn went by, told by the
//! transcript alone) and that it keeps no registry, a starting process is up once it has
//! drawn something and gone quiet: it sits at its prompt, as far as anyone can tell.
//!
//! Never for Claude Code itself: its screen (or its registry) speaks from its first frame.

use std::time::Duration;

use super::policy::Activity;
use crate::clock::Mono;

/// How long the output of a starting agent must stay quiet before it is taken to be up.
pub const QUIET_READY: Duration = Duration::from_secs(1);

/// What the session's processes have shown of themselves so far.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    /// A turn went by that only the transcript told of: the screen says nothing.
    screen_mute: bool,
    /// Some process of the session showed a definite activity on screen.
    screen_spoke: bool,
    /// Some process of the session kept a live registry entry.
    registry_spoke: bool,
}

impl Readiness {
    /// The screen showed a definite activity.
    pub fn screen(&mut self, a: Activity) {
        if a != Activity::Unknown {
            self.screen_spoke = true;
            self.screen_mute = false;
        }
    }

    /// The process's own registry entry was seen.
    pub fn registry(&mut self) {
        self.registry_spoke = true;
    }

    /// A turn began; `screen` and `registry` are what those say of the current process.
    pub fn turn(&mut self, screen: Activity, registry: Activity) {
        if screen == Activity::Unknown && registry == Activity::Unknown && !self.screen_spoke {
            self.screen_mute = true;
        }
    }

    /// When a process started at `since`, whose output last came at `last_output`, is
    /// taken to be up; None when its screen or registry will tell.
    pub fn quiet_deadline(&self, since: Mono, last_output: Mono) -> Option<Mono> {
        let applies = self.screen_mute && !self.registry_spoke && last_output > since;
        applies.then(|| last_output.plus(QUIET_READY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Mono {
        Mono::from_millis(ms)
    }

    #[test]
    fn quiet_output_means_up_only_for_a_session_whose_screen_and_registry_say_nothing() {
        let mut r = Readiness::default();
        assert_eq!(r.quiet_deadline(at(0), at(500)), None, "nothing known yet: its screen may speak");
        r.turn(Activity::Unknown, Activity::Unknown);
        assert_eq!(r.quiet_deadline(at(0), at(0)), None, "it has drawn nothing yet");
        assert_eq!(r.quiet_deadline(at(0), at(500)), Some(at(1500)));
        // Its screen spoke after all: it will tell.
        r.screen(Activity::Idle);
        assert_eq!(r.quiet_deadline(at(0), at(500)), None);
        r.turn(Activity::Unknown, Activity::Unknown);
        assert_eq!(r.quiet_deadline(at(0), at(500)), None, "a screen that spoke once is read");
        let mut reg = Readiness::default();
        reg.turn(Activity::Unknown, Activity::Unknown);
        reg.registry();
        assert_eq!(reg.quiet_deadline(at(0), at(500)), None, "its registry entry will tell");
    }
}
