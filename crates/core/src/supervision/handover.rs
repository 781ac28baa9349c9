//! Handing supervised sessions to Claude Code's background service at a quit (issue 37 §2):
//! each session is stopped at its next idle moment (at once when it is idle or has no
//! process), then continued by the service (`claude --bg --resume <id>`, through Claude's
//! own verb), and Mimesis quits. This module decides, for one session, what comes next; the
//! wiring runs the stop and the verb. Pure: (phase, what is seen) → step.

use serde::Serialize;

use super::view::{Supervision, SupervisionState};
use crate::status::Status;

/// Where one session's hand-over stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its turn is not over yet: waiting for an idle moment.
    Waiting,
    /// Mimesis asked its supervisor to stop it.
    Stopping,
    /// Its process has ended: the service may continue it.
    Stopped,
    /// Continued by the service (`done`), or not to be (`skipped`: it ended by itself).
    Done,
}

/// What to do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet: wait for the next change of its row or its supervision.
    Wait,
    /// Ask the supervisor to stop it (the user's Stop: not offered for resume later).
    Stop,
    /// Run `claude --bg --resume <id>`.
    Dispatch,
    /// It ended by itself (its agent exited, a limit ended it) before it could be handed
    /// over: nothing to continue.
    Skip,
}

/// What a session's roster row says, for the hand-over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSays {
    pub status: Status,
    /// A tool call waits for its result (or for the user's answer: a dialog, a question).
    pub pending_call: bool,
}

/// The next step for a session in `phase`, whose supervision is `sup` (none once the
/// supervisor forgot it) and whose roster row says `row` (none when it has no row yet).
/// Its turn is over when its row is idle, or waits for input with no call pending (the
/// turn ended, maybe on a question in its text: the roster says so until the idle timeout).
pub fn step(phase: Phase, sup: Option<&Supervision>, row: Option<RowSays>) -> Step {
    let Some(sup) = sup else {
        // Forgotten by the supervisor (deleted): nothing of it runs any more.
        return if phase == Phase::Stopping { Step::Dispatch } else { Step::Skip };
    };
    match phase {
        Phase::Waiting => match sup.state {
            SupervisionState::Terminated => Step::Skip,
            // No process right now (suspended to save memory, waiting for a retry): at once.
            SupervisionState::Suspended | SupervisionState::Unhealthy => Step::Stop,
            SupervisionState::Running | SupervisionState::RestartPending | SupervisionState::Recovering => {
                let turn_over = row.is_some_and(|r| {
                    r.status == Status::Idle || (r.status == Status::WaitingForInput && !r.pending_call)
                });
                let idle = turn_over && !sup.awaiting_permission && sup.queued_inputs == 0;
                if idle && sup.state == SupervisionState::Running { Step::Stop } else { Step::Wait }
            }
        },
        // Stopped by Mimesis (or ended another way at the same moment: over all the same;
        // the service can still continue it from its transcript).
        Phase::Stopping if sup.state == SupervisionState::Terminated => Step::Dispatch,
        Phase::Stopping => Step::Wait,
        Phase::Stopped => Step::Dispatch,
        Phase::Done => Step::Wait,
    }
}

/// How a hand-over is going, for the window (`app:handover`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HandOverProgress {
    /// Sessions still working: each is handed over when its turn ends.
    pub waiting: u32,
    /// Continued by Claude Code's background service.
    pub handed: u32,
    /// Could not be handed over: stopped, and offered for resume at the next start.
    pub failed: u32,
    /// Ended by themselves meanwhile.
    pub ended: u32,
    /// Why the failed ones failed, one sentence each.
    pub errors: Vec<String>,
}

/// Does `claude --help` offer `--bg` with `--resume` (continuing a session in the
/// background under its own id: 2.1.330 and later)? The option's paragraph says so; an
/// older `--bg` (2.1.197: "Start the session as a background agent") does not.
pub fn help_offers_bg_resume(help: &str) -> bool {
    let mut lines = help.lines().skip_while(|l| !l.trim_start().starts_with("--bg"));
    let Some(first) = lines.next() else { return false };
    let mut para = first.to_owned();
    // The paragraph: the lines indented past the options' own column, until the next option.
    let indent = |l: &str| l.len() - l.trim_start().len();
    let column = indent(first);
    for l in lines {
        if l.trim().is_empty() || indent(l) <= column {
            break;
        }
        para.push(' ');
        para.push_str(l.trim());
    }
    para.contains("--resume")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::supervision::view::TerminatedReason;

    fn sup(state: SupervisionState) -> Supervision {
        let mut s = Supervision::starting("claude", "/p", Timestamp::from_millis(0));
        s.state = state;
        s
    }

    fn says(status: Status, pending_call: bool) -> Option<RowSays> {
        Some(RowSays { status, pending_call })
    }

    #[test]
    fn an_idle_session_is_stopped_at_once_and_a_working_one_waits_for_its_turn_to_end() {
        let running = sup(SupervisionState::Running);
        assert_eq!(step(Phase::Waiting, Some(&running), says(Status::Idle, false)), Step::Stop);
        assert_eq!(step(Phase::Waiting, Some(&running), says(Status::WaitingForInput, false)), Step::Stop, "turn over");
        assert_eq!(step(Phase::Waiting, Some(&running), says(Status::WaitingForInput, true)), Step::Wait, "a question");
        assert_eq!(step(Phase::Waiting, Some(&running), says(Status::Working, true)), Step::Wait);
        assert_eq!(step(Phase::Waiting, Some(&running), says(Status::WaitingForApproval, true)), Step::Wait);
        assert_eq!(step(Phase::Waiting, Some(&running), None), Step::Wait, "no row yet: not known to be idle");
        let mut asking = running.clone();
        asking.awaiting_permission = true;
        assert_eq!(step(Phase::Waiting, Some(&asking), says(Status::Idle, false)), Step::Wait);
        let mut queued = running.clone();
        queued.queued_inputs = 1;
        assert_eq!(
            step(Phase::Waiting, Some(&queued), says(Status::Idle, false)),
            Step::Wait,
            "a message still to type"
        );
        let restarting = sup(SupervisionState::Recovering);
        assert_eq!(step(Phase::Waiting, Some(&restarting), says(Status::Idle, false)), Step::Wait);
    }

    #[test]
    fn a_session_without_a_process_is_stopped_at_once() {
        for s in [SupervisionState::Suspended, SupervisionState::Unhealthy] {
            assert_eq!(step(Phase::Waiting, Some(&sup(s)), says(Status::Working, false)), Step::Stop);
        }
    }

    #[test]
    fn it_is_dispatched_once_its_process_ended_and_skipped_when_it_ended_by_itself() {
        let mut stopped = sup(SupervisionState::Terminated);
        stopped.terminated_reason = Some(TerminatedReason::User);
        assert_eq!(step(Phase::Stopping, Some(&sup(SupervisionState::Running)), None), Step::Wait);
        assert_eq!(step(Phase::Stopping, Some(&stopped), None), Step::Dispatch);
        assert_eq!(step(Phase::Stopping, None, None), Step::Dispatch);
        let mut exited = sup(SupervisionState::Terminated);
        exited.terminated_reason = Some(TerminatedReason::Exited);
        assert_eq!(step(Phase::Waiting, Some(&exited), says(Status::Idle, false)), Step::Skip);
        assert_eq!(step(Phase::Waiting, None, None), Step::Skip);
    }

    #[test]
    fn only_a_bg_that_resumes_is_offered() {
        let new = "  --bg, --background                    Start the session in the background and\n                                        return immediately. Prints the id. With\n                                        --resume <session-id>, continues that\n                                        session in the background\n  --bare                                Minimal mode";
        let old = "  --bg, --background                    Start the session as a background agent\n                                        and return immediately (manage with\n                                        `claude agents`)\n  --bare                                Minimal mode: skip hooks\n  -r, --resume [value]   Resume";
        assert!(help_offers_bg_resume(new));
        assert!(!help_offers_bg_resume(old), "--resume of another option does not count");
        assert!(!help_offers_bg_resume("Usage: claude [options]\n  -r, --resume"));
    }
}
