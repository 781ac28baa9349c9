//! Every interval, threshold and timeout of supervision (SPEC P4–P11), with the spec's
//! defaults. The serde shape (camelCase, durations as seconds) is exactly the `limits`
//! object of the settings in docs/ipc.md.
//!
//! Values come from, in order: the defaults, the settings document, environment variables
//! with the seeds' names ([`Limits::apply_env`]), command-line flags. [`Limits::validate`]
//! returns one error per bad field, worded for a person.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How an idle session is suspended (P6).
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// P7: at most this many sessions have a live process; over it the least recently
    /// used idle one is suspended.
    pub max_live_sessions: u32,
    /// P6: idle time after a finished turn before the session is suspended.
    #[serde(rename = "idleTimeoutSecs", with = "secs")]
    pub idle_timeout: Duration,
    pub suspend_mode: SuspendMode,
    /// P8: the longest a supervised session runs (MAX_SESSION_DURATION_SECONDS).
    #[serde(rename = "maxDurationSecs", with = "secs")]
    pub max_duration: Duration,
    #[serde(rename = "durationCheckSecs", with = "secs")]
    pub duration_check: Duration,
    /// The warning is sent at this share of `max_duration`.
    pub duration_warn_percent: u8,
    /// P8/P9: how long an in-flight turn may finish before it is interrupted.
    #[serde(rename = "turnGraceSecs", with = "secs")]
    pub turn_grace: Duration,
    /// P9: RSS of the session's process tree above which it is restarted (MAX_SESSION_RSS_MB).
    pub max_rss_mb: u64,
    #[serde(rename = "rssCheckSecs", with = "secs")]
    pub rss_check: Duration,
    /// SIGTERM (or `/exit`) to SIGKILL.
    #[serde(rename = "killAfterSecs", with = "secs")]
    pub kill_after: Duration,
    /// P10: disk usage of the config root's filesystem.
    #[serde(rename = "diskCheckSecs", with = "secs")]
    pub disk_check: Duration,
    pub disk_warn_percent: u8,
    pub disk_cleanup_percent: u8,
    /// P13: liveness check of each session's process.
    #[serde(rename = "healthCheckSecs", with = "secs")]
    pub health_check: Duration,
    /// P11: scan for orphaned processes and zombies.
    #[serde(rename = "orphanCheckSecs", with = "secs")]
    pub orphan_check: Duration,
    /// P5: resume attempts after an abnormal exit before one-shot mode.
    pub recovery_retries: u32,
    #[serde(rename = "recoveryRetryDelaySecs", with = "secs")]
    pub recovery_retry_delay: Duration,
    /// P4: crash detections are ignored this long after a successful recovery…
    #[serde(rename = "crashDebounceSuccessSecs", with = "secs")]
    pub crash_debounce_success: Duration,
    /// …and this long after a failed one.
    #[serde(rename = "crashDebounceFailureSecs", with = "secs")]
    pub crash_debounce_failure: Duration,
    /// P3: regular expressions that mean the harness crashed.
    pub crash_patterns: Vec<String>,
}

/// The pattern of seed 002: a JavaScript stack overflow in the TUI harness.
pub const DEFAULT_CRASH_PATTERN: &str = "RangeError: Maximum call stack size exceeded";

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
        }
    }
}

/// One invalid setting: `field` is its path in the settings document
/// (`limits.idleTimeoutSecs`), or the environment variable / flag it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
];

impl Limits {
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

    /// Every problem with these values, one per field. Empty when all are usable.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut err = |field: &str, message: String| {
            errors.push(FieldError { field: format!("limits.{field}"), message });
        };
        let positive = |d: Duration| !d.is_zero();
        if !(1..=100).contains(&self.max_live_sessions) {
            err("maxLiveSessions", "must be between 1 and 100".into());
        }
        let (lo, hi) = Self::IDLE_TIMEOUT_RANGE;
        if self.idle_timeout < lo || self.idle_timeout > hi {
            err("idleTimeoutSecs", "must be between 60 and 7200 seconds (1–120 min)".into());
        }
        if !positive(self.max_duration) {
            err("maxDurationSecs", "must be more than 0 seconds".into());
        }
        if !positive(self.duration_check) {
            err("durationCheckSecs", "must be more than 0 seconds".into());
        } else if positive(self.max_duration) && self.duration_check > self.max_duration {
            err("durationCheckSecs", "must not be longer than maxDurationSecs".into());
        }
        if !(1..=99).contains(&self.duration_warn_percent) {
            err("durationWarnPercent", "must be between 1 and 99".into());
        }
        if self.turn_grace > Duration::from_secs(600) {
            err("turnGraceSecs", "must be at most 600 seconds".into());
        }
        if self.max_rss_mb == 0 {
            err("maxRssMb", "must be at least 1 MB".into());
        }
        if !positive(self.rss_check) {
            err("rssCheckSecs", "must be more than 0 seconds".into());
        }
        if !positive(self.kill_after) || self.kill_after > Duration::from_secs(120) {
            err("killAfterSecs", "must be more than 0 and at most 120 seconds".into());
        }
        if !positive(self.disk_check) {
            err("diskCheckSecs", "must be more than 0 seconds".into());
        }
        if !(1..=100).contains(&self.disk_warn_percent) {
            err("diskWarnPercent", "must be between 1 and 100".into());
        }
        if !(1..=100).contains(&self.disk_cleanup_percent) {
            err("diskCleanupPercent", "must be between 1 and 100".into());
        } else if self.disk_cleanup_percent < self.disk_warn_percent {
            err("diskCleanupPercent", "must not be below diskWarnPercent".into());
        }
        if !positive(self.health_check) {
            err("healthCheckSecs", "must be more than 0 seconds".into());
        }
        if !positive(self.orphan_check) {
            err("orphanCheckSecs", "must be more than 0 seconds".into());
        }
        if self.recovery_retries > 10 {
            err("recoveryRetries", "must be at most 10".into());
        }
        if self.recovery_retry_delay > Duration::from_secs(300) {
            err("recoveryRetryDelaySecs", "must be at most 300 seconds".into());
        }
        if self.crash_debounce_success > Duration::from_secs(3600) {
            err("crashDebounceSuccessSecs", "must be at most 3600 seconds".into());
        }
        if self.crash_debounce_failure > Duration::from_secs(3600) {
            err("crashDebounceFailureSecs", "must be at most 3600 seconds".into());
        }
        for (i, p) in self.crash_patterns.iter().enumerate() {
            if p.trim().is_empty() {
                err(&format!("crashPatterns[{i}]"), "must not be empty".into());
            } else if let Err(e) = regex::Regex::new(p) {
                let first = e.to_string().lines().last().unwrap_or("invalid").trim().to_owned();
                err(&format!("crashPatterns[{i}]"), format!("is not a valid regular expression ({first})"));
            }
        }
        errors
    }

    /// The RSS limit in bytes.
    pub fn max_rss_bytes(&self) -> u64 {
        self.max_rss_mb.saturating_mul(1024 * 1024)
    }
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

/// Writes a duration compactly for messages and flags: `500ms`, `90s`, `10m`, `4h`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
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
            "crashPatterns": ["RangeError: Maximum call stack size exceeded"]
        });
        assert_eq!(v, expected);
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
    fn validation_names_every_bad_field() {
        let l = Limits {
            max_live_sessions: 0,
            idle_timeout: Duration::from_secs(30),
            duration_warn_percent: 100,
            disk_warn_percent: 90,
            disk_cleanup_percent: 85,
            crash_patterns: vec!["(unclosed".into(), " ".into()],
            ..Limits::default()
        };
        let fields: Vec<String> = l.validate().into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "limits.maxLiveSessions",
                "limits.idleTimeoutSecs",
                "limits.durationWarnPercent",
                "limits.diskCleanupPercent",
                "limits.crashPatterns[0]",
                "limits.crashPatterns[1]"
            ]
        );
        let idle = l.validate().into_iter().find(|e| e.field == "limits.idleTimeoutSecs").unwrap();
        assert_eq!(idle.message, "must be between 60 and 7200 seconds (1–120 min)");
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

    #[test]
    fn durations_format_compactly() {
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(14400)), "4h");
        for s in ["500ms", "90s", "10m", "4h"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
