//! Sessions interrupted by the end of Mimesis (issue 37): a quit, a signal, a crash of the
//! app or a reboot ends the agents Mimesis supervises; the sessions that were still
//! running then, and did not end by themselves (the agent's own exit, the user's Stop, a
//! limit), are recorded so the next start offers to resume them. This module decides
//! which; the fleet database keeps them (`mimesis_fleetdb`), the supervisor writes them.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::view::{Supervision, SupervisionState};
use crate::clock::Timestamp;
use crate::ids::SessionId;

/// How Mimesis ended while the session ran.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InterruptedBy {
    /// The user quit Mimesis and chose to stop the sessions.
    Quit,
    /// Mimesis was signalled to stop (SIGTERM, SIGINT, SIGHUP: a logout, a shutdown).
    Signal,
    /// Mimesis died without stopping them (a crash, SIGKILL, a reboot): the next start
    /// found its records.
    Crash,
}

impl InterruptedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptedBy::Quit => "quit",
            InterruptedBy::Signal => "signal",
            InterruptedBy::Crash => "crash",
        }
    }

    pub fn parse(s: &str) -> Option<InterruptedBy> {
        [InterruptedBy::Quit, InterruptedBy::Signal, InterruptedBy::Crash].into_iter().find(|b| b.as_str() == s)
    }
}

/// A supervised session that Mimesis's end interrupted: offered for resume until it is
/// resumed or the user dismisses it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Interrupted {
    pub session_id: SessionId,
    pub cwd: String,
    pub at: Timestamp,
    pub by: InterruptedBy,
}

/// Did this session end by itself (or by the user, or a limit)? Then its end is its own and
/// Mimesis's quit interrupted nothing. Every other state (running, restarting, recovering,
/// suspended to save memory, unhealthy waiting for a retry) was still the user's session.
fn ended(s: &Supervision) -> bool {
    s.state == SupervisionState::Terminated
}

/// At a quit or a signal: the supervised sessions that had not ended.
pub fn at_quit(sessions: &[(SessionId, Supervision)], by: InterruptedBy, at: Timestamp) -> Vec<Interrupted> {
    sessions
        .iter()
        .filter(|(_, s)| !ended(s))
        .map(|(id, s)| Interrupted { session_id: id.clone(), cwd: s.cwd.clone(), at, by })
        .collect()
}

/// After a crash: the sessions whose agents a dead Mimesis had recorded as running (a
/// process that ended by itself is no longer in its records), given as (session, folder)
/// of each record, each once.
pub fn after_crash<'a>(records: impl IntoIterator<Item = (&'a SessionId, &'a str)>, at: Timestamp) -> Vec<Interrupted> {
    let mut seen = HashSet::new();
    records
        .into_iter()
        .filter(|(id, _)| seen.insert((*id).clone()))
        .map(|(id, cwd)| Interrupted { session_id: id.clone(), cwd: cwd.to_owned(), at, by: InterruptedBy::Crash })
        .collect()
}

/// What the window offers to resume: the recorded ones not supervised now (one resumed
/// since, by this run or another Mimesis, is running again), oldest first.
pub fn offered(recorded: &[Interrupted], supervised: &HashSet<SessionId>) -> Vec<Interrupted> {
    let mut out: Vec<Interrupted> = recorded.iter().filter(|i| !supervised.contains(&i.session_id)).cloned().collect();
    out.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.session_id.cmp(&b.session_id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervision::view::TerminatedReason;

    fn sup(state: SupervisionState, cwd: &str) -> Supervision {
        let mut s = Supervision::starting("claude", cwd, Timestamp::from_millis(0));
        s.state = state;
        s
    }

    fn id(s: &str) -> SessionId {
        SessionId::parse(s).unwrap()
    }

    #[test]
    fn a_quit_interrupts_every_session_that_had_not_ended() {
        let mut stopped = sup(SupervisionState::Terminated, "/c");
        stopped.terminated_reason = Some(TerminatedReason::User);
        let mut exited = sup(SupervisionState::Terminated, "/d");
        exited.terminated_reason = Some(TerminatedReason::Exited);
        let sessions = vec![
            (id("run"), sup(SupervisionState::Running, "/a")),
            (id("sus"), sup(SupervisionState::Suspended, "/b")),
            (id("stopped"), stopped),
            (id("exited"), exited),
            (id("sick"), sup(SupervisionState::Unhealthy, "/e")),
        ];
        let at = Timestamp::from_millis(5);
        let got = at_quit(&sessions, InterruptedBy::Quit, at);
        let ids: Vec<&str> = got.iter().map(|i| i.session_id.as_str()).collect();
        assert_eq!(ids, ["run", "sus", "sick"], "stopped by the user or exited by itself: not offered");
        assert_eq!(got[0], Interrupted { session_id: id("run"), cwd: "/a".into(), at, by: InterruptedBy::Quit });
    }

    #[test]
    fn a_crash_interrupts_each_recorded_session_once() {
        let recs = [(id("a"), "/a"), (id("b"), "/b"), (id("a"), "/a")];
        let got = after_crash(recs.iter().map(|(i, c)| (i, *c)), Timestamp::from_millis(9));
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|i| i.by == InterruptedBy::Crash));
        assert_eq!(got[1].cwd, "/b");
    }

    #[test]
    fn a_session_supervised_again_is_not_offered() {
        let mk = |s: &str, at: i64| Interrupted {
            session_id: id(s),
            cwd: "/p".into(),
            at: Timestamp::from_millis(at),
            by: InterruptedBy::Signal,
        };
        let recorded = [mk("late", 9), mk("early", 1), mk("back", 5)];
        let supervised: HashSet<SessionId> = [id("back")].into();
        let got: Vec<_> = offered(&recorded, &supervised).into_iter().map(|i| i.session_id).collect();
        assert_eq!(got, [id("early"), id("late")]);
    }

    #[test]
    fn the_cause_round_trips_through_its_word() {
        for b in [InterruptedBy::Quit, InterruptedBy::Signal, InterruptedBy::Crash] {
            assert_eq!(InterruptedBy::parse(b.as_str()), Some(b));
        }
        assert_eq!(InterruptedBy::parse("reboot"), None);
    }
}
