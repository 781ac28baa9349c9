//! Demo mode (SPEC X2): generated sessions that live, for a newcomer with no Claude Code.
//!
//! The demo writes real transcript files under a config root of its own, one record at a
//! time, on a timer, the way the CLI does. The engine watches that root like any other,
//! so the demo shows the real pipeline (watcher, tailer, parser, state machine) at work.
//! It never touches the user's own config roots. It keeps no live registry (it has no
//! processes): its root has no `sessions/` folder, so its sessions are read from their
//! transcripts (working, waiting for approval, waiting for input), as any session whose
//! registry cannot be read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use mimesis_core::clock::{Clock, SystemClock};
use mimesis_core::status::Timeouts;

/// A running demo. Dropping it (or [`Demo::stop`]) stops the writers; the files stay.
pub struct Demo {
    root: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl Demo {
    /// The config root the demo writes (`<root>/projects/...`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the demo in `root` (created if needed; earlier demo files are replaced).
/// `speed` > 1 makes everything happen faster. Must run within a tokio runtime.
pub fn start(root: &Path, speed: f64) -> std::io::Result<Demo> {
    if root.join("projects").exists() {
        std::fs::remove_dir_all(root.join("projects"))?;
    }
    // The user's alone, like everything Mimesis writes (`mimesis_os::private`).
    mimesis_os::private::create_dir_all(root)?;
    let mut tasks = Vec::new();
    for (i, script) in scripts().into_iter().enumerate() {
        let cwd = root.join("workspace").join(script.project);
        mimesis_os::private::create_dir_all(&cwd.join(".git"))?;
        let dir = root.join("projects").join(encode_cwd(&cwd));
        mimesis_os::private::create_dir_all(&dir)?;
        let session = DemoSession::new(dir, cwd, script.branch, i as u64 + 1);
        // An old, finished session first, so the roster shows history as well as life.
        session.write_history(&script)?;
        tasks.push(tokio::spawn(session.run(script, speed.max(0.01))));
    }
    Ok(Demo { root: root.to_owned(), tasks })
}

/// The project folder name Claude Code derives from a cwd.
pub fn encode_cwd(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

#[derive(Clone)]
enum Step {
    Prompt(&'static str),
    Think(&'static str),
    Say(&'static str),
    /// A tool call; `approve_after` seconds of waiting for the user when it prompts.
    Tool {
        name: &'static str,
        input: Value,
        output: &'static str,
        approve_after: Option<f64>,
        error: bool,
    },
    Ask(&'static str),
    EndTurn(&'static str),
    Compact,
    ApiError,
    Pause(f64),
}

struct Script {
    project: &'static str,
    branch: &'static str,
    model: &'static str,
    steps: Vec<Step>,
}

fn tool(name: &'static str, input: Value, output: &'static str) -> Step {
    Step::Tool { name, input, output, approve_after: None, error: false }
}

fn gated(name: &'static str, input: Value, output: &'static str, wait: f64) -> Step {
    Step::Tool { name, input, output, approve_after: Some(wait), error: false }
}

fn scripts() -> Vec<Script> {
    use Step::*;
    vec![
        Script {
            project: "acme-api",
            branch: "feature/rate-limits",
            model: "claude-opus-4-8",
            steps: vec![
                Prompt("Add per-key rate limiting to the public API and cover it with tests"),
                Think("The limiter should live in middleware; a token bucket per API key keeps it simple."),
                tool(
                    "Grep",
                    json!({"pattern": "fn router", "path": "src"}),
                    "src/http/mod.rs:12: pub fn router() -> Router {",
                ),
                tool(
                    "Read",
                    json!({"file_path": "src/http/mod.rs"}),
                    "pub fn router() -> Router {\n    Router::new()\n}",
                ),
                Say("I'll add a token-bucket middleware keyed by the API key header."),
                gated(
                    "Edit",
                    json!({"file_path": "src/http/limit.rs", "old_string": "", "new_string": "pub struct Limiter;"}),
                    "The file src/http/limit.rs has been updated.",
                    9.0,
                ),
                gated(
                    "Bash",
                    json!({"command": "cargo test -p api limit", "description": "Run the limiter tests"}),
                    "running 6 tests\ntest result: ok. 6 passed",
                    7.0,
                ),
                EndTurn("Rate limiting is in place: 100 requests/minute per key, configurable. All 6 new tests pass."),
                Pause(25.0),
            ],
        },
        Script {
            project: "acme-api",
            branch: "fix/flaky-ci",
            model: "claude-sonnet-4-6",
            steps: vec![
                Prompt("CI is flaky on the integration suite, find out why"),
                tool(
                    "Bash",
                    json!({"command": "gh run list --limit 5", "description": "Recent CI runs"}),
                    "✗ integration  main  2m ago",
                ),
                Step::Tool {
                    name: "Bash",
                    input: json!({"command": "cargo test --test integration", "description": "Run the suite"}),
                    output: "thread 'db::pool' panicked: connection refused",
                    approve_after: Some(4.0),
                    error: true,
                },
                Say("The pool test races the database container start-up."),
                Ask("Should I add a readiness wait to the test harness, or retry the connection in the pool itself?"),
                Pause(30.0),
            ],
        },
        Script {
            project: "web-dashboard",
            branch: "main",
            model: "claude-opus-4-8",
            steps: vec![
                Prompt("Make the sessions table sortable by every column"),
                Think("Sorting state belongs in the URL so views can be shared."),
                tool("Glob", json!({"pattern": "src/**/*.svelte"}), "src/lib/Table.svelte\nsrc/routes/+page.svelte"),
                tool("Read", json!({"file_path": "src/lib/Table.svelte"}), "<table>…</table>"),
                gated(
                    "Write",
                    json!({"file_path": "src/lib/sort.ts", "content": "export type Dir = 'asc' | 'desc';"}),
                    "File created successfully at: src/lib/sort.ts",
                    6.0,
                ),
                EndTurn("Every column sorts now, and the sort is kept in the URL (`?sort=name:asc`)."),
                Pause(20.0),
                Compact,
                Pause(15.0),
            ],
        },
        Script {
            project: "infra",
            branch: "ops/upgrade-postgres",
            model: "claude-haiku-4-5",
            steps: vec![
                Prompt("Plan the Postgres 17 upgrade for staging"),
                tool(
                    "WebFetch",
                    json!({"url": "https://www.postgresql.org/docs/17/release-17.html", "prompt": "breaking changes"}),
                    "Summary of incompatibilities…",
                ),
                tool(
                    "Bash",
                    json!({"command": "terraform plan -target=module.db", "description": "Preview"}),
                    "Plan: 1 to change.",
                ),
                ApiError,
                Pause(8.0),
                EndTurn(
                    "The plan is ready: a blue/green switch with logical replication, about 5 minutes of read-only time.",
                ),
                Pause(40.0),
            ],
        },
    ]
}

struct DemoSession {
    path: PathBuf,
    cwd: String,
    branch: &'static str,
    id: String,
    parent: Option<String>,
    seed: u64,
    clock: SystemClock,
}

impl DemoSession {
    fn new(dir: PathBuf, cwd: PathBuf, branch: &'static str, seed: u64) -> Self {
        let id = uuid::Uuid::new_v4().to_string();
        DemoSession {
            path: dir.join(format!("{id}.jsonl")),
            cwd: cwd.to_string_lossy().into_owned(),
            branch,
            id,
            parent: None,
            seed,
            clock: SystemClock,
        }
    }

    fn jitter(&mut self, base: f64) -> f64 {
        // xorshift: deterministic per session, no dependency
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        base * (0.7 + (self.seed % 600) as f64 / 1000.0)
    }

    fn envelope(&mut self, kind: &str) -> serde_json::Map<String, Value> {
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut m = serde_json::Map::new();
        m.insert("parentUuid".into(), self.parent.clone().map_or(Value::Null, Value::String));
        m.insert("isSidechain".into(), Value::Bool(false));
        m.insert("type".into(), kind.into());
        m.insert("uuid".into(), uuid.clone().into());
        m.insert("timestamp".into(), self.clock.now().to_iso().into());
        m.insert("userType".into(), "external".into());
        m.insert("entrypoint".into(), "cli".into());
        m.insert("cwd".into(), self.cwd.clone().into());
        m.insert("sessionId".into(), self.id.clone().into());
        m.insert("version".into(), "2.1.197".into());
        m.insert("gitBranch".into(), self.branch.into());
        self.parent = Some(uuid);
        m
    }

    fn append(&self, record: Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&record)?;
        line.push(b'\n');
        mimesis_os::private::append(&self.path)?.write_all(&line)
    }

    fn user(&mut self, content: Value, extra: &[(&str, Value)]) -> std::io::Result<()> {
        let mut m = self.envelope("user");
        m.insert("message".into(), json!({"role": "user", "content": content}));
        for (k, v) in extra {
            m.insert((*k).into(), v.clone());
        }
        self.append(Value::Object(m))
    }

    fn assistant(&mut self, model: &str, block: Value, stop: Option<&str>) -> std::io::Result<()> {
        let mut m = self.envelope("assistant");
        let n = self.seed % 997;
        m.insert(
            "message".into(),
            json!({"id": format!("msg_{}", uuid::Uuid::new_v4().simple()), "type": "message", "role": "assistant",
                   "model": model, "content": [block], "stop_reason": stop,
                   "usage": {"input_tokens": 4 + n % 7, "output_tokens": 120 + n, "cache_creation_input_tokens": 800 + n * 3,
                             "cache_read_input_tokens": 14_000 + n * 40}}),
        );
        m.insert("requestId".into(), format!("req_{}", uuid::Uuid::new_v4().simple()).into());
        self.append(Value::Object(m))
    }

    fn system(&mut self, subtype: &str, extra: &[(&str, Value)]) -> std::io::Result<()> {
        let mut m = self.envelope("system");
        m.insert("subtype".into(), subtype.into());
        for (k, v) in extra {
            m.insert((*k).into(), v.clone());
        }
        self.append(Value::Object(m))
    }

    /// A finished session from earlier in the day, in another file.
    fn write_history(&self, script: &Script) -> std::io::Result<()> {
        let mut old = DemoSession::new(
            self.path.parent().unwrap_or(Path::new(".")).to_owned(),
            PathBuf::from(&self.cwd),
            self.branch,
            self.seed + 100,
        );
        if let Some(Step::Prompt(p)) = script.steps.first() {
            old.user(json!(format!("Review yesterday's work before: {}", p.to_lowercase())), &[])?;
        }
        old.assistant(script.model, json!({"type": "text", "text": "Reviewed: nothing blocking."}), Some("end_turn"))?;
        old.system("turn_duration", &[("durationMs", json!(8_400))])?;
        // Backdate it: the roster sorts by activity and shows it as idle history.
        let text = std::fs::read_to_string(&old.path)?;
        let hours_ago = SystemClock.now().millis() - 3 * 3600 * 1000;
        let back = mimesis_core::clock::Timestamp::from_millis(hours_ago).to_iso();
        let rewritten: String = text
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                if let Some(m) = v.as_object_mut() {
                    m.insert("timestamp".into(), back.clone().into());
                }
                format!("{v}\n")
            })
            .collect();
        mimesis_os::private::write(&old.path, rewritten.as_bytes())
    }

    async fn run(mut self, script: Script, speed: f64) {
        loop {
            for step in script.steps.clone() {
                if let Err(e) = self.step(&script, step, speed).await {
                    tracing::warn!(error = %e, "demo writer stopped");
                    return;
                }
            }
        }
    }

    async fn sleep(&mut self, secs: f64, speed: f64) {
        let s = self.jitter(secs) / speed;
        tokio::time::sleep(Duration::from_secs_f64(s.max(0.01))).await;
    }

    async fn step(&mut self, script: &Script, step: Step, speed: f64) -> std::io::Result<()> {
        let model = script.model;
        match step {
            Step::Prompt(p) => {
                self.user(json!(p), &[("permissionMode", json!("default")), ("promptSource", json!("typed"))])?;
                self.sleep(2.5, speed).await;
            }
            Step::Think(t) => {
                self.assistant(model, json!({"type": "thinking", "thinking": t, "signature": "demo"}), None)?;
                self.sleep(2.0, speed).await;
            }
            Step::Say(t) => {
                self.assistant(model, json!({"type": "text", "text": t}), None)?;
                self.sleep(1.5, speed).await;
            }
            Step::Tool { name, input, output, approve_after, error } => {
                let id = format!("toolu_{}", uuid::Uuid::new_v4().simple());
                self.assistant(
                    model,
                    json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                    Some("tool_use"),
                )?;
                match approve_after {
                    // A dialog shows for as long as the user takes, and at any speed long
                    // enough for the roster to call it one: with no registry to say so, a
                    // pending call waits for approval once APPROVAL_TIMEOUT has passed.
                    Some(wait) => {
                        let shown = Timeouts::default().approval.as_secs_f64() + 3.0;
                        let s = (self.jitter(wait) / speed).max(shown);
                        tokio::time::sleep(Duration::from_secs_f64(s)).await;
                    }
                    None => self.sleep(1.2, speed).await,
                }
                self.user(
                    json!([{"type": "tool_result", "tool_use_id": id, "content": output, "is_error": error}]),
                    &[("toolUseResult", json!({"stdout": output, "stderr": "", "interrupted": false}))],
                )?;
                self.sleep(1.5, speed).await;
            }
            Step::Ask(q) => {
                self.assistant(model, json!({"type": "text", "text": q}), Some("end_turn"))?;
                self.system("turn_duration", &[("durationMs", json!(41_000)), ("messageCount", json!(9))])?;
            }
            Step::EndTurn(t) => {
                self.assistant(model, json!({"type": "text", "text": t}), Some("end_turn"))?;
                self.system("turn_duration", &[("durationMs", json!(63_000)), ("messageCount", json!(12))])?;
            }
            Step::Compact => {
                self.user(json!("<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"), &[])?;
                self.sleep(3.0, speed).await;
                let parent = self.parent.clone();
                self.system(
                    "compact_boundary",
                    &[
                        ("content", json!("Conversation compacted")),
                        ("compactMetadata", json!({"trigger": "manual", "preTokens": 48_211})),
                        ("logicalParentUuid", parent.map_or(Value::Null, Value::String)),
                    ],
                )?;
                self.user(
                    json!("This session is being continued from a previous conversation that ran out of context. The table now sorts by every column; the sort lives in the URL."),
                    &[("isCompactSummary", json!(true)), ("isVisibleInTranscriptOnly", json!(true))],
                )?;
            }
            Step::ApiError => {
                self.system(
                    "api_error",
                    &[
                        ("level", json!("error")),
                        ("error", json!({"status": 529, "error": {"message": "Overloaded"}})),
                        ("retryInMs", json!(4000)),
                        ("retryAttempt", json!(1)),
                    ],
                )?;
            }
            Step::Pause(s) => self.sleep(s, speed).await,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_cwds_like_claude_code() {
        assert_eq!(encode_cwd(Path::new("/home/me/.agents")), "-home-me--agents");
        assert_eq!(encode_cwd(Path::new("/a b/ü")), "-a-b--");
    }
}
