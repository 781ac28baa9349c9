//! Mimesis's own settings (SPEC U6; docs/ipc.md `Settings`): the watch timeouts, the
//! supervision limits, the agent to run and the notification choices. Stored in the
//! fleet database; every field has the SPEC's default.
//!
//! [`Settings::from_json`] reads a document sent by the UI field by field, so a wrong
//! type or an out-of-range value is reported against its own field (`limits.maxRssMb`)
//! and nothing is saved while any error remains.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::Timeouts;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct WatchSettings {
    pub approval_timeout_secs: u64,
    pub stale_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub status_file_ttl_secs: u64,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            approval_timeout_secs: 5,
            stale_timeout_secs: 60,
            idle_timeout_secs: 600,
            status_file_ttl_secs: 300,
        }
    }
}

impl WatchSettings {
    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            approval: Duration::from_secs(self.approval_timeout_secs),
            stale: Duration::from_secs(self.stale_timeout_secs),
            idle: Duration::from_secs(self.idle_timeout_secs),
        }
    }

    pub fn status_file_ttl(&self) -> Duration {
        Duration::from_secs(self.status_file_ttl_secs)
    }
}

/// How an idle supervised session is suspended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SuspendMode {
    /// SIGTERM, then SIGKILL; resumed with `--resume`.
    #[default]
    Terminate,
    /// SIGSTOP / SIGCONT (opt-in).
    Stop,
}

/// The supervision limits. A mirror of the JSON shape of `supervise::Limits` (owned by
/// the supervision module); the two are to be unified into one type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitsSettings {
    pub max_live_sessions: u32,
    pub idle_timeout_secs: u64,
    pub suspend_mode: SuspendMode,
    pub max_duration_secs: u64,
    pub duration_check_secs: u64,
    pub duration_warn_percent: u32,
    pub turn_grace_secs: u64,
    pub max_rss_mb: u64,
    pub rss_check_secs: u64,
    pub kill_after_secs: u64,
    pub disk_check_secs: u64,
    pub disk_warn_percent: u32,
    pub disk_cleanup_percent: u32,
    pub health_check_secs: u64,
    pub orphan_check_secs: u64,
    pub recovery_retries: u32,
    pub recovery_retry_delay_secs: u64,
    pub crash_debounce_success_secs: u64,
    pub crash_debounce_failure_secs: u64,
    pub crash_patterns: Vec<String>,
}

impl Default for LimitsSettings {
    fn default() -> Self {
        LimitsSettings {
            max_live_sessions: 3,
            idle_timeout_secs: 600,
            suspend_mode: SuspendMode::Terminate,
            max_duration_secs: 4 * 3600,
            duration_check_secs: 60,
            duration_warn_percent: 90,
            turn_grace_secs: 30,
            max_rss_mb: 4096,
            rss_check_secs: 30,
            kill_after_secs: 5,
            disk_check_secs: 300,
            disk_warn_percent: 80,
            disk_cleanup_percent: 95,
            health_check_secs: 60,
            orphan_check_secs: 60,
            recovery_retries: 2,
            recovery_retry_delay_secs: 2,
            crash_debounce_success_secs: 30,
            crash_debounce_failure_secs: 5,
            crash_patterns: vec!["RangeError: Maximum call stack size exceeded".to_owned()],
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSettings {
    pub command: String,
    pub args: Vec<String>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings { command: "claude".to_owned(), args: Vec::new() }
    }
}

/// Which desktop notifications are shown (SPEC U5).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct NotificationSettings {
    pub enabled: bool,
    pub waiting_for_approval: bool,
    pub waiting_for_input: bool,
    pub crashed: bool,
    pub recovered: bool,
    pub terminated: bool,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        NotificationSettings {
            enabled: true,
            waiting_for_approval: true,
            waiting_for_input: true,
            crashed: true,
            recovered: true,
            terminated: true,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub watch: WatchSettings,
    pub limits: LimitsSettings,
    pub agent: AgentSettings,
    pub notifications: NotificationSettings,
}

/// One field that is wrong, and why (docs/ipc.md).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// What `settings_set` answers: the stored document, and the errors (empty on success).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SetOutcome {
    pub settings: Settings,
    pub errors: Vec<FieldError>,
}

fn take<T: DeserializeOwned>(section: &Value, prefix: &str, name: &str, slot: &mut T, errors: &mut Vec<FieldError>) {
    if let Some(v) = section.get(name) {
        match serde_json::from_value::<T>(v.clone()) {
            Ok(x) => *slot = x,
            Err(e) => errors
                .push(FieldError { field: format!("{prefix}.{name}"), message: format!("has the wrong type ({e})") }),
        }
    }
}

impl Settings {
    /// Reads a settings document: missing fields keep their defaults, unknown ones are
    /// ignored, and every wrong type or value is an error against its field.
    pub fn from_json(v: &Value) -> Result<Settings, Vec<FieldError>> {
        let mut s = Settings::default();
        let mut errors = Vec::new();
        if !v.is_object() {
            return Err(vec![FieldError { field: "settings".into(), message: "must be an object".into() }]);
        }
        let section = |name: &str, errors: &mut Vec<FieldError>| -> Value {
            match v.get(name) {
                None | Some(Value::Null) => Value::Object(Default::default()),
                Some(o @ Value::Object(_)) => o.clone(),
                Some(_) => {
                    errors.push(FieldError { field: name.into(), message: "must be an object".into() });
                    Value::Object(Default::default())
                }
            }
        };
        let w = section("watch", &mut errors);
        take(&w, "watch", "approvalTimeoutSecs", &mut s.watch.approval_timeout_secs, &mut errors);
        take(&w, "watch", "staleTimeoutSecs", &mut s.watch.stale_timeout_secs, &mut errors);
        take(&w, "watch", "idleTimeoutSecs", &mut s.watch.idle_timeout_secs, &mut errors);
        take(&w, "watch", "statusFileTtlSecs", &mut s.watch.status_file_ttl_secs, &mut errors);
        let l = section("limits", &mut errors);
        let m = &mut s.limits;
        let e = &mut errors;
        take(&l, "limits", "maxLiveSessions", &mut m.max_live_sessions, e);
        take(&l, "limits", "idleTimeoutSecs", &mut m.idle_timeout_secs, e);
        take(&l, "limits", "suspendMode", &mut m.suspend_mode, e);
        take(&l, "limits", "maxDurationSecs", &mut m.max_duration_secs, e);
        take(&l, "limits", "durationCheckSecs", &mut m.duration_check_secs, e);
        take(&l, "limits", "durationWarnPercent", &mut m.duration_warn_percent, e);
        take(&l, "limits", "turnGraceSecs", &mut m.turn_grace_secs, e);
        take(&l, "limits", "maxRssMb", &mut m.max_rss_mb, e);
        take(&l, "limits", "rssCheckSecs", &mut m.rss_check_secs, e);
        take(&l, "limits", "killAfterSecs", &mut m.kill_after_secs, e);
        take(&l, "limits", "diskCheckSecs", &mut m.disk_check_secs, e);
        take(&l, "limits", "diskWarnPercent", &mut m.disk_warn_percent, e);
        take(&l, "limits", "diskCleanupPercent", &mut m.disk_cleanup_percent, e);
        take(&l, "limits", "healthCheckSecs", &mut m.health_check_secs, e);
        take(&l, "limits", "orphanCheckSecs", &mut m.orphan_check_secs, e);
        take(&l, "limits", "recoveryRetries", &mut m.recovery_retries, e);
        take(&l, "limits", "recoveryRetryDelaySecs", &mut m.recovery_retry_delay_secs, e);
        take(&l, "limits", "crashDebounceSuccessSecs", &mut m.crash_debounce_success_secs, e);
        take(&l, "limits", "crashDebounceFailureSecs", &mut m.crash_debounce_failure_secs, e);
        take(&l, "limits", "crashPatterns", &mut m.crash_patterns, e);
        let a = section("agent", &mut errors);
        take(&a, "agent", "command", &mut s.agent.command, &mut errors);
        take(&a, "agent", "args", &mut s.agent.args, &mut errors);
        let n = section("notifications", &mut errors);
        let ns = &mut s.notifications;
        take(&n, "notifications", "enabled", &mut ns.enabled, &mut errors);
        take(&n, "notifications", "waitingForApproval", &mut ns.waiting_for_approval, &mut errors);
        take(&n, "notifications", "waitingForInput", &mut ns.waiting_for_input, &mut errors);
        take(&n, "notifications", "crashed", &mut ns.crashed, &mut errors);
        take(&n, "notifications", "recovered", &mut ns.recovered, &mut errors);
        take(&n, "notifications", "terminated", &mut ns.terminated, &mut errors);
        errors.extend(s.validate());
        if errors.is_empty() { Ok(s) } else { Err(errors) }
    }

    /// The range of every value.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut range = |field: &str, v: u64, lo: u64, hi: u64, unit: &str| {
            if v < lo || v > hi {
                errors
                    .push(FieldError { field: field.into(), message: format!("must be between {lo} and {hi}{unit}") });
            }
        };
        let w = &self.watch;
        range("watch.approvalTimeoutSecs", w.approval_timeout_secs, 1, 600, " seconds");
        range("watch.staleTimeoutSecs", w.stale_timeout_secs, 5, 3600, " seconds");
        range("watch.idleTimeoutSecs", w.idle_timeout_secs, 60, 86_400, " seconds");
        range("watch.statusFileTtlSecs", w.status_file_ttl_secs, 10, 86_400, " seconds");
        let l = &self.limits;
        range("limits.maxLiveSessions", l.max_live_sessions.into(), 1, 64, "");
        range("limits.idleTimeoutSecs", l.idle_timeout_secs, 60, 7200, " seconds (1–120 min)");
        range("limits.maxDurationSecs", l.max_duration_secs, 60, 7 * 86_400, " seconds");
        range("limits.durationCheckSecs", l.duration_check_secs, 1, 3600, " seconds");
        range("limits.durationWarnPercent", l.duration_warn_percent.into(), 1, 99, " percent");
        range("limits.turnGraceSecs", l.turn_grace_secs, 0, 600, " seconds");
        range("limits.maxRssMb", l.max_rss_mb, 128, 1 << 20, " MB");
        range("limits.rssCheckSecs", l.rss_check_secs, 1, 3600, " seconds");
        range("limits.killAfterSecs", l.kill_after_secs, 1, 120, " seconds");
        range("limits.diskCheckSecs", l.disk_check_secs, 10, 86_400, " seconds");
        range("limits.diskWarnPercent", l.disk_warn_percent.into(), 1, 100, " percent");
        range("limits.diskCleanupPercent", l.disk_cleanup_percent.into(), 1, 100, " percent");
        range("limits.healthCheckSecs", l.health_check_secs, 1, 3600, " seconds");
        range("limits.orphanCheckSecs", l.orphan_check_secs, 1, 3600, " seconds");
        range("limits.recoveryRetries", l.recovery_retries.into(), 0, 10, "");
        range("limits.recoveryRetryDelaySecs", l.recovery_retry_delay_secs, 0, 600, " seconds");
        range("limits.crashDebounceSuccessSecs", l.crash_debounce_success_secs, 0, 3600, " seconds");
        range("limits.crashDebounceFailureSecs", l.crash_debounce_failure_secs, 0, 3600, " seconds");
        if l.disk_cleanup_percent < l.disk_warn_percent {
            errors.push(FieldError {
                field: "limits.diskCleanupPercent".into(),
                message: "must not be below limits.diskWarnPercent".into(),
            });
        }
        if l.crash_patterns.len() > 50 {
            errors.push(FieldError { field: "limits.crashPatterns".into(), message: "at most 50 patterns".into() });
        }
        for (i, p) in l.crash_patterns.iter().enumerate() {
            if p.trim().is_empty() || p.len() > 500 {
                errors.push(FieldError {
                    field: format!("limits.crashPatterns[{i}]"),
                    message: "must be between 1 and 500 characters".into(),
                });
            }
        }
        let a = &self.agent;
        if a.command.trim().is_empty() || a.command.len() > 4096 || a.command.contains('\0') {
            errors.push(FieldError { field: "agent.command".into(), message: "must name a program".into() });
        }
        if a.args.len() > 100 {
            errors.push(FieldError { field: "agent.args".into(), message: "at most 100 arguments".into() });
        }
        for (i, arg) in a.args.iter().enumerate() {
            if arg.len() > 4096 || arg.contains('\0') {
                errors.push(FieldError {
                    field: format!("agent.args[{i}]"),
                    message: "must be at most 4096 characters, without NUL".into(),
                });
            }
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_the_spec_values_and_serialize_as_documented() {
        let v = serde_json::to_value(Settings::default()).unwrap();
        assert_eq!(
            v["watch"],
            json!({"approvalTimeoutSecs": 5, "staleTimeoutSecs": 60, "idleTimeoutSecs": 600, "statusFileTtlSecs": 300})
        );
        assert_eq!(v["limits"]["maxRssMb"], 4096);
        assert_eq!(v["limits"]["suspendMode"], "terminate");
        assert_eq!(v["limits"]["maxDurationSecs"], 14_400);
        assert_eq!(v["agent"], json!({"command": "claude", "args": []}));
        assert_eq!(v["notifications"]["waitingForApproval"], true);
        assert_eq!(Settings::from_json(&v), Ok(Settings::default()));
        assert!(Settings::default().validate().is_empty());
    }

    #[test]
    fn partial_documents_keep_defaults() {
        let s = Settings::from_json(&json!({"limits": {"maxLiveSessions": 5}, "future": 1})).unwrap();
        assert_eq!(s.limits.max_live_sessions, 5);
        assert_eq!(s.limits.idle_timeout_secs, 600);
    }

    #[test]
    fn every_error_names_its_field() {
        let errs = Settings::from_json(&json!({
            "watch": {"approvalTimeoutSecs": "five"},
            "limits": {"idleTimeoutSecs": 30, "suspendMode": "hibernate", "crashPatterns": [""]},
            "agent": {"command": ""},
            "notifications": []
        }))
        .unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "watch.approvalTimeoutSecs",
                "limits.suspendMode",
                "notifications",
                "limits.idleTimeoutSecs",
                "limits.crashPatterns[0]",
                "agent.command"
            ]
        );
        let idle = errs.iter().find(|e| e.field == "limits.idleTimeoutSecs").unwrap();
        assert_eq!(idle.message, "must be between 60 and 7200 seconds (1–120 min)");
    }
}
