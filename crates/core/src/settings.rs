//! Mimesis's own settings (SPEC U6; docs/ipc.md `Settings`): the watch timeouts, the
//! supervision limits, the agent to run and the notification choices. Stored in the
//! fleet database; every field has the SPEC's default.
//!
//! [`Settings::from_json`] reads a document sent by the UI field by field, so a wrong
//! type or an out-of-range value is reported against its own field (`limits.maxRssMb`)
//! and nothing is saved while any error remains. The ranges and wording are those of the
//! settings view (ui/src/lib/settings.ts); the `limits` section is
//! [`crate::supervision::Limits`] itself, validated by [`Limits::validate`].

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::Timeouts;
use crate::supervision::agent::AgentCommand;
pub use crate::supervision::limits::FieldError;
use crate::supervision::limits::Limits;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct WatchSettings {
    pub approval_timeout_secs: u64,
    pub stale_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub status_file_ttl_secs: u64,
    /// How long a permission request from an external session waits for an answer from
    /// Mimesis (Claude Code's own dialog stays usable all along).
    pub answer_wait_secs: u64,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            approval_timeout_secs: 5,
            stale_timeout_secs: 60,
            idle_timeout_secs: 600,
            status_file_ttl_secs: 300,
            answer_wait_secs: 300,
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

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

impl AgentSettings {
    /// The program supervised sessions run, with these arguments.
    pub fn command(&self) -> AgentCommand {
        let mut agent = AgentCommand::new(&self.command);
        agent.args = self.args.clone();
        agent
    }
}

/// Which desktop notifications are shown (SPEC U5).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

/// Other machines whose sessions join the roster (issue 13).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct MachineSettings {
    /// SSH destinations (`crate::remote::Destination`), in the order the user added them.
    pub hosts: Vec<String>,
}

impl MachineSettings {
    /// Adds (`add`) or removes `dest`; a sentence when it is already there, or not there.
    /// The CLI (`mimesis hosts add|remove`) and the window (`host_add`/`host_remove`) both
    /// change the list through this.
    pub fn change(&mut self, dest: &crate::remote::Destination, add: bool) -> Result<(), HostListError> {
        let had = self.hosts.iter().any(|h| h == dest.as_str());
        match (add, had) {
            (true, true) => Err(HostListError::Already(dest.clone())),
            (false, false) => Err(HostListError::NotListed(dest.clone())),
            (true, false) => {
                self.hosts.push(dest.as_str().to_owned());
                Ok(())
            }
            (false, true) => {
                self.hosts.retain(|h| h != dest.as_str());
                Ok(())
            }
        }
    }
}

/// The desktop app's own choices (the CLI has no use for them).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct DesktopSettings {
    /// Start Mimesis, hidden to the tray, when the user logs in (an XDG autostart entry,
    /// written and removed by the app). Off until the user turns it on.
    pub start_at_login: bool,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub watch: WatchSettings,
    pub limits: Limits,
    pub agent: AgentSettings,
    pub notifications: NotificationSettings,
    pub machines: MachineSettings,
    pub desktop: DesktopSettings,
}

/// What `settings_set` answers: the stored document, and the errors (empty on success).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SetOutcome {
    pub settings: Settings,
    pub errors: Vec<FieldError>,
}

fn take<T: DeserializeOwned + Serialize>(
    section: &Value,
    prefix: &str,
    name: &str,
    slot: &mut T,
    errors: &mut Vec<FieldError>,
) {
    if let Some(v) = section.get(name) {
        match serde_json::from_value::<T>(v.clone()) {
            Ok(x) => *slot = x,
            Err(e) => {
                let default = serde_json::to_value(&*slot).unwrap_or(Value::Null);
                errors.push(FieldError { field: format!("{prefix}.{name}"), message: expected(&default, v, &e) })
            }
        }
    }
}

/// Why `given` cannot stand where `default` stands, in the view's words where it has some.
fn expected(default: &Value, given: &Value, e: &serde_json::Error) -> String {
    match default {
        Value::Bool(_) => "must be true or false".into(),
        Value::Number(_) if given.is_number() => "must be a whole number of at least 0".into(),
        Value::Number(_) => "must be a number".into(),
        Value::String(_) => "must be text".into(),
        Value::Array(_) => "must be a list of text".into(),
        _ => format!("has the wrong type ({e})"),
    }
}

/// Reads the `limits` section key by key (each against a default document), so that one
/// bad value is reported against its own field and the others are still read. Unknown
/// keys are ignored, like in the other sections.
fn take_limits(section: &Value, errors: &mut Vec<FieldError>) -> Limits {
    let defaults = serde_json::to_value(Limits::default()).expect("limits serialize");
    let Some(given) = section.as_object() else { return Limits::default() };
    let mut good = serde_json::Map::new();
    for name in Limits::FIELDS.iter().map(|n| n.to_string()) {
        let (Some(v), Some(default)) = (given.get(&name), defaults.get(&name)) else { continue };
        let one: serde_json::Map<String, Value> = [(name.clone(), v.clone())].into_iter().collect();
        match serde_json::from_value::<Limits>(Value::Object(one)) {
            Ok(_) => {
                good.insert(name, v.clone());
            }
            Err(e) => {
                let message = match (name.as_str(), v) {
                    ("suspendMode", _) => "must be terminate or stop".to_owned(),
                    ("crashPatterns", _) => "must be a list of regular expressions".to_owned(),
                    // A duration in seconds: fractions are fine, negatives are not.
                    (n, Value::Number(_)) if n.ends_with("Secs") => "must be a number of seconds of at least 0".into(),
                    _ => expected(default, v, &e),
                };
                errors.push(FieldError { field: format!("limits.{name}"), message });
            }
        }
    }
    serde_json::from_value(Value::Object(good)).unwrap_or_default()
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
        take(&w, "watch", "answerWaitSecs", &mut s.watch.answer_wait_secs, &mut errors);
        let l = section("limits", &mut errors);
        s.limits = take_limits(&l, &mut errors);
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
        let m = section("machines", &mut errors);
        take(&m, "machines", "hosts", &mut s.machines.hosts, &mut errors);
        let d = section("desktop", &mut errors);
        take(&d, "desktop", "startAtLogin", &mut s.desktop.start_at_login, &mut errors);
        // A field already reported as unreadable is not reported again as out of range.
        let unreadable: Vec<String> = errors.iter().map(|e| e.field.clone()).collect();
        errors.extend(s.validate().into_iter().filter(|e| !unreadable.contains(&e.field)));
        if errors.is_empty() { Ok(s) } else { Err(errors) }
    }

    /// The range of every value, as the settings view words it.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut range = |field: &str, v: u64, lo: u64, hi: u64| {
            if v < lo || v > hi {
                let minutes = if lo >= 60 && lo.is_multiple_of(60) && hi.is_multiple_of(60) {
                    format!(" ({}–{} min)", lo / 60, hi / 60)
                } else {
                    String::new()
                };
                errors.push(FieldError {
                    field: field.into(),
                    message: format!("must be between {lo} and {hi} seconds{minutes}"),
                });
            }
        };
        let w = &self.watch;
        range("watch.approvalTimeoutSecs", w.approval_timeout_secs, 1, 120);
        range("watch.staleTimeoutSecs", w.stale_timeout_secs, 10, 3600);
        range("watch.idleTimeoutSecs", w.idle_timeout_secs, 60, 86_400);
        range("watch.statusFileTtlSecs", w.status_file_ttl_secs, 10, 86_400);
        // At most the hook's own bound (the installed hook's timeout is 10 s more).
        range("watch.answerWaitSecs", w.answer_wait_secs, 10, 300);
        errors.extend(self.limits.validate());
        let a = &self.agent;
        let field = |f: &str, m: &str| FieldError { field: f.into(), message: m.into() };
        if a.command.trim().is_empty() {
            errors.push(field("agent.command", "must not be empty"));
        } else if a.command.contains(['\0', '\n', '\r']) {
            errors.push(field("agent.command", "must be one line"));
        } else if a.command.len() > 4096 {
            errors.push(field("agent.command", "must be at most 4096 characters"));
        }
        if a.args.len() > 100 {
            errors.push(field("agent.args", "at most 100 arguments"));
        }
        if a.args.iter().any(|arg| arg.contains('\0')) {
            errors.push(field("agent.args", "must not contain NUL characters"));
        }
        if a.args.iter().any(|arg| arg.len() > 4096) {
            errors.push(field("agent.args", "each must be at most 4096 characters"));
        }
        let hosts = &self.machines.hosts;
        if hosts.len() > 50 {
            errors.push(field("machines.hosts", "at most 50 machines"));
        }
        if let Some(e) = hosts.iter().find_map(|h| crate::remote::Destination::parse(h).err()) {
            errors.push(FieldError { field: "machines.hosts".into(), message: e.to_string() });
        }
        if hosts.iter().enumerate().any(|(i, h)| hosts[..i].iter().any(|o| o.trim() == h.trim())) {
            errors.push(field("machines.hosts", "each machine only once"));
        }
        errors
    }
}

/// The unit a settings view shows beside a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Megabytes,
    Percent,
    Count,
}

impl Unit {
    /// As the settings view writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Megabytes => "MB",
            Unit::Percent => "%",
            Unit::Count => "",
        }
    }
}

/// One number of the Settings document and the range the settings view offers. The
/// engine's [`Settings::validate`] accepts every value in it (a test holds both to it);
/// for durations between checks it also takes shorter ones, for trials from the command
/// line. The UI's copy is generated from this table.
#[derive(Debug, Clone, Copy)]
pub struct NumberField {
    /// `section.camelCaseKey`, as in the document and in field errors.
    pub path: &'static str,
    pub min: u64,
    pub max: u64,
    pub unit: Unit,
}

const fn field(path: &'static str, min: u64, max: u64, unit: Unit) -> NumberField {
    NumberField { path, min, max, unit }
}

/// Every number of the Settings document, in the document's order.
pub const NUMBER_FIELDS: &[NumberField] = &[
    field("watch.approvalTimeoutSecs", 1, 120, Unit::Seconds),
    field("watch.staleTimeoutSecs", 10, 3600, Unit::Seconds),
    field("watch.idleTimeoutSecs", 60, 86_400, Unit::Seconds),
    field("watch.statusFileTtlSecs", 10, 86_400, Unit::Seconds),
    field("watch.answerWaitSecs", 10, 300, Unit::Seconds),
    field("limits.maxLiveSessions", 1, 64, Unit::Count),
    field("limits.idleTimeoutSecs", 60, 7200, Unit::Seconds),
    field("limits.maxDurationSecs", 60, 604_800, Unit::Seconds),
    field("limits.durationCheckSecs", 1, 3600, Unit::Seconds),
    field("limits.durationWarnPercent", 1, 99, Unit::Percent),
    field("limits.turnGraceSecs", 0, 600, Unit::Seconds),
    field("limits.maxRssMb", 64, 1_048_576, Unit::Megabytes),
    field("limits.rssCheckSecs", 1, 3600, Unit::Seconds),
    field("limits.killAfterSecs", 1, 120, Unit::Seconds),
    field("limits.diskCheckSecs", 10, 86_400, Unit::Seconds),
    field("limits.diskWarnPercent", 1, 99, Unit::Percent),
    field("limits.diskCleanupPercent", 1, 100, Unit::Percent),
    field("limits.healthCheckSecs", 5, 3600, Unit::Seconds),
    field("limits.orphanCheckSecs", 5, 3600, Unit::Seconds),
    field("limits.recoveryRetries", 0, 10, Unit::Count),
    field("limits.recoveryRetryDelaySecs", 0, 600, Unit::Seconds),
    field("limits.crashDebounceSuccessSecs", 0, 3600, Unit::Seconds),
    field("limits.crashDebounceFailureSecs", 0, 3600, Unit::Seconds),
    field("limits.restartLimitBurst", 1, 100, Unit::Count),
    field("limits.restartLimitWindowSecs", 60, 86_400, Unit::Seconds),
];

/// Why the list of machines was not changed: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostListError {
    #[error("{0} is already in the list")]
    Already(crate::remote::Destination),
    #[error("{0} is not in the list of machines")]
    NotListed(crate::remote::Destination),
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
            json!({"approvalTimeoutSecs": 5, "staleTimeoutSecs": 60, "idleTimeoutSecs": 600, "statusFileTtlSecs": 300, "answerWaitSecs": 300})
        );
        assert_eq!(v["limits"]["maxRssMb"], 4096);
        assert_eq!(v["limits"]["suspendMode"], "terminate");
        assert_eq!(v["limits"]["maxDurationSecs"], 14_400);
        assert_eq!(v["agent"], json!({"command": "claude", "args": []}));
        assert_eq!(v["notifications"]["waitingForApproval"], true);
        assert_eq!(v["desktop"], json!({"startAtLogin": false}), "not started at login unless asked");
        assert_eq!(Settings::from_json(&v), Ok(Settings::default()));
        assert!(Settings::default().validate().is_empty());
    }

    #[test]
    fn partial_documents_keep_defaults() {
        let s =
            Settings::from_json(&json!({"limits": {"maxLiveSessions": 5, "killAfterSecs": 0.5}, "future": 1})).unwrap();
        assert_eq!(s.limits.max_live_sessions, 5);
        assert_eq!(s.limits.kill_after, Duration::from_millis(500));
        assert_eq!(s.limits.idle_timeout, Duration::from_secs(600));
        let s = Settings::from_json(&json!({"limits": {"noSuchLimit": 1}})).unwrap();
        assert_eq!(s, Settings::default(), "unknown keys are ignored in every section");
    }

    #[test]
    fn every_error_names_its_field() {
        let errs = Settings::from_json(&json!({
            "watch": {"approvalTimeoutSecs": "five"},
            "limits": {"idleTimeoutSecs": 30, "suspendMode": "hibernate", "crashPatterns": [""], "maxRssMb": -1,
                       "turnGraceSecs": -3},
            "agent": {"command": ""},
            "notifications": []
        }))
        .unwrap_err();
        let got: Vec<(&str, &str)> = errs.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
        assert_eq!(
            got,
            [
                ("watch.approvalTimeoutSecs", "must be a number"),
                ("limits.suspendMode", "must be terminate or stop"),
                ("limits.turnGraceSecs", "must be a number of seconds of at least 0"),
                ("limits.maxRssMb", "must be a whole number of at least 0"),
                ("notifications", "must be an object"),
                ("limits.idleTimeoutSecs", "must be between 60 and 7200 seconds (1–120 min)"),
                ("limits.crashPatterns", "pattern 1 must not be empty"),
                ("agent.command", "must not be empty"),
            ]
        );
    }

    #[test]
    fn the_ranges_are_the_settings_views() {
        let errs = Settings::from_json(&json!({
            "watch": {"approvalTimeoutSecs": 121, "staleTimeoutSecs": 5},
            "limits": {"maxLiveSessions": 65, "diskWarnPercent": 80, "diskCleanupPercent": 80},
            "agent": {"command": "claude\n--evil", "args": ["a\u{0}b"]},
            "notifications": {"crashed": "yes"},
            "desktop": {"startAtLogin": 1}
        }))
        .unwrap_err();
        let got: Vec<(&str, &str)> = errs.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
        assert_eq!(
            got,
            [
                ("notifications.crashed", "must be true or false"),
                ("desktop.startAtLogin", "must be true or false"),
                ("watch.approvalTimeoutSecs", "must be between 1 and 120 seconds"),
                ("watch.staleTimeoutSecs", "must be between 10 and 3600 seconds"),
                ("limits.maxLiveSessions", "must be between 1 and 64"),
                ("limits.diskCleanupPercent", "must be above the warning level"),
                ("agent.command", "must be one line"),
                ("agent.args", "must not contain NUL characters"),
            ]
        );
    }

    #[test]
    fn the_agent_setting_names_the_supervised_program() {
        let a = AgentSettings { command: "/opt/claude".into(), args: vec!["--verbose".into()] };
        let c = a.command();
        assert_eq!(c.program, std::path::PathBuf::from("/opt/claude"));
        assert_eq!(c.args, ["--verbose"]);
        assert_eq!(c.kind, crate::supervision::AgentKind::ClaudeLike);
    }

    /// The view's ranges (NUMBER_FIELDS) are accepted by the engine at both ends, and the
    /// engine refuses what lies just beyond the view's maximum; every number of the
    /// document is in the table.
    #[test]
    fn the_number_fields_agree_with_validation() {
        let defaults = serde_json::to_value(Settings::default()).unwrap();
        let errors_with = |path: &str, v: u64| {
            let mut doc = defaults.clone();
            let (section, key) = path.split_once('.').unwrap();
            doc[section][key] = json!(v);
            match Settings::from_json(&doc) {
                Ok(_) => vec![],
                Err(errors) => errors.into_iter().filter(|e| e.field == path).collect::<Vec<_>>(),
            }
        };
        for f in NUMBER_FIELDS {
            let (section, key) = f.path.split_once('.').unwrap();
            assert!(defaults[section][key].is_u64(), "{} is a number of the document", f.path);
            let d = defaults[section][key].as_u64().unwrap();
            assert!(f.min <= d && d <= f.max, "{}: the default {d} is in range", f.path);
            // diskCleanupPercent must also stay above diskWarnPercent (80 by default).
            let min = if f.path == "limits.diskCleanupPercent" { 81 } else { f.min };
            assert_eq!(errors_with(f.path, min), vec![], "{} at its minimum", f.path);
            assert_eq!(errors_with(f.path, f.max), vec![], "{} at its maximum", f.path);
            assert_ne!(errors_with(f.path, f.max + 1), vec![], "{} above its maximum", f.path);
        }
        let numbers = ["watch", "limits"]
            .iter()
            .flat_map(|s| defaults[s].as_object().unwrap().iter().map(move |(k, v)| (format!("{s}.{k}"), v.clone())))
            .filter(|(_, v)| v.is_u64())
            .count();
        assert_eq!(numbers, NUMBER_FIELDS.len(), "every number of the document has a range");
    }
}
