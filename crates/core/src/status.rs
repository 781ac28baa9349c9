//! The session state machine (SPEC W5, seed 001): a pure function of what is known about a
//! session and `now`. It never reads a file or a clock; the store feeds it and schedules a
//! re-evaluation at the instant it returns as `next_check`.
//!
//! Precedence, most exact first: the live registry (`sessions/<pid>.json`), a fresh
//! status file (W6), hooks, then inference from the transcript tail. The timeouts (approval 5 s, stale 60 s, idle 10 min)
//! only ever apply to inferred states.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

/// What the roster shows for a session.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Idle,
    Working,
    WaitingForApproval,
    WaitingForInput,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Working => "working",
            Status::WaitingForApproval => "waiting_for_approval",
            Status::WaitingForInput => "waiting_for_input",
        }
    }

    /// Does this status ask something of the user?
    pub fn needs_user(self) -> bool {
        matches!(self, Status::WaitingForApproval | Status::WaitingForInput)
    }
}

/// The timeouts of seed 001, configurable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// A tool_use pending this long with no result and no better signal waits for approval.
    pub approval: Duration,
    /// A working session with no activity this long is taken to be waiting for input.
    pub stale: Duration,
    /// Any inferred state with no activity this long is idle.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            approval: Duration::from_secs(5),
            stale: Duration::from_secs(60),
            idle: Duration::from_secs(10 * 60),
        }
    }
}

/// The last significant thing the transcript says (the tail heuristic of
/// docs/claude-code-formats.md §3). Side-channel records, attachments, progress and
/// file-history snapshots never become the tail.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Tail {
    /// Nothing significant yet (a fresh file, metadata only).
    #[default]
    Empty,
    /// A real user prompt, a queued prompt, or a slash command that starts a turn.
    Prompt,
    /// Every tool_use so far has its tool_result: the model is working on.
    ToolResults,
    /// The assistant is mid-message (thinking, or text with no stop reason yet).
    Thinking,
    /// One or more tool_use blocks have no tool_result yet.
    ToolPending,
    /// Assistant text. `end_turn` when its stop_reason says the turn ended.
    AssistantText { end_turn: bool, asks_question: bool },
    /// `system/turn_duration` or `stop_hook_summary` after the assistant's last words.
    TurnDone { asks_question: bool },
    /// A rejected tool use or `[Request interrupted by user…]`: the turn was aborted.
    Aborted,
    /// A compaction started (`compact_boundary`) but its summary is not written yet.
    Compacting,
    /// A compaction finished (its summary is the last record).
    Compacted,
    /// A local command (`/model`, `!ls`, …) printed its output; the prompt is back.
    LocalOutput,
    /// The API failed. `retrying` for `system/api_error` (the CLI retries on its own),
    /// not for a final `isApiErrorMessage` assistant record.
    ApiError { retrying: bool },
}

/// Whether a pending tool call shows a permission dialog.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Read-only tool, allowed by a rule or by the permission mode, or denied outright
    /// (a denial is answered at once): it runs without asking.
    NotNeeded,
    /// The user may be asked: a rule says so, or nothing says otherwise. The
    /// APPROVAL_TIMEOUT decides (a dialog shows within moments of the tool_use record).
    Needed,
    /// The tool asks the user a question (AskUserQuestion): waiting for input.
    AsksUser,
}

/// The pending tool call the state machine looks at (the latest one).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PendingCall {
    pub since: Timestamp,
    pub approval: Approval,
    /// A `progress` record for it arrived: it is running, not waiting.
    pub running: bool,
}

/// What the live registry file of the session's process says.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RegistryState {
    /// The CLI is running a turn.
    Busy,
    /// The CLI sits at its input prompt.
    Idle,
    /// `status: waiting` with `waitingFor` naming a permission prompt.
    WaitingForApproval,
    /// `status: waiting` for input (`input needed`: a question).
    WaitingForInput,
    /// `status: waiting` with a dialog open (`dialog open`, or a `waitingFor` this version
    /// does not know): the user is needed; a pending tool call makes it an approval.
    WaitingForDialog,
    /// A value this version of Mimesis does not know: ignored.
    Unknown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RegistrySignal {
    pub state: RegistryState,
    /// When the CLI last changed that status.
    pub updated_at: Option<Timestamp>,
}

/// What a background session's job says (2.1.332's `jobs/<id>/state.json`, `tempo`
/// and `needs`), while the service runs a worker for it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum JobTempo {
    /// A turn runs.
    Active,
    /// At its prompt.
    Idle,
    /// A dialog waits for the user.
    Blocked(JobNeed),
    /// A value this version of Mimesis does not know: ignored.
    Unknown,
}

/// What a blocked job waits for (its `needs`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum JobNeed {
    /// "approve Bash: …", "approve plan".
    Approval,
    /// "answer: …" (AskUserQuestion).
    Input,
    /// Something else: the user is needed; a pending tool call makes it an approval.
    Unknown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct JobSignal {
    pub tempo: JobTempo,
    /// When the service last wrote the job (`updatedAt`).
    pub updated_at: Option<Timestamp>,
}

/// A hook event, the most exact signal after the registry (wired up by the hooks issue).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HookState {
    Working,
    WaitingForApproval,
    TurnDone,
    Ended,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HookSignal {
    pub state: HookState,
    pub at: Timestamp,
}

/// Everything the state machine needs.
#[derive(Clone, Debug, Default)]
pub struct StatusInput {
    pub tail: Tail,
    pub pending: Option<PendingCall>,
    pub last_activity: Option<Timestamp>,
    /// Present only while the session's process is alive.
    pub registry: Option<RegistrySignal>,
    /// A background session's job, present only while the service runs a worker for it.
    pub job: Option<JobSignal>,
    pub hook: Option<HookSignal>,
    /// What a fresh status file says (SPEC W6); the store passes it only while trusted.
    pub reported: Option<Status>,
    /// The process that ran the session is known to have exited: Mimesis ended it, or a
    /// registry that speaks for it (readable, of this pid namespace, and no transcript
    /// activity since the entry went) has no entry. A missing entry alone is no end.
    pub ended: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    pub status: Status,
    /// When the answer may change with nothing else happening (a timeout falls due).
    pub next_check: Option<Timestamp>,
}

/// What a background session's job says, if it settles the status: its dialog always; its
/// tempo (working, at its prompt) where the registry says nothing (`registry_silent`) or
/// said it earlier.
fn from_job(input: &StatusInput, registry_silent: bool, now: Timestamp, t: &Timeouts) -> Option<Derived> {
    let job = input.job?;
    match job.tempo {
        JobTempo::Blocked(need) => Some(exact(match (need, input.pending) {
            (_, Some(PendingCall { approval: Approval::AsksUser, .. })) | (JobNeed::Input, _) => {
                Status::WaitingForInput
            }
            (JobNeed::Approval, _) | (JobNeed::Unknown, Some(_)) => Status::WaitingForApproval,
            (JobNeed::Unknown, None) => Status::WaitingForInput,
        })),
        // A registry that said something (busy, idle) said it already.
        JobTempo::Active if registry_silent => Some(exact(Status::Working)),
        JobTempo::Idle if registry_silent => {
            let newer = matches!((input.last_activity, job.updated_at), (Some(a), Some(j)) if a > j);
            if newer {
                return None;
            }
            Some(match input.last_activity.or(job.updated_at) {
                Some(a) if a.plus(t.idle) > now => {
                    Derived { status: Status::WaitingForInput, next_check: Some(a.plus(t.idle)) }
                }
                _ => exact(Status::Idle),
            })
        }
        JobTempo::Active | JobTempo::Idle | JobTempo::Unknown => None,
    }
}

/// Derives the status at `now`.
pub fn derive(input: &StatusInput, now: Timestamp, t: &Timeouts) -> Derived {
    let mut next: Option<Timestamp> = None;
    let mut due = |at: Timestamp| -> bool {
        if at <= now {
            true
        } else {
            next = Some(next.map_or(at, |n| n.min(at)));
            false
        }
    };

    // 0. A background session's job that says its turn ended or a dialog opened after the
    //    registry last said busy: the newer signal wins (the service's classifier says so a
    //    few hundred ms before the registry does). Not the other way: a job rewritten as
    //    working by a respawn says nothing the registry at its prompt does not know better.
    let job_newer = matches!((input.job, input.registry),
        (Some(j), Some(r)) if matches!(j.tempo, JobTempo::Idle | JobTempo::Blocked(_))
            && r.state == RegistryState::Busy
            && matches!((j.updated_at, r.updated_at), (Some(j), Some(r)) if j > r));
    if job_newer && let Some(d) = from_job(input, true, now, t) {
        return d;
    }

    // 1. The live registry: exact while the process runs.
    if let Some(reg) = input.registry {
        match reg.state {
            // 2.1.197 says "permission prompt" for AskUserQuestion's dialog too: a question
            // is input, whatever the dialog is called.
            RegistryState::WaitingForApproval => {
                return exact(match input.pending {
                    Some(PendingCall { approval: Approval::AsksUser, .. }) => Status::WaitingForInput,
                    _ => Status::WaitingForApproval,
                });
            }
            RegistryState::WaitingForInput => return exact(Status::WaitingForInput),
            RegistryState::WaitingForDialog => {
                // 2.1.330's auto mode through a gateway asks before each tool call with a
                // dialog of its own (`dialog open`): an approval, unless the call asks the
                // user a question.
                return exact(match input.pending {
                    Some(PendingCall { approval: Approval::AsksUser, .. }) | None => Status::WaitingForInput,
                    Some(_) => Status::WaitingForApproval,
                });
            }
            RegistryState::Busy => return exact(Status::Working),
            RegistryState::Idle if input.last_activity.is_none() && matches!(input.tail, Tail::Empty) => {
                // At the prompt before its first turn: nothing was asked of the user (a
                // session just started, which they are about to type into) — unless it is
                // a background session whose job works: its prompt is on its way.
                let dispatched = input.job.is_some_and(|j| j.tempo == JobTempo::Active);
                return exact(if dispatched { Status::Working } else { Status::Idle });
            }
            RegistryState::Idle => {
                // At the prompt. The transcript may be ahead of the registry (a prompt was
                // just submitted); only newer transcript activity overrides it.
                let newer = match (input.last_activity, reg.updated_at) {
                    (Some(a), Some(r)) => a > r,
                    _ => false,
                };
                if !newer {
                    let status = match input.last_activity.or(reg.updated_at) {
                        Some(a) if due(a.plus(t.idle)) => Status::Idle,
                        _ => Status::WaitingForInput,
                    };
                    return Derived { status, next_check: next };
                }
            }
            RegistryState::Unknown => {}
        }
    }

    // 1b. A background session's job (while its worker runs): as exact as the registry,
    //     which it follows within moments, and there before the registry entry is.
    let registry_silent = input.registry.is_none_or(|r| r.state == RegistryState::Unknown);
    if let Some(d) = from_job(input, registry_silent, now, t) {
        return d;
    }

    // 2. A status file written for the session, while it is trusted.
    if let Some(status) = input.reported {
        return exact(status);
    }

    // 3. Hooks, when they are newer than anything the transcript says. The transcript
    //    lags the hooks by moments; once it has newer records, inference takes over.
    if let Some(hook) = input.hook {
        let newer = input.last_activity.is_none_or(|a| hook.at >= a);
        if newer {
            match hook.state {
                HookState::WaitingForApproval => return exact(Status::WaitingForApproval),
                HookState::Ended => return exact(Status::Idle),
                HookState::TurnDone => {
                    let status = if due(hook.at.plus(t.idle)) { Status::Idle } else { Status::WaitingForInput };
                    return Derived { status, next_check: next };
                }
                HookState::Working if !input.ended => {
                    let status = if due(hook.at.plus(t.idle)) {
                        Status::Idle
                    } else if due(hook.at.plus(t.stale)) {
                        Status::WaitingForInput
                    } else {
                        Status::Working
                    };
                    return Derived { status, next_check: next };
                }
                HookState::Working => {}
            }
        }
    }

    if input.ended {
        // No process, no work and no dialog: whatever the transcript's last words were.
        return exact(Status::Idle);
    }

    // 4. Inference from the transcript.
    let Some(last) = input.last_activity else {
        return exact(Status::Idle);
    };
    if due(last.plus(t.idle)) {
        return Derived { status: Status::Idle, next_check: None };
    }
    let hook_turn_done = matches!(input.hook, Some(h) if h.state == HookState::TurnDone && h.at >= last);
    let hook_working = matches!(input.hook, Some(h) if h.state == HookState::Working && h.at >= last);

    let status = match &input.tail {
        Tail::Empty => Status::Idle,
        Tail::Aborted => Status::Idle,
        Tail::TurnDone { .. } | Tail::Compacted | Tail::LocalOutput | Tail::ApiError { retrying: false } => {
            Status::WaitingForInput
        }
        Tail::AssistantText { end_turn: true, .. } | Tail::AssistantText { asks_question: true, .. } => {
            Status::WaitingForInput
        }
        Tail::ToolPending => match input.pending {
            Some(p) if p.running => Status::Working,
            Some(PendingCall { approval: Approval::NotNeeded, .. }) => Status::Working,
            Some(PendingCall { approval: Approval::AsksUser, .. }) => Status::WaitingForInput,
            Some(_) if hook_working => Status::Working,
            Some(p) => {
                if due(p.since.plus(t.approval)) {
                    Status::WaitingForApproval
                } else {
                    Status::Working
                }
            }
            // Tail says pending but the call is unknown: treat as working, then stale.
            None => stale_or_working(last, t, &mut due),
        },
        Tail::Prompt | Tail::ToolResults | Tail::Thinking | Tail::Compacting | Tail::ApiError { retrying: true } => {
            if hook_turn_done {
                Status::WaitingForInput
            } else {
                stale_or_working(last, t, &mut due)
            }
        }
        Tail::AssistantText { end_turn: false, .. } => {
            if hook_turn_done {
                Status::WaitingForInput
            } else {
                stale_or_working(last, t, &mut due)
            }
        }
    };
    Derived { status, next_check: next }
}

/// Does the transcript show the session's words so far written, nothing of its turn still
/// to come but what the user is asked? Its turn over (the assistant's last message ends the
/// turn, or a record closes it) with no tool call pending; or a tool call pending, its call
/// written (a dialog may wait on it). Not a reply still to be written: the prompt or the
/// tool results the model was sent last, a message without its stop reason.
pub fn turn_written(tail: &Tail, pending: bool) -> bool {
    pending
        || matches!(
            tail,
            Tail::AssistantText { end_turn: true, .. }
                | Tail::TurnDone { .. }
                | Tail::Aborted
                | Tail::ApiError { retrying: false }
                | Tail::LocalOutput
                | Tail::Compacted
        )
}

fn exact(status: Status) -> Derived {
    Derived { status, next_check: None }
}

fn stale_or_working(last: Timestamp, t: &Timeouts, due: &mut impl FnMut(Timestamp) -> bool) -> Status {
    if due(last.plus(t.stale)) { Status::WaitingForInput } else { Status::Working }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

    fn at(secs: u64) -> Timestamp {
        T0.plus(Duration::from_secs(secs))
    }

    fn input(tail: Tail) -> StatusInput {
        StatusInput { tail, last_activity: Some(T0), ..Default::default() }
    }

    fn status(i: &StatusInput, now: Timestamp) -> Status {
        derive(i, now, &Timeouts::default()).status
    }

    fn pending(approval: Approval, running: bool) -> StatusInput {
        StatusInput { pending: Some(PendingCall { since: T0, approval, running }), ..input(Tail::ToolPending) }
    }

    #[test]
    fn prompt_is_working_until_stale_then_waiting_then_idle() {
        let i = input(Tail::Prompt);
        assert_eq!(status(&i, at(0)), Status::Working);
        assert_eq!(status(&i, at(59)), Status::Working);
        assert_eq!(derive(&i, at(59), &Timeouts::default()).next_check, Some(at(60)));
        assert_eq!(status(&i, at(60)), Status::WaitingForInput);
        assert_eq!(derive(&i, at(60), &Timeouts::default()).next_check, Some(at(600)));
        assert_eq!(status(&i, at(599)), Status::WaitingForInput);
        assert_eq!(status(&i, at(600)), Status::Idle);
        assert_eq!(derive(&i, at(600), &Timeouts::default()).next_check, None);
    }

    #[test]
    fn tool_results_and_thinking_are_working() {
        for tail in [Tail::ToolResults, Tail::Thinking, Tail::Compacting, Tail::ApiError { retrying: true }] {
            assert_eq!(status(&input(tail.clone()), at(1)), Status::Working, "{tail:?}");
        }
    }

    #[test]
    fn end_of_turn_waits_for_input() {
        for tail in [
            Tail::TurnDone { asks_question: false },
            Tail::AssistantText { end_turn: true, asks_question: false },
            Tail::Compacted,
            Tail::LocalOutput,
            Tail::ApiError { retrying: false },
        ] {
            assert_eq!(status(&input(tail.clone()), at(1)), Status::WaitingForInput, "{tail:?}");
        }
    }

    #[test]
    fn text_without_stop_reason_is_working_until_stale() {
        let i = input(Tail::AssistantText { end_turn: false, asks_question: false });
        assert_eq!(status(&i, at(30)), Status::Working);
        assert_eq!(status(&i, at(61)), Status::WaitingForInput);
    }

    #[test]
    fn a_final_answer_asking_a_question_waits_for_input_at_once() {
        let i = input(Tail::AssistantText { end_turn: false, asks_question: true });
        assert_eq!(status(&i, at(0)), Status::WaitingForInput);
    }

    #[test]
    fn aborted_and_empty_are_idle() {
        assert_eq!(status(&input(Tail::Aborted), at(1)), Status::Idle);
        assert_eq!(status(&input(Tail::Empty), at(1)), Status::Idle);
        assert_eq!(status(&StatusInput::default(), at(1)), Status::Idle);
    }

    #[test]
    fn pending_tool_needing_approval_waits_after_five_seconds() {
        {
            let i = pending(Approval::Needed, false);
            assert_eq!(status(&i, at(4)), Status::Working);
            assert_eq!(derive(&i, at(4), &Timeouts::default()).next_check, Some(at(5)));
            assert_eq!(status(&i, at(5)), Status::WaitingForApproval);
            // A dialog nobody answers for ten minutes: idle, like any other state.
            assert_eq!(status(&i, at(600)), Status::Idle);
        }
    }

    #[test]
    fn long_running_allowed_tool_is_never_waiting_for_approval() {
        let i = pending(Approval::NotNeeded, false);
        assert_eq!(status(&i, at(5)), Status::Working);
        assert_eq!(status(&i, at(300)), Status::Working, "no stale timeout for a running tool");
        let running = pending(Approval::Needed, true);
        assert_eq!(status(&running, at(300)), Status::Working, "progress means it runs");
    }

    #[test]
    fn ask_user_question_waits_for_input() {
        assert_eq!(status(&pending(Approval::AsksUser, false), at(0)), Status::WaitingForInput);
    }

    #[test]
    fn registry_waiting_for_permission_is_immediate() {
        let mut i = pending(Approval::Needed, false);
        i.registry = Some(RegistrySignal { state: RegistryState::WaitingForApproval, updated_at: Some(T0) });
        assert_eq!(status(&i, at(0)), Status::WaitingForApproval);
        // Exact: no timeout turns it into anything else while the process shows the dialog.
        assert_eq!(status(&i, at(3600)), Status::WaitingForApproval);
        assert_eq!(derive(&i, at(0), &Timeouts::default()).next_check, None);
    }

    #[test]
    fn registry_busy_beats_stale_inference() {
        let mut i = input(Tail::Prompt);
        i.registry = Some(RegistrySignal { state: RegistryState::Busy, updated_at: Some(T0) });
        assert_eq!(status(&i, at(3000)), Status::Working);
    }

    #[test]
    fn registry_idle_means_at_the_prompt_unless_the_transcript_is_newer() {
        let mut i = input(Tail::AssistantText { end_turn: false, asks_question: false });
        i.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(T0) });
        assert_eq!(status(&i, at(1)), Status::WaitingForInput);
        assert_eq!(status(&i, at(600)), Status::Idle);
        // A prompt written after the registry last changed: the registry lags, trust the file.
        let mut j = input(Tail::Prompt);
        j.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(at(0).plus(Duration::ZERO)) });
        j.last_activity = Some(at(2));
        assert_eq!(status(&j, at(3)), Status::Working);
    }

    #[test]
    fn a_session_at_its_prompt_before_its_first_turn_is_idle_not_waiting_for_the_user() {
        let mut i = StatusInput { tail: Tail::Empty, last_activity: None, ..Default::default() };
        i.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(T0) });
        assert_eq!(status(&i, at(1)), Status::Idle);
    }

    #[test]
    fn a_dialog_over_a_pending_tool_call_is_an_approval_else_the_user_is_needed() {
        let dialog = Some(RegistrySignal { state: RegistryState::WaitingForDialog, updated_at: Some(T0) });
        let mut i = pending(Approval::NotNeeded, false);
        i.registry = dialog;
        assert_eq!(status(&i, at(0)), Status::WaitingForApproval, "auto mode's own dialog before the call");
        assert_eq!(status(&i, at(40)), Status::WaitingForApproval, "for as long as it shows");
        let mut q = pending(Approval::AsksUser, false);
        q.registry = dialog;
        assert_eq!(status(&q, at(0)), Status::WaitingForInput);
        let mut none = input(Tail::TurnDone { asks_question: false });
        none.registry = dialog;
        assert_eq!(status(&none, at(0)), Status::WaitingForInput, "never working or idle");
        let mut old = pending(Approval::AsksUser, false);
        old.registry = Some(RegistrySignal { state: RegistryState::WaitingForApproval, updated_at: Some(T0) });
        assert_eq!(status(&old, at(0)), Status::WaitingForInput, "2.1.197 calls a question a permission prompt");
    }

    #[test]
    fn unknown_registry_values_fall_back_to_inference() {
        let mut i = input(Tail::Prompt);
        i.registry = Some(RegistrySignal { state: RegistryState::Unknown, updated_at: None });
        assert_eq!(status(&i, at(1)), Status::Working);
    }

    #[test]
    fn ended_process_is_idle() {
        let mut i = input(Tail::Prompt);
        i.ended = true;
        assert_eq!(status(&i, at(1)), Status::Idle);
    }

    #[test]
    fn hooks_rank_between_registry_and_transcript() {
        let mut i = pending(Approval::NotNeeded, false);
        i.hook = Some(HookSignal { state: HookState::WaitingForApproval, at: at(6) });
        assert_eq!(status(&i, at(7)), Status::WaitingForApproval);
        let mut j = input(Tail::Prompt);
        j.hook = Some(HookSignal { state: HookState::TurnDone, at: at(1) });
        assert_eq!(status(&j, at(2)), Status::WaitingForInput);
        // An older hook than the transcript's last record is history.
        let mut k = input(Tail::Prompt);
        k.last_activity = Some(at(5));
        k.hook = Some(HookSignal { state: HookState::TurnDone, at: at(1) });
        assert_eq!(status(&k, at(6)), Status::Working);
    }

    #[test]
    fn a_hook_newer_than_the_transcript_decides_until_the_transcript_catches_up() {
        // A prompt submitted after a finished turn: working before its record is written.
        let mut i = input(Tail::TurnDone { asks_question: false });
        i.hook = Some(HookSignal { state: HookState::Working, at: at(10) });
        assert_eq!(status(&i, at(11)), Status::Working);
        assert_eq!(derive(&i, at(11), &Timeouts::default()).next_check, Some(at(70)));
        assert_eq!(status(&i, at(70)), Status::WaitingForInput, "stale, like any inferred work");
        // Stop after a tool result: the turn is over.
        let mut j = input(Tail::ToolResults);
        j.hook = Some(HookSignal { state: HookState::TurnDone, at: at(3) });
        assert_eq!(status(&j, at(4)), Status::WaitingForInput);
        assert_eq!(status(&j, at(603)), Status::Idle);
        // SessionEnd: idle at once.
        j.hook = Some(HookSignal { state: HookState::Ended, at: at(3) });
        assert_eq!(status(&j, at(4)), Status::Idle);
    }

    fn job(tempo: JobTempo, secs: u64) -> Option<JobSignal> {
        Some(JobSignal { tempo, updated_at: Some(at(secs)) })
    }

    #[test]
    fn a_blocked_job_waits_for_what_it_needs() {
        // Dispatched, the prompt not yet in a transcript: the job says it works.
        let mut i = StatusInput { job: job(JobTempo::Active, 0), ..Default::default() };
        assert_eq!(status(&i, at(1)), Status::Working);
        i = StatusInput { job: job(JobTempo::Blocked(JobNeed::Approval), 2), ..input(Tail::ToolPending) };
        assert_eq!(status(&i, at(3)), Status::WaitingForApproval);
        i.job = job(JobTempo::Blocked(JobNeed::Input), 2);
        assert_eq!(status(&i, at(3)), Status::WaitingForInput);
        // What it needs is unknown: approval for a pending call, input otherwise.
        i.job = job(JobTempo::Blocked(JobNeed::Unknown), 2);
        assert_eq!(status(&i, at(3)), Status::WaitingForInput);
        i.pending = Some(PendingCall { since: T0, approval: Approval::Needed, running: false });
        assert_eq!(status(&i, at(3)), Status::WaitingForApproval);
        // A question is input whatever the job calls it.
        i.job = job(JobTempo::Blocked(JobNeed::Approval), 2);
        i.pending = Some(PendingCall { since: T0, approval: Approval::AsksUser, running: false });
        assert_eq!(status(&i, at(3)), Status::WaitingForInput);
    }

    #[test]
    fn the_newer_of_the_registry_and_the_job_wins() {
        let busy = |secs| Some(RegistrySignal { state: RegistryState::Busy, updated_at: Some(at(secs)) });
        // The service's classifier says the turn ended before the registry does.
        let mut i = StatusInput {
            job: job(JobTempo::Idle, 3),
            registry: busy(2),
            ..input(Tail::TurnDone { asks_question: false })
        };
        i.last_activity = Some(at(2));
        assert_eq!(status(&i, at(4)), Status::WaitingForInput, "the job's idle is newer than the registry's busy");
        // The registry changed after the job: its word.
        i.registry = busy(4);
        assert_eq!(status(&i, at(5)), Status::Working);
        // A dialog the job saw first.
        let mut d = StatusInput {
            job: job(JobTempo::Blocked(JobNeed::Approval), 7),
            registry: busy(6),
            ..input(Tail::ToolPending)
        };
        assert_eq!(status(&d, at(7)), Status::WaitingForApproval);
        // A job working again (a respawn rewrites it so) never outranks a registry that is
        // not busy; nor does a tempo this version does not know.
        d.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(at(6)) });
        d.last_activity = Some(at(6));
        d.tail = Tail::TurnDone { asks_question: false };
        d.job = job(JobTempo::Active, 8);
        assert_eq!(status(&d, at(8)), Status::WaitingForInput);
        d.registry = busy(6);
        d.job = job(JobTempo::Unknown, 9);
        assert_eq!(status(&d, at(9)), Status::Working);
    }

    #[test]
    fn the_registry_comes_before_the_job_and_the_job_before_inference() {
        let mut i = StatusInput { job: job(JobTempo::Active, 0), ..input(Tail::TurnDone { asks_question: false }) };
        assert_eq!(status(&i, at(1)), Status::Working, "the job works although the transcript's turn ended");
        i.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(at(1)) });
        assert_eq!(status(&i, at(2)), Status::WaitingForInput, "the registry's word first");
        // At its prompt: waiting for input, then idle after the idle timeout.
        let mut j = StatusInput { job: job(JobTempo::Idle, 5), ..input(Tail::Prompt) };
        assert_eq!(status(&j, at(6)), Status::WaitingForInput);
        // (Counted from the transcript's last record, as for the registry.)
        assert_eq!(derive(&j, at(6), &Timeouts::default()).next_check, Some(at(600)));
        assert_eq!(status(&j, at(600)), Status::Idle);
        // A prompt newer than the job's last word: the transcript goes on.
        j.last_activity = Some(at(9));
        assert_eq!(status(&j, at(10)), Status::Working);
        // A registry entry with no status yet says nothing; one at the prompt before the
        // first prompt is written does not make a dispatched job idle.
        let mut d = StatusInput { job: job(JobTempo::Active, 0), ..Default::default() };
        d.registry = Some(RegistrySignal { state: RegistryState::Unknown, updated_at: None });
        assert_eq!(status(&d, at(1)), Status::Working);
        d.registry = Some(RegistrySignal { state: RegistryState::Idle, updated_at: Some(at(1)) });
        assert_eq!(status(&d, at(2)), Status::Working);
        d.job = None;
        assert_eq!(status(&d, at(2)), Status::Idle, "an interactive session at its first prompt");
        // An unknown tempo says nothing.
        let k = StatusInput { job: job(JobTempo::Unknown, 0), ..input(Tail::TurnDone { asks_question: false }) };
        assert_eq!(status(&k, at(1)), Status::WaitingForInput);
    }

    #[test]
    fn the_transcript_shows_a_turn_written_by_its_last_words_or_a_pending_call() {
        let ended = Tail::AssistantText { end_turn: true, asks_question: false };
        assert!(turn_written(&ended, false));
        assert!(turn_written(&Tail::TurnDone { asks_question: false }, false));
        // The job idle, the reply not yet in the transcript: the tool results sent last.
        for mid in [Tail::ToolResults, Tail::Prompt, Tail::Thinking, Tail::Empty, Tail::ApiError { retrying: true }] {
            assert!(!turn_written(&mid, false), "{mid:?}");
        }
        assert!(!turn_written(&Tail::AssistantText { end_turn: false, asks_question: true }, false));
        // A dialog on a call: its call is written.
        assert!(turn_written(&Tail::ToolPending, true));
    }
}
