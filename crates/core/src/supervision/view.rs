//! What the faces see of supervision (docs/ipc.md): the `supervision` object of a roster
//! row, the resource view's rows, and the metrics (P14), also as Prometheus text.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::clock::Timestamp;
use crate::ids::SessionId;

/// A session's supervision state, as the roster shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SupervisionState {
    Running,
    RestartPending,
    Recovering,
    Suspended,
    Unhealthy,
    Terminated,
}

/// Persistent process, or the P5 fallback where each message is its own process.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Persistent,
    OneShot,
}

/// Why a session is `terminated`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TerminatedReason {
    DurationLimit,
    User,
    Deleted,
    /// The agent quit by itself with exit code 0 (`/exit`), or a monitored-only agent exited.
    Exited,
    /// The first launch never came up (bad command, unknown resume id).
    FailedToStart,
    Shutdown,
    /// The supervisor was signalled to stop (`mimesis run` got SIGTERM, SIGINT or SIGHUP).
    Signal,
}

/// Why automatic restarts stopped for a session (R2): shown until the user acts (a
/// restart, a resume) or changes the limits.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RestartHold {
    /// Right after a memory restart, before any work, the agent was over the memory limit
    /// again: the limit is below what it needs at rest.
    MemoryBaseline,
    /// The start limit: too many automatic restarts within the window.
    RateLimit,
}

/// `TrackedSession.supervision`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Supervision {
    pub state: SupervisionState,
    pub mode: Mode,
    pub agent: String,
    pub cwd: String,
    pub pid: Option<u32>,
    pub process_started_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub recovery_count: u32,
    pub restart_count: u32,
    pub consecutive_crashes: u32,
    pub pending_crash_recovery: bool,
    pub awaiting_permission: bool,
    pub idle_deadline: Option<Timestamp>,
    pub duration_deadline: Option<Timestamp>,
    pub queued_inputs: usize,
    pub last_exit_code: Option<i32>,
    pub terminated_reason: Option<TerminatedReason>,
    /// Automatic restarts are stopped, and why (`memory_baseline`: the memory limit is
    /// below what the agent needs at rest; `rate_limit`: too many within the window).
    #[serde(default)]
    pub restarts_held: Option<RestartHold>,
    /// Issue 36: the budget in force for this session in US dollars (its own, else the
    /// settings' `budgetUsd`), or null.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// What the session has spent so far (its transcript's estimated cost), when known.
    #[serde(default)]
    pub spent_usd: Option<f64>,
    /// When state is suspended: why (`idle`, `cap`: the live-session cap, `budget`).
    #[serde(default)]
    pub suspended_reason: Option<SuspendedReason>,
}

/// Why a session is suspended.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SuspendedReason {
    /// Idle for `idleTimeoutSecs`.
    Idle,
    /// Over the live-session cap (the least recently used).
    Cap,
    /// Its budget, or the fleet's daily budget, is spent.
    Budget,
}

impl SuspendedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SuspendedReason::Idle => "idle",
            SuspendedReason::Cap => "cap",
            SuspendedReason::Budget => "budget",
        }
    }
}

impl Supervision {
    /// A session being set up, before its policy has said anything (its first spawn).
    pub fn starting(agent: &str, cwd: &str, now: Timestamp) -> Supervision {
        Supervision {
            state: SupervisionState::Running,
            mode: Mode::Persistent,
            agent: agent.to_owned(),
            cwd: cwd.to_owned(),
            pid: None,
            process_started_at: None,
            created_at: now,
            recovery_count: 0,
            restart_count: 0,
            consecutive_crashes: 0,
            pending_crash_recovery: false,
            awaiting_permission: false,
            idle_deadline: None,
            duration_deadline: None,
            queued_inputs: 0,
            last_exit_code: None,
            terminated_reason: None,
            restarts_held: None,
            budget_usd: None,
            spent_usd: None,
            suspended_reason: None,
        }
    }
}

// The roster's copy is deserialized back in tests and by faces that cache rows.
impl<'de> serde::Deserialize<'de> for SupervisionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "running" => SupervisionState::Running,
            "restart_pending" => SupervisionState::RestartPending,
            "recovering" => SupervisionState::Recovering,
            "suspended" => SupervisionState::Suspended,
            "unhealthy" => SupervisionState::Unhealthy,
            "terminated" => SupervisionState::Terminated,
            other => return Err(serde::de::Error::custom(format!("unknown supervision state {other:?}"))),
        })
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "persistent" => Ok(Mode::Persistent),
            "one_shot" => Ok(Mode::OneShot),
            other => Err(serde::de::Error::custom(format!("unknown mode {other:?}"))),
        }
    }
}

impl<'de> serde::Deserialize<'de> for TerminatedReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "duration_limit" => TerminatedReason::DurationLimit,
            "user" => TerminatedReason::User,
            "deleted" => TerminatedReason::Deleted,
            "exited" => TerminatedReason::Exited,
            "failed_to_start" => TerminatedReason::FailedToStart,
            "shutdown" => TerminatedReason::Shutdown,
            "signal" => TerminatedReason::Signal,
            other => return Err(serde::de::Error::custom(format!("unknown terminated reason {other:?}"))),
        })
    }
}

/// One live supervised session in the resource view (P7).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRow {
    pub session_id: SessionId,
    pub cwd: String,
    pub pid: Option<u32>,
    pub started_at: Option<Timestamp>,
    pub uptime_secs: u64,
    pub rss_bytes: u64,
    pub cpu_percent: f64,
    pub state: SupervisionState,
    pub idle_remaining_secs: Option<u64>,
    pub recovery_count: u32,
}

/// P14 counters and gauges.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Metrics {
    pub rss_bytes: BTreeMap<String, u64>,
    pub zombie_processes_cleaned_total: u64,
    pub orphans_killed_total: u64,
    pub recoveries_total: u64,
    pub suspensions_total: u64,
    pub terminations_total: u64,
    pub restarts_total: u64,
}

/// The `resources` command's answer.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Resources {
    pub rows: Vec<ResourceRow>,
    pub metrics: Metrics,
}

impl Metrics {
    /// Adds another supervisor's metrics to these (`mimesis metrics` shows the sum of
    /// every running supervisor). A session supervised twice has both trees' memory.
    pub fn add(&mut self, other: &Metrics) {
        for (id, v) in &other.rss_bytes {
            *self.rss_bytes.entry(id.clone()).or_default() += v;
        }
        self.zombie_processes_cleaned_total += other.zombie_processes_cleaned_total;
        self.orphans_killed_total += other.orphans_killed_total;
        self.recoveries_total += other.recoveries_total;
        self.suspensions_total += other.suspensions_total;
        self.terminations_total += other.terminations_total;
        self.restarts_total += other.restarts_total;
    }

    /// The Prometheus text exposition format (`mimesis metrics`).
    pub fn prometheus(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# HELP csp_subprocess_rss_bytes Resident memory of a supervised session's process tree.");
        let _ = writeln!(s, "# TYPE csp_subprocess_rss_bytes gauge");
        for (id, v) in &self.rss_bytes {
            let _ = writeln!(s, "csp_subprocess_rss_bytes{{session_id=\"{}\"}} {v}", escape_label(id));
        }
        let counters = [
            (
                "csp_zombie_processes_cleaned_total",
                "Orphaned or defunct processes cleaned up.",
                self.zombie_processes_cleaned_total,
            ),
            (
                "csp_orphans_killed_total",
                "Processes left by dead agents that were terminated.",
                self.orphans_killed_total,
            ),
            ("csp_recoveries_total", "Sessions recovered after a crash.", self.recoveries_total),
            (
                "csp_suspensions_total",
                "Sessions suspended (idle or over the live-session cap).",
                self.suspensions_total,
            ),
            (
                "csp_terminations_total",
                "Sessions terminated (duration limit, user, shutdown).",
                self.terminations_total,
            ),
            ("csp_restarts_total", "Sessions restarted over the memory or disk limit.", self.restarts_total),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(s, "# HELP {name} {help}");
            let _ = writeln!(s, "# TYPE {name} counter");
            let _ = writeln!(s, "{name} {v}");
        }
        s
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_names_the_seed_metrics() {
        let mut m = Metrics { zombie_processes_cleaned_total: 2, recoveries_total: 1, ..Default::default() };
        m.rss_bytes.insert("abc".into(), 4096);
        let t = m.prometheus();
        assert!(t.contains("csp_subprocess_rss_bytes{session_id=\"abc\"} 4096\n"), "{t}");
        assert!(t.contains("csp_zombie_processes_cleaned_total 2\n"));
        assert!(t.contains("csp_recoveries_total 1\n"));
        assert!(t.contains("# TYPE csp_suspensions_total counter"));
    }

    #[test]
    fn the_supervision_object_has_the_documented_fields() {
        let s = Supervision {
            state: SupervisionState::RestartPending,
            mode: Mode::OneShot,
            agent: "claude".into(),
            cwd: "/p".into(),
            pid: Some(1),
            process_started_at: None,
            created_at: Timestamp::from_millis(0),
            recovery_count: 0,
            restart_count: 0,
            consecutive_crashes: 0,
            pending_crash_recovery: false,
            awaiting_permission: false,
            idle_deadline: None,
            duration_deadline: None,
            queued_inputs: 0,
            last_exit_code: None,
            terminated_reason: Some(TerminatedReason::DurationLimit),
            restarts_held: None,
            budget_usd: Some(5.0),
            spent_usd: None,
            suspended_reason: None,
        };
        let v = serde_json::to_value(&s).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 21);
        for k in [
            "state",
            "mode",
            "agent",
            "cwd",
            "pid",
            "processStartedAt",
            "createdAt",
            "recoveryCount",
            "restartCount",
            "consecutiveCrashes",
            "pendingCrashRecovery",
            "awaitingPermission",
            "idleDeadline",
            "durationDeadline",
            "queuedInputs",
            "lastExitCode",
            "terminatedReason",
            "budgetUsd",
            "spentUsd",
            "suspendedReason",
        ] {
            assert!(keys.contains(&k), "{k}");
        }
        assert_eq!(v["state"], "restart_pending");
        assert_eq!(v["mode"], "one_shot");
        assert_eq!(v["terminatedReason"], "duration_limit");
        assert_eq!(serde_json::from_value::<Supervision>(v).unwrap(), s);
    }
}
