//! Supervision events: what the UI shows as banners, toasts and dialogs, and what
//! `mimesis run --events-json` writes, one JSON object per line. The shape is a contract
//! (docs/ipc.md): `{"type", "sessionId", "at", ...}`, camelCase, `message` in the seeds'
//! wording (the wording helpers live here so every face says the same thing).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::SessionId;

/// Whether a respawned session continues its conversation or starts over (EC-007).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReadyStatus {
    Resumed,
    New,
}

/// What happened. Serialized with its fields beside `type`, `sessionId` and `at`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum EventKind {
    SessionStarted {},
    SessionWarning {
        reason: String,
        remaining_seconds: Option<u64>,
        message: String,
    },
    SessionTerminated {
        reason: String,
        message: String,
        resume_session_id: SessionId,
    },
    SessionRestarting {
        reason: String,
        message: String,
    },
    SessionReady {
        status: ReadyStatus,
        message: String,
    },
    CrashDetected {
        deferred: bool,
    },
    SessionRecovered {
        message: String,
    },
    RecoveryFailed {
        message: String,
    },
    SessionUnhealthy {
        message: String,
    },
    /// `reason`: `idle`, `cap` or `budget` (empty from an older Mimesis).
    SessionSuspended {
        message: String,
        #[serde(default)]
        reason: String,
    },
    SessionResumed {
        message: String,
    },
    ModeChange {
        mode: String,
        message: String,
    },
    Error {
        exit_code: i32,
        message: String,
    },
    SessionExited {
        exit_code: i32,
    },
}

/// One supervision event. (Read back from another machine's Mimesis: untrusted there.)
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SupervisionEvent {
    #[serde(flatten)]
    pub kind: EventKind,
    pub session_id: SessionId,
    pub at: Timestamp,
}

impl SupervisionEvent {
    /// The `type` string.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            EventKind::SessionStarted {} => "session_started",
            EventKind::SessionWarning { .. } => "session_warning",
            EventKind::SessionTerminated { .. } => "session_terminated",
            EventKind::SessionRestarting { .. } => "session_restarting",
            EventKind::SessionReady { .. } => "session_ready",
            EventKind::CrashDetected { .. } => "crash_detected",
            EventKind::SessionRecovered { .. } => "session_recovered",
            EventKind::RecoveryFailed { .. } => "recovery_failed",
            EventKind::SessionUnhealthy { .. } => "session_unhealthy",
            EventKind::SessionSuspended { .. } => "session_suspended",
            EventKind::SessionResumed { .. } => "session_resumed",
            EventKind::ModeChange { .. } => "mode_change",
            EventKind::Error { .. } => "error",
            EventKind::SessionExited { .. } => "session_exited",
        }
    }

    /// The human sentence of this event, if it has one.
    pub fn message(&self) -> Option<&str> {
        match &self.kind {
            EventKind::SessionWarning { message, .. }
            | EventKind::SessionTerminated { message, .. }
            | EventKind::SessionRestarting { message, .. }
            | EventKind::SessionReady { message, .. }
            | EventKind::SessionRecovered { message }
            | EventKind::RecoveryFailed { message }
            | EventKind::SessionUnhealthy { message }
            | EventKind::SessionSuspended { message, .. }
            | EventKind::SessionResumed { message }
            | EventKind::ModeChange { message, .. }
            | EventKind::Error { message, .. } => Some(message),
            _ => None,
        }
    }
}

/// The seeds' sentences, in one place.
pub mod wording {
    use super::*;
    use crate::supervision::view::TerminatedReason;

    fn plural(n: u64, unit: &str) -> String {
        if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") }
    }

    /// "24 minutes", "45 seconds", "2 hours": the largest unit that reads naturally; a
    /// short span that is no whole number of seconds as it was given ("1.5 seconds").
    pub fn span(d: Duration) -> String {
        let s = d.as_secs();
        if s < 120 && d.subsec_millis() != 0 {
            let given = crate::supervision::limits::format_duration(d);
            return match given.strip_suffix("ms") {
                Some(ms) => format!("{ms} milliseconds"),
                None => format!("{} seconds", given.trim_end_matches('s')),
            };
        }
        if s >= 2 * 3600 && s.is_multiple_of(3600) {
            plural(s / 3600, "hour")
        } else if s >= 120 {
            plural(s.div_ceil(60), "minute")
        } else {
            plural(s, "second")
        }
    }

    /// "4-hour", "30-minute", "90-second" (for "the 4-hour limit"); a limit that is no
    /// whole number of seconds as it was given: "500ms", "1.5s" (never "1-second" for
    /// either).
    pub fn limit_adjective(d: Duration) -> String {
        let s = d.as_secs();
        if d.subsec_nanos() != 0 || s == 0 {
            crate::supervision::limits::format_duration(d)
        } else if s.is_multiple_of(3600) {
            format!("{}-hour", s / 3600)
        } else if s.is_multiple_of(60) {
            format!("{}-minute", s / 60)
        } else {
            format!("{s}-second")
        }
    }

    /// Seed 000 step 2: "Session will end in 24 minutes. Save your work."
    pub fn duration_warning(remaining: Duration) -> String {
        format!("Session will end in {}. Save your work.", span(remaining))
    }

    /// Seed 000 step 4: "Session ended (4-hour limit reached)."
    pub fn duration_ended(max: Duration) -> String {
        format!("Session ended ({} limit reached).", limit_adjective(max))
    }

    /// EC-003: the turn was interrupted after the grace period.
    pub const DURATION_ENDED_INCOMPLETE: &str = "Session ended. Your last response may be incomplete.";
    /// Seed 000 memory step 3.
    pub const RESTARTING: &str = "Session restarting to maintain performance. Your conversation will be preserved.";
    /// A background session's memory restart after its turn's last words did not reach its
    /// transcript within the grace: said, as a budget's stop says it.
    pub fn restarting_unwritten(grace: Duration) -> String {
        format!(
            "Session restarting to maintain performance. Its last response was not in its transcript {} s \
             after the turn ended and may be missing; the rest of the conversation is preserved.",
            grace.as_secs()
        )
    }
    /// A background session's memory restart while its turn runs (forced at twice the limit,
    /// or the turn's grace run out): the respawn cuts the turn.
    pub const RESTARTING_MID_TURN: &str = "Session restarting to maintain performance in the middle of its turn: \
         the turn is cut short and its last response may be incomplete; the rest of the conversation is preserved.";
    /// A background session's memory restart forced once its turn ended by its status, before
    /// the transcript showed that end.
    pub const RESTARTING_UNWRITTEN_YET: &str = "Session restarting to maintain performance. Its last response \
         was not in its transcript yet and may be missing; the rest of the conversation is preserved.";
    /// Seed 000 memory step 5.
    pub const RESTORED: &str = "Session restored. You can continue.";
    /// EC-007.
    pub const NOT_RESTORED: &str = "Previous session could not be restored. Starting a new session.";
    /// Seed 003 §2.1 step 4 ("会话已自动恢复").
    pub const RECOVERED: &str = "Session recovered automatically.";

    /// Seed 003 §2.1 step 5 and P5: recovery gave up; messages now run one at a time.
    pub fn recovery_failed(id: &SessionId) -> String {
        format!(
            "Automatic recovery failed. Switched to one-shot mode: each message now runs `claude -p --resume {id}`."
        )
    }

    /// Seed 003 §4: more than 2 consecutive crashes.
    pub fn unhealthy(crashes: u32) -> String {
        format!(
            "Session crashed {crashes} times in a row and is marked unhealthy. Automatic recovery is off; retry when ready."
        )
    }

    /// `mimesis run` was told to stop by a signal: the session stopped and can be resumed.
    pub fn signalled(signal: &str, id: &SessionId) -> String {
        format!("Stopped by {signal}. The session can be resumed: mimesis run --resume {id}")
    }

    /// R2: restarting for memory cannot help: the agent is over the limit at rest.
    pub fn memory_below_baseline(limit_mb: u64, rss_mb: u64) -> String {
        format!(
            "The memory limit ({limit_mb} MB) is below what the agent needs at rest ({rss_mb} MB right after a restart). \
             Automatic restarts are stopped; the session keeps running. Raise the limit in Settings."
        )
    }

    /// R2: the start limit was reached.
    pub fn restart_limit(restarts: usize, window: Duration) -> String {
        format!(
            "Restarted {restarts} times in {}: automatic restarts are stopped; the session keeps running. \
             Restart it yourself when ready, or raise the limits in Settings.",
            span(window)
        )
    }

    /// R2: crash recoveries reached the start limit.
    pub fn unhealthy_rate(restarts: usize, window: Duration) -> String {
        format!(
            "Session restarted {restarts} times in {} and is marked unhealthy. Automatic recovery is off; retry when ready.",
            span(window)
        )
    }

    /// P6: suspended after the idle timeout.
    pub fn suspended_idle(idle: Duration) -> String {
        format!("Session suspended after {} idle. Your next message resumes it.", span(idle))
    }

    /// P7: suspended to stay under the live-session cap.
    pub fn suspended_cap(max: u32) -> String {
        format!("Session suspended to keep at most {max} live sessions. Your next message resumes it.")
    }

    /// Seed 004 "Resuming session (idle for N min)…"; under a minute: "Resuming session…".
    pub fn resuming(idle: Duration) -> String {
        let min = idle.as_secs() / 60;
        if min >= 1 { format!("Resuming session (idle for {min} min)…") } else { "Resuming session…".to_owned() }
    }

    pub const RESUMED_BY_USER: &str = "Session resumed.";
    pub const STOPPED_BY_USER: &str = "Session stopped. You can resume it.";
    pub const DELETED: &str = "Session deleted.";
    pub const SHUTDOWN: &str = "Mimesis is quitting; the session was stopped and can be resumed.";
    pub const MODE_ONE_SHOT: &str = "One-shot mode: each message runs as its own `claude -p --resume` process.";
    pub const MODE_PERSISTENT: &str = "Persistent session running again.";

    /// Seed 003 §2.1 step 2: the `error` event of an abnormal exit.
    /// Why a session ended, as the end of "This session has ended because …".
    pub fn terminated_because(reason: TerminatedReason) -> &'static str {
        match reason {
            TerminatedReason::DurationLimit => "its duration limit was reached",
            TerminatedReason::User => "you stopped it",
            TerminatedReason::Deleted => "it was deleted",
            TerminatedReason::Exited => "the agent quit",
            TerminatedReason::FailedToStart => "the agent could not be started",
            TerminatedReason::Shutdown => "Mimesis quit",
            TerminatedReason::Signal => "Mimesis was told to stop",
        }
    }

    /// Every reason with its words, for the UI's generated table.
    pub const TERMINATED_REASONS: [TerminatedReason; 7] = [
        TerminatedReason::DurationLimit,
        TerminatedReason::User,
        TerminatedReason::Deleted,
        TerminatedReason::Exited,
        TerminatedReason::FailedToStart,
        TerminatedReason::Shutdown,
        TerminatedReason::Signal,
    ];

    /// A process's exit status in words: "exit code 1", or the signal that ended it
    /// (a shell's 128 + n): "stopped by SIGTERM".
    pub fn exit_status(code: i32) -> String {
        let signal = match code - 128 {
            1 => Some("SIGHUP"),
            2 => Some("SIGINT"),
            3 => Some("SIGQUIT"),
            6 => Some("SIGABRT"),
            9 => Some("SIGKILL"),
            11 => Some("SIGSEGV"),
            13 => Some("SIGPIPE"),
            15 => Some("SIGTERM"),
            _ => None,
        };
        match (code, signal) {
            (0, _) => "exited normally".to_owned(),
            (_, Some(s)) => format!("stopped by {s}"),
            _ => format!("exit code {code}"),
        }
    }

    pub fn abnormal_exit(code: i32, last_line: Option<&str>) -> String {
        match last_line {
            Some(l) if !l.is_empty() => format!("The agent exited unexpectedly (exit code {code}). Last output: {l}"),
            _ => format!("The agent exited unexpectedly (exit code {code})."),
        }
    }

    /// EC-023.
    pub fn disk_warning(percent: u8) -> String {
        format!("Disk usage of the Claude Code folder's filesystem is at {percent}%.")
    }

    pub const DISK_RESTARTING: &str =
        "Disk is full. Session restarting to free space. Your conversation will be preserved.";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> SessionId {
        SessionId::parse("abc123").unwrap()
    }

    #[test]
    fn events_serialize_to_the_run_contract() {
        let at = Timestamp::from_millis(0);
        let ev = |kind| serde_json::to_value(SupervisionEvent { kind, session_id: id(), at }).unwrap();
        assert_eq!(
            ev(EventKind::SessionStarted {}),
            serde_json::json!({"type": "session_started", "sessionId": "abc123", "at": "1970-01-01T00:00:00.000Z"})
        );
        assert_eq!(
            ev(EventKind::SessionWarning {
                reason: "duration".into(),
                remaining_seconds: Some(1440),
                message: wording::duration_warning(Duration::from_secs(1440)),
            }),
            serde_json::json!({"type": "session_warning", "sessionId": "abc123", "at": "1970-01-01T00:00:00.000Z",
                "reason": "duration", "remainingSeconds": 1440, "message": "Session will end in 24 minutes. Save your work."})
        );
        let t = ev(EventKind::SessionTerminated {
            reason: "duration_limit".into(),
            message: wording::duration_ended(Duration::from_secs(14400)),
            resume_session_id: id(),
        });
        assert_eq!(t["resumeSessionId"], "abc123");
        assert_eq!(t["message"], "Session ended (4-hour limit reached).");
        assert_eq!(ev(EventKind::Error { exit_code: 137, message: "x".into() })["exitCode"], 137);
        assert_eq!(ev(EventKind::SessionExited { exit_code: 3 })["exitCode"], 3);
        assert_eq!(ev(EventKind::CrashDetected { deferred: true })["deferred"], true);
        assert_eq!(
            ev(EventKind::SessionReady { status: ReadyStatus::New, message: wording::NOT_RESTORED.into() })["status"],
            "new"
        );
        assert_eq!(
            ev(EventKind::ModeChange { mode: "one_shot".into(), message: String::new() })["type"],
            "mode_change"
        );
    }

    #[test]
    fn wording_follows_the_seeds() {
        assert_eq!(
            wording::duration_warning(Duration::from_secs(1440)),
            "Session will end in 24 minutes. Save your work."
        );
        assert_eq!(wording::duration_warning(Duration::from_secs(9)), "Session will end in 9 seconds. Save your work.");
        assert_eq!(wording::duration_warning(Duration::from_secs(1)), "Session will end in 1 second. Save your work.");
        assert_eq!(wording::duration_ended(Duration::from_secs(4 * 3600)), "Session ended (4-hour limit reached).");
        assert_eq!(wording::duration_ended(Duration::from_secs(90)), "Session ended (90-second limit reached).");
        assert_eq!(wording::duration_ended(Duration::from_secs(1800)), "Session ended (30-minute limit reached).");
        // Issue 32: both were "1-second limit".
        assert_eq!(wording::duration_ended(Duration::from_millis(500)), "Session ended (500ms limit reached).");
        assert_eq!(wording::duration_ended(Duration::from_millis(1500)), "Session ended (1.5s limit reached).");
        assert_eq!(wording::duration_ended(Duration::from_secs(1)), "Session ended (1-second limit reached).");
        assert_eq!(
            wording::suspended_idle(Duration::from_millis(1500)).split(" idle").next(),
            Some("Session suspended after 1.5 seconds")
        );
        assert_eq!(wording::span(Duration::from_millis(500)), "500 milliseconds");
        assert_eq!(wording::resuming(Duration::from_secs(12 * 60 + 5)), "Resuming session (idle for 12 min)…");
        assert_eq!(wording::resuming(Duration::from_secs(20)), "Resuming session…");
        assert_eq!(wording::span(Duration::from_secs(4 * 3600)), "4 hours");
    }
}
