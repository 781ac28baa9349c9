//! The CLI contract of the spine issue (X1), through the real `mimesis` binary: other tools
//! parse this output, so field names, kinds, exit codes and the event stream are checked
//! exactly, not through the engine's Rust types.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const A: &str = "aaaaaaaa-1111-4000-8000-000000000001";
const B: &str = "bbbbbbbb-2222-4000-8000-000000000002";

fn mimesis() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mimesis"));
    c.env_remove("CLAUDE_CONFIG_DIR").env("MIMESIS_LOG", "warn");
    c
}

fn now_iso(offset_secs: i64) -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
        + offset_secs * 1000;
    mimesis_core::Timestamp::from_millis(ms).to_iso()
}

fn rec(kind: &str, uuid: &str, ago: i64, extra: Value) -> Value {
    let mut v = json!({"type": kind, "uuid": uuid, "timestamp": now_iso(-ago), "cwd": "/work/contract",
                       "gitBranch": "main", "sessionId": "x", "version": "2.1.197"});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn write_lines(path: &Path, records: &[Value]) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    for r in records {
        writeln!(f, "{r}").unwrap();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

/// Session A: a finished turn with a tool call, thinking, usage split over two records of
/// one API message. Session B: a prompt, then a pending Bash call.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("claude");
    let project = root.join("projects/-work-contract");
    std::fs::create_dir_all(&project).unwrap();
    let usage = json!({"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40});
    write_lines(
        &project.join(format!("{A}.jsonl")),
        &[
            rec("user", "a1", 100, json!({"message": {"role": "user", "content": "Fix the parser"}})),
            rec(
                "assistant",
                "a2",
                99,
                json!({"requestId": "req_1", "message": {"id": "msg_1", "model": "claude-opus-4-8", "role": "assistant",
                "content": [{"type": "thinking", "thinking": "Look at it", "signature": "s"}], "usage": usage}}),
            ),
            rec(
                "assistant",
                "a3",
                98,
                json!({"requestId": "req_1", "message": {"id": "msg_1", "model": "claude-opus-4-8", "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/work/contract/src/lib.rs"}}],
                "usage": usage}}),
            ),
            rec(
                "user",
                "a4",
                97,
                json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}", "is_error": false}]}}),
            ),
            rec(
                "assistant",
                "a5",
                96,
                json!({"requestId": "req_2", "message": {"id": "msg_2", "model": "claude-opus-4-8", "role": "assistant", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "Fixed."}], "usage": {"input_tokens": 1, "output_tokens": 2}}}),
            ),
            rec("system", "a6", 96, json!({"subtype": "turn_duration", "durationMs": 4000})),
        ],
    );
    write_lines(
        &project.join(format!("{B}.jsonl")),
        &[
            rec("user", "b1", 50, json!({"message": {"role": "user", "content": "Run the tests"}})),
            rec(
                "assistant",
                "b2",
                49,
                json!({"requestId": "req_3", "message": {"id": "msg_3", "model": "claude-sonnet-4-8", "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "cargo test"}}]}}),
            ),
        ],
    );
    Fixture { _dir: dir, root, project }
}

fn run_json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{cmd:?} printed no JSON ({e}): {:?}", out.stdout))
}

const SESSION_FIELDS: [&str; 25] = [
    "sessionId",
    "projectId",
    "cwd",
    "repoRoot",
    "branch",
    "goal",
    "summary",
    "status",
    "hasPendingToolUse",
    "pendingTool",
    "lastActivityAt",
    "createdAt",
    "model",
    "usage",
    "apiError",
    "compactionCount",
    "superseded",
    "supersededBy",
    "workChainId",
    "source",
    "live",
    "pid",
    "transcriptPath",
    "supersededAt",
    "workChainName",
];

#[test]
fn ls_json_prints_every_contract_field() {
    let f = fixture();
    let v = run_json(mimesis().arg("--config-dir").arg(&f.root).args(["ls", "--json"]));
    let sessions = v.as_array().expect("an array");
    assert_eq!(sessions.len(), 2);
    for s in sessions {
        for field in SESSION_FIELDS {
            assert!(s.get(field).is_some(), "{field} missing in {s:#}");
        }
        assert!(s["lastActivityAt"].as_str().unwrap().ends_with('Z'));
        assert_eq!(s["source"], "watcher");
        assert_eq!(s["live"], false);
        assert_eq!(s["pid"], Value::Null);
        assert_eq!(s["projectId"], "-work-contract");
        assert_eq!(s["cwd"], "/work/contract");
        assert_eq!(s["branch"], "main");
    }
    let a = sessions.iter().find(|s| s["sessionId"] == A).unwrap();
    assert_eq!(a["status"], "waiting_for_input");
    assert_eq!(a["goal"], "Fix the parser");
    assert_eq!(a["model"], "claude-opus-4-8");
    // msg_1's two records are one API message: counted once.
    assert_eq!(
        a["usage"],
        json!({"inputTokens": 11, "outputTokens": 22, "cacheCreationInputTokens": 30, "cacheReadInputTokens": 40})
    );
    assert_eq!(a["hasPendingToolUse"], false);
    assert_eq!(a["pendingTool"], Value::Null);
    assert_eq!(a["apiError"], false);
    assert_eq!(a["compactionCount"], 0);
    assert_eq!(a["superseded"], false);
    assert_eq!(a["transcriptPath"], f.project.join(format!("{A}.jsonl")).to_str().unwrap());
    let b = sessions.iter().find(|s| s["sessionId"] == B).unwrap();
    assert_eq!(b["hasPendingToolUse"], true);
    assert_eq!(b["pendingTool"], json!({"tool": "Bash", "target": "cargo test"}));
    // Pending for 49 s with nothing allowing Bash: past the 5 s approval timeout.
    assert_eq!(b["status"], "waiting_for_approval");
    // Most recently active first.
    assert_eq!(sessions[0]["sessionId"], B);
}

#[test]
fn config_dir_env_is_a_comma_separated_list() {
    let f = fixture();
    let other = tempfile::tempdir().unwrap();
    let list = format!("{},{}", other.path().display(), f.root.display());
    let v = run_json(mimesis().env("CLAUDE_CONFIG_DIR", list).args(["ls", "--json"]));
    assert_eq!(v.as_array().unwrap().len(), 2);
}

#[test]
fn show_json_items_have_kind_uuid_timestamp() {
    let f = fixture();
    let v = run_json(mimesis().arg("--config-dir").arg(&f.root).args(["show", A, "--json"]));
    let items = v.as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["prompt", "thinking", "tool_call", "assistant_text", "system"]);
    for i in items {
        assert!(i["uuid"].is_string() && i["timestamp"].is_string(), "{i}");
    }
    let call = &items[2];
    assert_eq!(call["tool"], "Read");
    assert_eq!(call["input"], json!({"file_path": "/work/contract/src/lib.rs"}));
    assert_eq!(call["result"]["content"], "fn main() {}");
    assert_eq!(call["result"]["isError"], false);
    // A pending call has a null result; a unique prefix finds the session.
    let v = run_json(mimesis().arg("--config-dir").arg(&f.root).args(["show", &B[..8], "--json"]));
    let last = v.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "tool_call");
    assert_eq!(last["result"], Value::Null);
}

#[test]
fn errors_go_to_stderr_with_exit_codes() {
    let f = fixture();
    let out = mimesis().args(["ls", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "bad usage exits 2");
    assert!(out.stdout.is_empty());
    assert!(!out.stderr.is_empty());
    let out = mimesis()
        .arg("--config-dir")
        .arg(&f.root)
        .args(["show", "ffffffff-0000-4000-8000-000000000000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "an unknown session is a failure");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session with id"));
    let out = mimesis().arg("--config-dir").arg(&f.root).args(["show", "../../etc/passwd"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

struct Watch {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Watch {
    fn start(root: &Path) -> Watch {
        Watch::start_in(root.parent().unwrap(), root)
    }

    /// `mimesis --config-dir <root> watch --json` run in `cwd` (`root` may be relative to it).
    fn start_in(cwd: &Path, root: &Path) -> Watch {
        let mut child = mimesis()
            .current_dir(cwd)
            .arg("--config-dir")
            .arg(root)
            .args(["watch", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    fn next_where(&self, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
        // (A ceiling for a loaded machine: the events come in milliseconds.)
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if cond(&v) => return v,
                Ok(_) => {}
                Err(_) => panic!("no event {what} within 30 s"),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_json_streams_discovered_updated_removed_and_ends_on_sigterm() {
    let f = fixture();
    let mut w = Watch::start(&f.root);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let d = w.next_where("discovered", |v| v["type"] == "discovered");
        assert_eq!(d.as_object().unwrap().len(), 2, "{d}");
        assert!(d.get("seq").is_none(), "no seq on the CLI stream");
        seen.push(d["session"]["sessionId"].as_str().unwrap().to_owned());
    }
    seen.sort();
    assert_eq!(seen, [A, B]);
    // The pending call gets its result: only the changed fields are reported.
    write_lines(
        &f.project.join(format!("{B}.jsonl")),
        &[rec(
            "user",
            "b3",
            0,
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok", "is_error": false}]}}),
        )],
    );
    // (The update of this write: another update of B, from its first read say, may come first.)
    let u = w.next_where("updated for B, its call answered", |v| {
        v["type"] == "updated" && v["sessionId"] == B && v["changes"]["hasPendingToolUse"] == json!(false)
    });
    let changes = u["changes"].as_object().unwrap();
    assert_eq!(changes.get("status"), Some(&json!("working")), "{u}");
    assert_eq!(changes.get("hasPendingToolUse"), Some(&json!(false)));
    assert!(!changes.contains_key("goal") && !changes.contains_key("sessionId"), "only changed fields: {u}");
    // A new session appears; a deleted one is removed.
    let c = "cccccccc-3333-4000-8000-000000000003";
    write_lines(
        &f.project.join(format!("{c}.jsonl")),
        &[rec("user", "c1", 0, json!({"message": {"role": "user", "content": "Third"}}))],
    );
    let d = w.next_where("discovered C", |v| v["type"] == "discovered" && v["session"]["sessionId"] == c);
    assert_eq!(d["session"]["goal"], "Third");
    std::fs::remove_file(f.project.join(format!("{A}.jsonl"))).unwrap();
    let r = w.next_where("removed A", |v| v["type"] == "removed");
    assert_eq!(r, json!({"type": "removed", "sessionId": A}));
    // SIGTERM ends it cleanly.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(w.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = w.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "watch did not end on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_relative_config_dir_is_followed_live_with_absolute_paths() {
    let f = fixture();
    let base = f.root.parent().unwrap();
    let v = run_json(mimesis().current_dir(base).args(["--config-dir", "claude", "ls", "--json"]));
    let want = f.project.join(format!("{A}.jsonl"));
    assert!(v.as_array().unwrap().iter().any(|s| s["transcriptPath"] == want.to_str().unwrap()), "{v:#}");
    let v = run_json(mimesis().current_dir(base).env("CLAUDE_CONFIG_DIR", "./claude").args(["ls", "--json"]));
    assert_eq!(v.as_array().unwrap().len(), 2);
    let w = Watch::start_in(base, Path::new("claude"));
    w.next_where("the first roster", |v| v["type"] == "discovered");
    write_lines(
        &f.project.join(format!("{B}.jsonl")),
        &[rec(
            "user",
            "b9",
            0,
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok", "is_error": false}]}}),
        )],
    );
    w.next_where("an update seen through the relative root", |v| v["type"] == "updated" && v["sessionId"] == B);
}
