//! Every interval, threshold and timeout of supervision (SPEC P4–P11), with the spec's
//! defaults. The serde shape (camelCase, durations as seconds) is exactly the `limits`
//! object of the settings in docs/ipc.md.
//!
//! Values come from, in order: the defaults, the settings document stored in the fleet
//! database, environment variables with the seeds' names ([`Limits::apply_env`],
//! [`LimitsEnv`]), and for `mimesis run` its command-line flags. The desktop app takes the
//! stored settings with the environment's overrides on top, and re-applies the same
//! overrides to every later change made in the settings view. [`Limits::validate`]
//! returns one error per bad field, worded for a person. This is the one limits type:
//! the settings document's `limits` object is this struct.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::budget::{Usd, check_usd};

/// How an idle session is suspended (P6).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SuspendMode {
    /// SIGTERM, grace, SIGKILL; the next message resumes with `--resume` (frees memory).
    #[default]
    Terminate,
    /// SIGSTOP / SIGCONT: instant resume, but the process keeps its memory (opt-in).
    Stop,
}

/// The `limits` settings. Durations are written as seconds (fractions allowed).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// P7: at most this many sessions have a live process; over it the least recently
    /// used idle one is suspended.
    pub max_live_sessions: u32,
    /// P6: idle time after a finished turn before the session is suspended.
    #[serde(rename = "idleTimeoutSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub idle_timeout: Duration,
    pub suspend_mode: SuspendMode,
    /// P8: the longest a supervised session runs (MAX_SESSION_DURATION_SECONDS).
    #[serde(rename = "maxDurationSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub max_duration: Duration,
    #[serde(rename = "durationCheckSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub duration_check: Duration,
    /// The warning is sent at this share of `max_duration`.
    pub duration_warn_percent: u8,
    /// P8/P9: how long an in-flight turn may finish before it is interrupted.
    #[serde(rename = "turnGraceSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub turn_grace: Duration,
    /// P9: RSS of the session's process tree above which it is restarted (MAX_SESSION_RSS_MB).
    pub max_rss_mb: u64,
    #[serde(rename = "rssCheckSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub rss_check: Duration,
    /// SIGTERM (or `/exit`) to SIGKILL.
    #[serde(rename = "killAfterSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub kill_after: Duration,
    /// P10: disk usage of the config root's filesystem.
    #[serde(rename = "diskCheckSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub disk_check: Duration,
    pub disk_warn_percent: u8,
    pub disk_cleanup_percent: u8,
    /// P13: liveness check of each session's process.
    #[serde(rename = "healthCheckSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub health_check: Duration,
    /// P11: scan for orphaned processes and zombies.
    #[serde(rename = "orphanCheckSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub orphan_check: Duration,
    /// P5: resume attempts after an abnormal exit before one-shot mode.
    pub recovery_retries: u32,
    #[serde(rename = "recoveryRetryDelaySecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub recovery_retry_delay: Duration,
    /// P4: crash detections are ignored this long after a successful recovery…
    #[serde(rename = "crashDebounceSuccessSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub crash_debounce_success: Duration,
    /// …and this long after a failed one.
    #[serde(rename = "crashDebounceFailureSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub crash_debounce_failure: Duration,
    /// P3: regular expressions that mean the harness crashed.
    pub crash_patterns: Vec<String>,
    /// R2, like systemd's start limit: at most this many automatic restarts (memory,
    /// disk, crash recovery) within `restart_limit_window`; past it they stop, and say why.
    pub restart_limit_burst: u32,
    #[serde(rename = "restartLimitWindowSecs", with = "secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub restart_limit_window: Duration,
    /// Apply the memory and duration limits to Claude Code's background sessions too
    /// (issue 33): a memory restart is `claude respawn`, the end of the duration limit
    /// `claude stop`; off by default.
    pub background_sessions: bool,
    /// Issue 36: the budget of each supervised session in US dollars (null: none); at 80 %
    /// a warning, at 100 % the session is suspended at its next idle moment.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub budget_usd: Option<Usd>,
    /// Issue 36: the budget of the whole fleet for a local day, in US dollars (null: none).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub daily_budget_usd: Option<Usd>,
}

/// The shortest duration any limit, check interval, grace or delay may have (other than
/// none, where none is allowed): shorter would be taken and enforce nothing, since the
/// supervision's clock counts milliseconds (a `0.4ms` limit is over before it moves), or
/// check all the time.
pub const MIN_DURATION: Duration = Duration::from_millis(100);

/// The pattern of seed 002: a JavaScript stack overflow in the TUI harness.
pub const DEFAULT_CRASH_PATTERN: &str = "RangeError: Maximum call stack size exceeded";
/// At most this many crash patterns, each at most this long (as the settings view).
pub const MAX_CRASH_PATTERNS: usize = 32;
pub const MAX_CRASH_PATTERN_LEN: usize = 500;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_live_sessions: 3,
            idle_timeout: Duration::from_secs(600),
            suspend_mode: SuspendMode::Terminate,
            max_duration: Duration::from_secs(4 * 3600),
            duration_check: Duration::from_secs(60),
            duration_warn_percent: 90,
            turn_grace: Duration::from_secs(30),
            max_rss_mb: 4096,
            rss_check: Duration::from_secs(30),
            kill_after: Duration::from_secs(5),
            disk_check: Duration::from_secs(300),
            disk_warn_percent: 80,
            disk_cleanup_percent: 95,
            health_check: Duration::from_secs(60),
            orphan_check: Duration::from_secs(60),
            recovery_retries: 2,
            recovery_retry_delay: Duration::from_secs(2),
            crash_debounce_success: Duration::from_secs(30),
            crash_debounce_failure: Duration::from_secs(5),
            crash_patterns: vec![DEFAULT_CRASH_PATTERN.to_owned()],
            restart_limit_burst: 5,
            restart_limit_window: Duration::from_secs(30 * 60),
            background_sessions: false,
            budget_usd: None,
            daily_budget_usd: None,
        }
    }
}

/// One invalid setting: `field` is its path in the settings document
/// (`limits.idleTimeoutSecs`), or the environment variable / flag it came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Environment variables read by [`Limits::apply_env`]. The first two are the seeds'
/// names; the rest follow their style. Durations accept `90`, `90s`, `500ms`, `4h`.
pub const ENV_VARS: &[&str] = &[
    "MAX_SESSION_DURATION_SECONDS",
    "MAX_SESSION_RSS_MB",
    "MAX_LIVE_SESSIONS",
    "SESSION_IDLE_TIMEOUT_SECONDS",
    "SESSION_SUSPEND_MODE",
    "DURATION_CHECK_INTERVAL_SECONDS",
    "DURATION_WARN_PERCENT",
    "TURN_GRACE_SECONDS",
    "RSS_CHECK_INTERVAL_SECONDS",
    "KILL_AFTER_SECONDS",
    "DISK_CHECK_INTERVAL_SECONDS",
    "DISK_WARN_PERCENT",
    "DISK_CLEANUP_PERCENT",
    "HEALTH_CHECK_INTERVAL_SECONDS",
    "ORPHAN_CHECK_INTERVAL_SECONDS",
    "RECOVERY_RETRIES",
    "RECOVERY_RETRY_DELAY_SECONDS",
    "CRASH_DEBOUNCE_SUCCESS_SECONDS",
    "CRASH_DEBOUNCE_FAILURE_SECONDS",
    "CRASH_PATTERNS",
    "RESTART_LIMIT_BURST",
    "RESTART_LIMIT_WINDOW_SECONDS",
];

impl Limits {
    /// The JSON names of the fields, in the document's order (docs/ipc.md).
    pub const FIELDS: [&'static str; 25] = [
        "maxLiveSessions",
        "idleTimeoutSecs",
        "suspendMode",
        "maxDurationSecs",
        "durationCheckSecs",
        "durationWarnPercent",
        "turnGraceSecs",
        "maxRssMb",
        "rssCheckSecs",
        "killAfterSecs",
        "diskCheckSecs",
        "diskWarnPercent",
        "diskCleanupPercent",
        "healthCheckSecs",
        "orphanCheckSecs",
        "recoveryRetries",
        "recoveryRetryDelaySecs",
        "crashDebounceSuccessSecs",
        "crashDebounceFailureSecs",
        "crashPatterns",
        "restartLimitBurst",
        "restartLimitWindowSecs",
        "backgroundSessions",
        "budgetUsd",
        "dailyBudgetUsd",
    ];

    /// The idle-timeout range users may set (SPEC P6: 1–120 min).
    pub const IDLE_TIMEOUT_RANGE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(7200));

    /// Overrides fields from environment variables (see [`ENV_VARS`]); `get` looks one up
    /// (`|k| std::env::var(k).ok()` in production). Unparsable values are reported and
    /// leave the field unchanged.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut dur = |name: &str, slot: &mut Duration| {
            if let Some(v) = get(name).filter(|v| !v.trim().is_empty()) {
                match parse_duration(&v) {
                    Ok(d) => *slot = d,
                    Err(e) => errors.push(FieldError { field: name.to_owned(), message: e.to_string() }),
                }
            }
        };
        dur("MAX_SESSION_DURATION_SECONDS", &mut self.max_duration);
        dur("SESSION_IDLE_TIMEOUT_SECONDS", &mut self.idle_timeout);
        dur("DURATION_CHECK_INTERVAL_SECONDS", &mut self.duration_check);
        dur("TURN_GRACE_SECONDS", &mut self.turn_grace);
        dur("RSS_CHECK_INTERVAL_SECONDS", &mut self.rss_check);
        dur("KILL_AFTER_SECONDS", &mut self.kill_after);
        dur("DISK_CHECK_INTERVAL_SECONDS", &mut self.disk_check);
        dur("HEALTH_CHECK_INTERVAL_SECONDS", &mut self.health_check);
        dur("ORPHAN_CHECK_INTERVAL_SECONDS", &mut self.orphan_check);
        dur("RECOVERY_RETRY_DELAY_SECONDS", &mut self.recovery_retry_delay);
        dur("CRASH_DEBOUNCE_SUCCESS_SECONDS", &mut self.crash_debounce_success);
        dur("CRASH_DEBOUNCE_FAILURE_SECONDS", &mut self.crash_debounce_failure);
        dur("RESTART_LIMIT_WINDOW_SECONDS", &mut self.restart_limit_window);
        fn num<T: std::str::FromStr>(
            get: &dyn Fn(&str) -> Option<String>,
            errors: &mut Vec<FieldError>,
            name: &str,
            slot: &mut T,
        ) {
            if let Some(v) = get(name).filter(|v| !v.trim().is_empty()) {
                match v.trim().parse() {
                    Ok(n) => *slot = n,
                    Err(_) => errors
                        .push(FieldError { field: name.to_owned(), message: format!("{v:?} is not a whole number") }),
                }
            }
        }
        num(&get, &mut errors, "MAX_SESSION_RSS_MB", &mut self.max_rss_mb);
        num(&get, &mut errors, "MAX_LIVE_SESSIONS", &mut self.max_live_sessions);
        num(&get, &mut errors, "DURATION_WARN_PERCENT", &mut self.duration_warn_percent);
        num(&get, &mut errors, "DISK_WARN_PERCENT", &mut self.disk_warn_percent);
        num(&get, &mut errors, "DISK_CLEANUP_PERCENT", &mut self.disk_cleanup_percent);
        num(&get, &mut errors, "RECOVERY_RETRIES", &mut self.recovery_retries);
        num(&get, &mut errors, "RESTART_LIMIT_BURST", &mut self.restart_limit_burst);
        if let Some(v) = get("SESSION_SUSPEND_MODE").filter(|v| !v.trim().is_empty()) {
            match v.trim() {
                "terminate" => self.suspend_mode = SuspendMode::Terminate,
                "stop" => self.suspend_mode = SuspendMode::Stop,
                other => errors.push(FieldError {
                    field: "SESSION_SUSPEND_MODE".into(),
                    message: format!("{other:?} is not a suspend mode (terminate or stop)"),
                }),
            }
        }
        if let Some(v) = get("CRASH_PATTERNS").filter(|v| !v.trim().is_empty()) {
            // One pattern per line: a regex may contain any other separator.
            self.crash_patterns = v.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
        }
        errors
    }

    /// Every problem with these values, one per field, worded as the settings view words
    /// them (ui/src/lib/settings.ts). Empty when all are usable.
    ///
    /// The ranges are the settings view's, with one difference: where the view asks for
    /// at least a few seconds between checks (or a minute of session), the engine takes
    /// down to [`MIN_DURATION`] for every duration, since
    /// `mimesis run` flags and the environment may set short limits (`--max-duration 2s
    /// --duration-check 100ms`) for tests and trials. Shorter is refused: it would be
    /// taken and enforce nothing.
    pub fn validate(&self) -> Vec<FieldError> {
        self.check(false)
    }

    /// [`Limits::validate`] for values given on a command line or in the environment,
    /// which may go below the settings view's minimums (the 1-minute idle timeout, the
    /// 64 MB memory limit) down to [`MIN_DURATION`] and 1 MB: `mimesis run --idle-timeout 2s`
    /// is a trial, not a setting someone clicked.
    pub fn validate_override(&self) -> Vec<FieldError> {
        self.check(true)
    }

    fn check(&self, lax: bool) -> Vec<FieldError> {
        // In the document's order, so errors read top to bottom like the view.
        let mut c = Checks::default();
        c.whole("maxLiveSessions", self.max_live_sessions.into(), 1, 64, "");
        let (lo, hi) = Self::IDLE_TIMEOUT_RANGE;
        if lax {
            c.between("idleTimeoutSecs", self.idle_timeout, MIN_DURATION, hi.as_secs());
        } else if self.idle_timeout < lo || self.idle_timeout > hi {
            // SPEC P6: 1–120 min in the settings.
            c.add("idleTimeoutSecs", "must be between 60 and 7200 seconds (1–120 min)".into());
        }
        c.between("maxDurationSecs", self.max_duration, MIN_DURATION, 604_800);
        c.between("durationCheckSecs", self.duration_check, MIN_DURATION, 3600);
        c.whole("durationWarnPercent", self.duration_warn_percent.into(), 1, 99, " %");
        c.zero_or_between("turnGraceSecs", self.turn_grace, MIN_DURATION, 600);
        c.whole("maxRssMb", self.max_rss_mb, if lax { 1 } else { 64 }, 1_048_576, " MB");
        c.between("rssCheckSecs", self.rss_check, MIN_DURATION, 3600);
        c.between("killAfterSecs", self.kill_after, MIN_DURATION, 120);
        c.between("diskCheckSecs", self.disk_check, MIN_DURATION, 86_400);
        c.whole("diskWarnPercent", self.disk_warn_percent.into(), 1, 99, " %");
        if c.whole("diskCleanupPercent", self.disk_cleanup_percent.into(), 1, 100, " %")
            && self.disk_cleanup_percent <= self.disk_warn_percent
        {
            c.add("diskCleanupPercent", "must be above the warning level".into());
        }
        c.between("healthCheckSecs", self.health_check, MIN_DURATION, 3600);
        c.between("orphanCheckSecs", self.orphan_check, MIN_DURATION, 3600);
        c.whole("recoveryRetries", self.recovery_retries.into(), 0, 10, "");
        c.zero_or_between("recoveryRetryDelaySecs", self.recovery_retry_delay, MIN_DURATION, 600);
        c.zero_or_between("crashDebounceSuccessSecs", self.crash_debounce_success, MIN_DURATION, 3600);
        c.zero_or_between("crashDebounceFailureSecs", self.crash_debounce_failure, MIN_DURATION, 3600);
        c.whole("restartLimitBurst", self.restart_limit_burst.into(), 1, 100, "");
        c.between("restartLimitWindowSecs", self.restart_limit_window, MIN_DURATION, 86_400);
        for (field, v) in [("budgetUsd", self.budget_usd), ("dailyBudgetUsd", self.daily_budget_usd)] {
            if let Some(Err(e)) = v.map(|v| check_usd(v.0)) {
                c.add(field, e);
            }
        }
        // One field for the list, as the view shows it (a text box, one pattern a line).
        let field = "crashPatterns";
        if self.crash_patterns.len() > MAX_CRASH_PATTERNS {
            c.add(field, format!("at most {MAX_CRASH_PATTERNS} patterns"));
        }
        for (i, p) in self.crash_patterns.iter().enumerate() {
            let n = i + 1;
            if p.trim().is_empty() {
                c.add(field, format!("pattern {n} must not be empty"));
            } else if p.chars().count() > MAX_CRASH_PATTERN_LEN {
                c.add(field, format!("pattern {n} must be at most {MAX_CRASH_PATTERN_LEN} characters"));
            } else if let Err(e) = regex::Regex::new(p) {
                let why = e.to_string().lines().last().unwrap_or("invalid").trim().to_owned();
                c.add(field, format!("pattern {n} is not a valid regular expression ({why})"));
            }
        }
        c.0
    }

    /// The RSS limit in bytes.
    pub fn max_rss_bytes(&self) -> u64 {
        self.max_rss_mb.saturating_mul(1024 * 1024)
    }
}

/// The errors found so far by [`Limits::validate`], with its kinds of rule.
#[derive(Default)]
struct Checks(Vec<FieldError>);

impl Checks {
    fn add(&mut self, field: &str, message: String) {
        self.0.push(FieldError { field: format!("limits.{field}"), message });
    }

    /// A whole number in `lo..=hi`; `unit` is " MB", " %" or "". True when it is.
    fn whole(&mut self, field: &str, v: u64, lo: u64, hi: u64, unit: &str) -> bool {
        let ok = (lo..=hi).contains(&v);
        if !ok {
            self.add(field, format!("must be between {lo} and {hi}{unit}"));
        }
        ok
    }

    /// A duration of at least `lo` and at most `hi` seconds. One below `lo` but above zero
    /// is named as given: it would pass for a limit and enforce nothing (a `0.4ms` limit is
    /// over before the clock, which counts milliseconds, moves).
    fn between(&mut self, field: &str, d: Duration, lo: Duration, hi: u64) {
        if d < lo || d > Duration::from_secs(hi) {
            let range = format!("must be between {} and {hi} seconds", seconds(lo));
            self.add(field, too_short(range, d, lo));
        }
    }

    /// Zero (none), or a duration of at least `lo` and at most `hi` seconds.
    fn zero_or_between(&mut self, field: &str, d: Duration, lo: Duration, hi: u64) {
        if !d.is_zero() && (d < lo || d > Duration::from_secs(hi)) {
            let range = format!("must be 0, or between {} and {hi} seconds", seconds(lo));
            self.add(field, too_short(range, d, lo));
        }
    }
}

/// `range`, and when `d` is above zero but below `lo`, why it was refused.
fn too_short(range: String, d: Duration, lo: Duration) -> String {
    if d.is_zero() || d >= lo { range } else { format!("{range}; {} is too short to enforce", format_duration(d)) }
}

/// A duration as a number of seconds, as the settings document writes it: `0.1`, `1`.
fn seconds(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The limit overrides set in a process's environment (the variables of [`ENV_VARS`]
/// that are set), captured once so that every later settings change gets the same ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitsEnv(BTreeMap<String, String>);

impl LimitsEnv {
    /// Overrides from name/value pairs (names outside [`ENV_VARS`] are ignored).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> LimitsEnv {
        LimitsEnv(pairs.into_iter().filter(|(k, v)| ENV_VARS.contains(&k.as_str()) && !v.trim().is_empty()).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The variables set, for the logs and `doctor`.
    pub fn names(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }

    /// `base` with these overrides. An override that cannot be read is reported and
    /// skipped; when the overrides would make the limits invalid, `base` is returned
    /// unchanged with the reasons (a bad variable never takes supervision down).
    pub fn apply(&self, base: &Limits) -> (Limits, Vec<FieldError>) {
        let mut l = base.clone();
        let mut errors = l.apply_env(|k| self.0.get(k).cloned());
        let invalid = l.validate_override();
        if invalid.is_empty() {
            return (l, errors);
        }
        errors.extend(invalid.into_iter().map(|e| FieldError {
            message: format!("{} (from the environment; ignored: {})", e.message, self.names().join(", ")),
            ..e
        }));
        (base.clone(), errors)
    }
}

/// Limits given for one run on a command line (`mimesis run`'s flags): each `Some`
/// replaces the value in force; a non-empty `crash_patterns` replaces the list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitFlags {
    pub max_duration: Option<Duration>,
    pub duration_check: Option<Duration>,
    pub max_rss_mb: Option<u64>,
    pub rss_check: Option<Duration>,
    pub idle_timeout: Option<Duration>,
    pub turn_grace: Option<Duration>,
    pub kill_after: Option<Duration>,
    pub crash_patterns: Vec<String>,
    pub budget_usd: Option<Usd>,
}

impl LimitFlags {
    fn apply(&self, l: &mut Limits) {
        let set = |slot: &mut Duration, v: Option<Duration>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(&mut l.max_duration, self.max_duration);
        set(&mut l.duration_check, self.duration_check);
        set(&mut l.rss_check, self.rss_check);
        set(&mut l.idle_timeout, self.idle_timeout);
        set(&mut l.turn_grace, self.turn_grace);
        set(&mut l.kill_after, self.kill_after);
        if let Some(n) = self.max_rss_mb {
            l.max_rss_mb = n;
        }
        if !self.crash_patterns.is_empty() {
            l.crash_patterns = self.crash_patterns.clone();
        }
        if self.budget_usd.is_some() {
            l.budget_usd = self.budget_usd;
        }
    }

    /// The flag that sets a field of the settings document (`limits.maxRssMb` →
    /// `--max-rss-mb`), for messages about it.
    pub fn flag_of(field: &str) -> Option<&'static str> {
        Some(match field {
            "limits.maxDurationSecs" => "--max-duration",
            "limits.durationCheckSecs" => "--duration-check",
            "limits.maxRssMb" => "--max-rss-mb",
            "limits.rssCheckSecs" => "--rss-check",
            "limits.idleTimeoutSecs" => "--idle-timeout",
            "limits.turnGraceSecs" => "--grace",
            "limits.killAfterSecs" => "--kill-after",
            "limits.budgetUsd" => "--budget-usd",
            f if f.starts_with("limits.crashPatterns") => "--crash-pattern",
            _ => return None,
        })
    }
}

/// Where a limit in force comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The stored settings (or their default).
    Settings,
    /// An environment variable ([`ENV_VARS`]).
    Environment,
    /// A command-line flag.
    Flag,
}

/// The limits in force, where each one that is not the stored setting comes from, and
/// what was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective {
    pub limits: Limits,
    /// Fields (JSON names, `maxDurationSecs`) whose value is not the stored setting's.
    pub origins: BTreeMap<String, Origin>,
    /// Environment values that could not be read or made the limits invalid: not applied.
    pub env_errors: Vec<FieldError>,
    /// Flags that made the limits invalid, named by flag: not applied.
    pub flag_errors: Vec<FieldError>,
}

/// The one merge of limits, used by the app, `mimesis run` and the settings view:
/// stored settings < environment < flags. What cannot be applied is reported and left
/// out, so a bad override never takes supervision down; a face decides whether that is
/// a usage error (`mimesis run`) or a warning (the app).
pub fn effective(stored: &Limits, env: &LimitsEnv, flags: &LimitFlags) -> Effective {
    let (with_env, env_errors) = env.apply(stored);
    let mut limits = with_env.clone();
    flags.apply(&mut limits);
    let mut flag_errors = Vec::new();
    if limits != with_env {
        let invalid = limits.validate_override();
        if !invalid.is_empty() {
            flag_errors = invalid
                .into_iter()
                .map(|e| FieldError { field: LimitFlags::flag_of(&e.field).unwrap_or(&e.field).to_owned(), ..e })
                .collect();
            limits = with_env.clone();
        }
    }
    let fields = |l: &Limits| match serde_json::to_value(l) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (base, env_only, all) = (fields(stored), fields(&with_env), fields(&limits));
    let origins = all
        .iter()
        .filter(|(k, v)| base.get(*k) != Some(v))
        .map(|(k, v)| (k.clone(), if env_only.get(k) == Some(v) { Origin::Environment } else { Origin::Flag }))
        .collect();
    Effective { limits, origins, env_errors, flag_errors }
}

/// A duration could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a duration (examples: 500ms, 90s, 10m, 4h, 1h30m; a bare number is seconds)")]
pub struct BadDuration(pub String);

/// Parses `500ms`, `90s`, `10m`, `4h`, `1d`, `1h30m`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, BadDuration> {
    let bad = || BadDuration(s.to_owned());
    let t = s.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return secs_f64(secs).ok_or_else(bad);
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale = match unit {
            "ms" => 0.001,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(bad()),
        };
        total = total.checked_add(secs_f64(value * scale).ok_or_else(bad)?).ok_or_else(bad)?;
    }
    Ok(total)
}

fn secs_f64(v: f64) -> Option<Duration> {
    (v.is_finite() && (0.0..1e12).contains(&v)).then(|| Duration::from_secs_f64(v))
}

/// Writes a duration compactly for messages and flags, as a person would have given it:
/// `0.4ms`, `500ms`, `1.5s`, `90s`, `10m`, `4h` (to the microsecond).
pub fn format_duration(d: Duration) -> String {
    let us = ((d.as_nanos() + 500) / 1000).min(u128::from(u64::MAX)) as u64;
    if !us.is_multiple_of(1_000_000) {
        // "1.500" → "1.5": the digits that carry something.
        let trim =
            |v: f64, places: usize| format!("{v:.places$}").trim_end_matches('0').trim_end_matches('.').to_owned();
        return if us < 1_000_000 {
            format!("{}ms", trim(us as f64 / 1000.0, 3))
        } else {
            format!("{}s", trim(us as f64 / 1_000_000.0, 6))
        };
    }
    let s = us / 1_000_000;
    if s != 0 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// Durations as seconds in JSON: a whole number when whole, else a fraction.
mod secs {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        if d.subsec_nanos() == 0 { s.serialize_u64(d.as_secs()) } else { s.serialize_f64(d.as_secs_f64()) }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        secs_f64(v).ok_or_else(|| serde::de::Error::custom(format!("{v} is not a number of seconds ≥ 0")))
    }
}

#[cfg(test)]
mod effective_tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> LimitsEnv {
        LimitsEnv::from_pairs(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
    }

    #[test]
    fn flags_beat_the_environment_which_beats_the_settings() {
        let stored = Limits { max_rss_mb: 1000, ..Limits::default() };
        let e = effective(
            &stored,
            &env(&[("MAX_SESSION_RSS_MB", "2000"), ("MAX_SESSION_DURATION_SECONDS", "60")]),
            &LimitFlags { max_duration: Some(Duration::from_secs(30)), ..Default::default() },
        );
        assert_eq!(e.limits.max_rss_mb, 2000);
        assert_eq!(e.limits.max_duration, Duration::from_secs(30));
        assert_eq!(e.origins.get("maxRssMb"), Some(&Origin::Environment));
        assert_eq!(e.origins.get("maxDurationSecs"), Some(&Origin::Flag));
        assert_eq!(e.origins.get("killAfterSecs"), None, "the stored setting");
        assert!(e.env_errors.is_empty() && e.flag_errors.is_empty());
    }

    #[test]
    fn what_is_wrong_is_reported_and_left_out() {
        let e = effective(
            &Limits::default(),
            &env(&[("MAX_SESSION_RSS_MB", "lots")]),
            &LimitFlags { kill_after: Some(Duration::ZERO), ..Default::default() },
        );
        assert_eq!(e.env_errors[0].field, "MAX_SESSION_RSS_MB");
        assert_eq!(e.flag_errors[0].field, "--kill-after");
        assert_eq!(e.limits, Limits::default());
        assert!(e.origins.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_serialize_to_the_documented_limits_object() {
        let v = serde_json::to_value(Limits::default()).unwrap();
        let expected = serde_json::json!({
            "maxLiveSessions": 3, "idleTimeoutSecs": 600, "suspendMode": "terminate",
            "maxDurationSecs": 14400, "durationCheckSecs": 60, "durationWarnPercent": 90, "turnGraceSecs": 30,
            "maxRssMb": 4096, "rssCheckSecs": 30, "killAfterSecs": 5,
            "diskCheckSecs": 300, "diskWarnPercent": 80, "diskCleanupPercent": 95,
            "healthCheckSecs": 60, "orphanCheckSecs": 60,
            "recoveryRetries": 2, "recoveryRetryDelaySecs": 2,
            "crashDebounceSuccessSecs": 30, "crashDebounceFailureSecs": 5,
            "crashPatterns": ["RangeError: Maximum call stack size exceeded"],
            "restartLimitBurst": 5, "restartLimitWindowSecs": 1800, "backgroundSessions": false,
            "budgetUsd": null, "dailyBudgetUsd": null
        });
        assert_eq!(v, expected);
        let mut keys: Vec<&str> = expected.as_object().unwrap().keys().map(String::as_str).collect();
        let mut fields = Limits::FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        assert_eq!(keys, fields, "FIELDS names every field");
        let back: Limits = serde_json::from_value(expected).unwrap();
        assert_eq!(back, Limits::default());
        assert!(Limits::default().validate().is_empty());
    }

    #[test]
    fn missing_fields_take_defaults_and_fractions_are_kept() {
        let l: Limits = serde_json::from_str(r#"{"killAfterSecs": 0.5, "maxRssMb": 100}"#).unwrap();
        assert_eq!(l.kill_after, Duration::from_millis(500));
        assert_eq!(l.max_rss_mb, 100);
        assert_eq!(l.idle_timeout, Duration::from_secs(600));
        assert_eq!(serde_json::to_value(&l).unwrap()["killAfterSecs"], serde_json::json!(0.5));
        assert!(serde_json::from_str::<Limits>(r#"{"idleTimeoutSecs": -1}"#).is_err());
        assert!(serde_json::from_str::<Limits>(r#"{"noSuchLimit": 1}"#).is_err());
    }

    #[test]
    fn validation_names_every_bad_field_in_document_order_with_the_views_words() {
        let l = Limits {
            max_live_sessions: 0,
            idle_timeout: Duration::from_secs(30),
            duration_warn_percent: 100,
            max_rss_mb: 10,
            disk_warn_percent: 90,
            disk_cleanup_percent: 85,
            health_check: Duration::ZERO,
            recovery_retry_delay: Duration::from_secs(601),
            crash_patterns: vec!["(unclosed".into(), " ".into(), "x".repeat(501)],
            ..Limits::default()
        };
        let errors: Vec<(String, String)> = l.validate().into_iter().map(|e| (e.field, e.message)).collect();
        let expected = [
            ("limits.maxLiveSessions", "must be between 1 and 64"),
            ("limits.idleTimeoutSecs", "must be between 60 and 7200 seconds (1–120 min)"),
            ("limits.durationWarnPercent", "must be between 1 and 99 %"),
            ("limits.maxRssMb", "must be between 64 and 1048576 MB"),
            ("limits.diskCleanupPercent", "must be above the warning level"),
            ("limits.healthCheckSecs", "must be between 0.1 and 3600 seconds"),
            ("limits.recoveryRetryDelaySecs", "must be 0, or between 0.1 and 600 seconds"),
        ];
        for (i, (f, m)) in expected.iter().enumerate() {
            assert_eq!((errors[i].0.as_str(), errors[i].1.as_str()), (*f, *m));
        }
        let patterns: Vec<&str> = errors[expected.len()..].iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(patterns.len(), 3, "{patterns:?}");
        assert!(patterns[0].starts_with("pattern 1 is not a valid regular expression ("), "{}", patterns[0]);
        assert_eq!(patterns[1], "pattern 2 must not be empty");
        assert_eq!(patterns[2], "pattern 3 must be at most 500 characters");
        assert!(errors[expected.len()..].iter().all(|(f, _)| f == "limits.crashPatterns"));
    }

    #[test]
    fn short_limits_for_tests_pass_and_the_views_upper_bounds_hold() {
        let short = Limits {
            max_duration: Duration::from_secs(2),
            duration_check: Duration::from_millis(100),
            kill_after: Duration::from_millis(500),
            rss_check: Duration::from_millis(200),
            health_check: Duration::from_secs(1),
            ..Limits::default()
        };
        assert!(short.validate().is_empty(), "{:?}", short.validate());
        let long = Limits { max_duration: Duration::from_secs(604_801), ..Limits::default() };
        assert_eq!(long.validate()[0].message, "must be between 0.1 and 604800 seconds");
        let many = Limits { crash_patterns: vec!["a".into(); 33], ..Limits::default() };
        assert_eq!(many.validate()[0].message, "at most 32 patterns");
        assert!(Limits { crash_patterns: vec![], ..Limits::default() }.validate().is_empty());
    }

    #[test]
    fn overrides_go_below_the_views_minimums_but_stay_positive() {
        let trial = Limits { idle_timeout: Duration::from_secs(2), max_rss_mb: 10, ..Limits::default() };
        assert!(trial.validate_override().is_empty(), "{:?}", trial.validate_override());
        let fields: Vec<String> = trial.validate().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["limits.idleTimeoutSecs", "limits.maxRssMb"], "the settings keep their ranges");
        let zero = Limits { idle_timeout: Duration::ZERO, max_rss_mb: 0, ..Limits::default() };
        let errors: Vec<String> = zero.validate_override().into_iter().map(|e| e.message).collect();
        assert_eq!(errors, ["must be between 0.1 and 7200 seconds", "must be between 1 and 1048576 MB"]);
    }

    #[test]
    fn environment_overrides_are_captured_and_never_make_limits_invalid() {
        let env = LimitsEnv::from_pairs([
            ("MAX_SESSION_DURATION_SECONDS".to_owned(), "1h".to_owned()),
            ("PATH".to_owned(), "/bin".to_owned()),
        ]);
        assert_eq!(env.names(), ["MAX_SESSION_DURATION_SECONDS"]);
        let base = Limits { max_live_sessions: 5, ..Limits::default() };
        let (l, errors) = env.apply(&base);
        assert!(errors.is_empty());
        assert_eq!((l.max_duration, l.max_live_sessions), (Duration::from_secs(3600), 5));
        // Below the settings view's minimum is fine from the environment (a trial)…
        let short = LimitsEnv::from_pairs([("SESSION_IDLE_TIMEOUT_SECONDS".to_owned(), "5".to_owned())]);
        let (l, errors) = short.apply(&base);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(l.idle_timeout, Duration::from_secs(5));
        // …zero or above the maximum is not.
        let bad = LimitsEnv::from_pairs([("SESSION_IDLE_TIMEOUT_SECONDS".to_owned(), "0".to_owned())]);
        let (l, errors) = bad.apply(&base);
        assert_eq!(l, base, "an override that would be invalid is not applied");
        assert_eq!(errors[0].field, "limits.idleTimeoutSecs");
        assert!(errors[0].message.contains("SESSION_IDLE_TIMEOUT_SECONDS"), "{}", errors[0].message);
    }

    #[test]
    fn environment_uses_the_seed_names() {
        let env = |k: &str| match k {
            "MAX_SESSION_DURATION_SECONDS" => Some("3600".to_owned()),
            "MAX_SESSION_RSS_MB" => Some("2048".to_owned()),
            "SESSION_IDLE_TIMEOUT_SECONDS" => Some("15m".to_owned()),
            "SESSION_SUSPEND_MODE" => Some("stop".to_owned()),
            "CRASH_PATTERNS" => Some("boom\nFATAL ERROR".to_owned()),
            "DISK_WARN_PERCENT" => Some("lots".to_owned()),
            _ => None,
        };
        let mut l = Limits::default();
        let errors = l.apply_env(env);
        assert_eq!(l.max_duration, Duration::from_secs(3600));
        assert_eq!(l.max_rss_mb, 2048);
        assert_eq!(l.idle_timeout, Duration::from_secs(900));
        assert_eq!(l.suspend_mode, SuspendMode::Stop);
        assert_eq!(l.crash_patterns, ["boom", "FATAL ERROR"]);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "DISK_WARN_PERCENT");
        assert_eq!(l.disk_warn_percent, 80, "a bad value leaves the field unchanged");
    }

    #[test]
    fn durations_parse_in_every_documented_form() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("90s"), Duration::from_secs(90));
        assert_eq!(ok("4h"), Duration::from_secs(4 * 3600));
        assert_eq!(ok("10m"), Duration::from_secs(600));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("45"), Duration::from_secs(45));
        assert_eq!(ok(" 2d "), Duration::from_secs(2 * 86_400));
        for bad in ["", "ms", "5 parsecs", "-3s", "1h-", "abc", "1e400", "NaN"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert!(parse_duration("soon").unwrap_err().to_string().contains("500ms, 90s"));
    }

    /// Issue 32: `--max-duration 0.4ms` passed and enforced nothing (the clock counts
    /// milliseconds: the limit was over before it moved), and checks every 0.4 ms would
    /// run all the time. Each duration has a floor, and what lies under it is named.
    #[test]
    fn durations_too_short_to_enforce_are_refused_with_what_was_given() {
        let field = |l: &Limits, f: &str| l.validate_override().into_iter().find(|e| e.field == f).map(|e| e.message);
        let tiny = Limits {
            max_duration: Duration::from_micros(400),
            duration_check: Duration::from_millis(10),
            rss_check: Duration::from_millis(1),
            idle_timeout: Duration::from_millis(50),
            turn_grace: Duration::from_millis(50),
            kill_after: Duration::from_micros(500),
            ..Limits::default()
        };
        let expected = [
            ("limits.maxDurationSecs", "must be between 0.1 and 604800 seconds; 0.4ms is too short to enforce"),
            ("limits.durationCheckSecs", "must be between 0.1 and 3600 seconds; 10ms is too short to enforce"),
            ("limits.rssCheckSecs", "must be between 0.1 and 3600 seconds; 1ms is too short to enforce"),
            ("limits.idleTimeoutSecs", "must be between 0.1 and 7200 seconds; 50ms is too short to enforce"),
            ("limits.turnGraceSecs", "must be 0, or between 0.1 and 600 seconds; 50ms is too short to enforce"),
            ("limits.killAfterSecs", "must be between 0.1 and 120 seconds; 0.5ms is too short to enforce"),
        ];
        for (f, m) in expected {
            assert_eq!(field(&tiny, f).as_deref(), Some(m), "{f}");
            assert!(tiny.validate().iter().any(|e| e.field == f), "{f}: the settings refuse it too");
        }
        // The floors themselves, and no grace at all, are fine.
        let floors = Limits {
            max_duration: MIN_DURATION,
            idle_timeout: MIN_DURATION,
            duration_check: MIN_DURATION,
            rss_check: MIN_DURATION,
            kill_after: MIN_DURATION,
            turn_grace: Duration::ZERO,
            recovery_retry_delay: MIN_DURATION,
            ..Limits::default()
        };
        assert!(floors.validate_override().is_empty(), "{:?}", floors.validate_override());
        // Through the flags: refused as a usage error, nothing applied.
        let flags = LimitFlags { max_duration: Some(Duration::from_micros(400)), ..Default::default() };
        let e = effective(&Limits::default(), &LimitsEnv::default(), &flags);
        assert_eq!(e.flag_errors[0].field, "--max-duration");
        assert_eq!(e.limits, Limits::default());
        // And through the environment (the seeds' variables).
        let env = LimitsEnv::from_pairs([("MAX_SESSION_DURATION_SECONDS".to_owned(), "0.0004".to_owned())]);
        let (l, errors) = env.apply(&Limits::default());
        assert_eq!(l, Limits::default());
        assert!(errors[0].message.contains("0.4ms is too short to enforce"), "{errors:?}");
    }

    #[test]
    fn durations_format_compactly() {
        assert_eq!(format_duration(Duration::from_micros(400)), "0.4ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(14400)), "4h");
        for s in ["0.4ms", "500ms", "1.5s", "2.25s", "90s", "10m", "4h"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
