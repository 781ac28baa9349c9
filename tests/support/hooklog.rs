//! Claude Code's hook payloads as it sends them: a recording hook for every event, each run
//! writing `{"at": <epoch ms>, "event": …, "payload": <stdin>}` into a file of its own (so
//! hooks running at once never mix), for tests that need the raw payloads and when they
//! came (docs/claude-code-observed.md "Hooks").

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::claude::ClaudeHome;

/// Every event the recorder installs a hook for (Mimesis's own, plus the tool events).
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "Notification",
    "UserPromptSubmit",
    "PermissionRequest",
    "PermissionDenied",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
];

/// One recorded hook run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// When the hook started (epoch ms, from the hook's own `date`).
    pub at_ms: i64,
    pub event: String,
    /// What Claude Code gave the hook on stdin.
    pub payload: Value,
}

/// The recorder installed into a home's `settings.json`.
pub struct HookLog {
    dir: PathBuf,
}

impl HookLog {
    /// Writes `settings.json` with a recording hook for every event of [`EVENTS`] (other
    /// settings are replaced) into `<home>/hooklog/`.
    pub fn install(home: &ClaudeHome) -> Result<HookLog> {
        let dir = home.home().join("hooklog");
        std::fs::create_dir_all(&dir)?;
        let mut hooks = serde_json::Map::new();
        for event in EVENTS {
            // One file per run: `<ns>-<pid>.json`, written whole.
            let command = format!(
                "f={dir}/$(date +%s%N)-$$.json; {{ printf '{{\"at\":%s,\"event\":\"{event}\",\"payload\":' \"$(date +%s%3N)\"; cat; printf '}}\\n'; }} > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"",
                dir = shell_word(&dir),
            );
            hooks.insert(
                (*event).to_owned(),
                json!([{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]),
            );
        }
        home.write_settings(&json!({"hooks": hooks}))?;
        Ok(HookLog { dir })
    }

    /// Every run so far, oldest first.
    pub fn runs(&self) -> Vec<HookRun> {
        let mut runs: Vec<HookRun> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                Some(HookRun {
                    at_ms: v.get("at")?.as_i64()?,
                    event: v.get("event")?.as_str()?.to_owned(),
                    payload: v.get("payload").cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        runs.sort_by_key(|r| r.at_ms);
        runs
    }

    /// The runs of `event`.
    pub fn of(&self, event: &str) -> Vec<HookRun> {
        self.runs().into_iter().filter(|r| r.event == event).collect()
    }

    /// Waits (up to `timeout`) for a run of `event` whose payload satisfies `cond`.
    pub fn wait_for(&self, event: &str, timeout: Duration, cond: impl Fn(&Value) -> bool) -> Result<HookRun> {
        let t0 = Instant::now();
        loop {
            if let Some(run) = self.of(event).into_iter().find(|r| cond(&r.payload)) {
                return Ok(run);
            }
            if t0.elapsed() >= timeout {
                let seen: Vec<String> = self.runs().iter().map(|r| r.event.clone()).collect();
                bail!("no {event} hook within {timeout:?}; seen: {seen:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Now, in epoch milliseconds (to compare with [`HookRun::at_ms`]).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn shell_word(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"))
}
