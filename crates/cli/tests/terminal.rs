//! What reaches the user's terminal (issue 32 §1), through the real `mimesis` binary: a
//! transcript whose every field carries escape sequences (a clipboard write, title changes,
//! a screen clear, the 8-bit CSI, bidi overrides) prints none of them raw, in text or in
//! JSON, from `ls`, `show` and `watch`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ID: &str = "dddddddd-1111-4000-8000-000000000001";

/// OSC 52 (clipboard), OSC 0 and OSC 2 (title), ED (clear), C1 CSI, DEL, CR, bidi.
const HOSTILE: &str = "x\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;pwned\u{7}\u{1b}]2;pwned\u{1b}\\\u{1b}[2J\u{9b}31m\u{7f}\r\u{202e}\u{2066}y";

fn mimesis(root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mimesis"));
    c.env_remove("CLAUDE_CONFIG_DIR").env("MIMESIS_LOG", "warn").arg("--config-dir").arg(root);
    c.arg("--data-dir").arg(root.join("data"));
    c
}

/// A session whose every field Claude Code's records feed is hostile.
fn hostile_session(root: &Path) {
    let project = root.join("projects/-hostile");
    std::fs::create_dir_all(&project).unwrap();
    let h = HOSTILE;
    let at = |s: u32| format!("2026-11-25T10:00:0{s}.000Z");
    let base = |kind: &str, uuid: &str, s: u32| {
        json!({"type": kind, "uuid": uuid, "timestamp": at(s), "cwd": format!("/work/{h}"), "gitBranch": h,
               "sessionId": ID, "version": "2.1.330"})
    };
    let mut records = vec![];
    let mut r = base("user", "u1", 1);
    r["message"] = json!({"role": "user", "content": h});
    records.push(r);
    let mut r = base("assistant", "a1", 2);
    r["message"] = json!({"id": "m1", "role": "assistant", "model": h, "stop_reason": "tool_use",
        "content": [{"type": "thinking", "thinking": h, "signature": "s"}, {"type": "text", "text": h},
                    {"type": "tool_use", "id": "t1", "name": h, "input": {"command": h}}],
        "usage": {"input_tokens": 1, "output_tokens": 2}});
    records.push(r);
    let mut r = base("user", "u2", 3);
    r["message"] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": h, "is_error": true}]});
    records.push(r);
    let mut r = base("assistant", "a2", 4);
    r["message"] = json!({"id": "m2", "role": "assistant", "model": h, "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "t2", "name": h, "input": {"file_path": h}}],
        "usage": {"input_tokens": 1, "output_tokens": 2}});
    records.push(r);
    records.push(json!({"type": "summary", "summary": h, "leafUuid": "a2"}));
    let mut f = std::fs::File::create(project.join(format!("{ID}.jsonl"))).unwrap();
    for r in records {
        writeln!(f, "{r}").unwrap();
    }
}

/// No byte a terminal acts on: C0 but newline and tab, DEL, C1, bidi controls.
fn assert_inert(what: &str, out: &[u8]) {
    let text = String::from_utf8(out.to_vec()).unwrap_or_else(|_| panic!("{what}: not UTF-8"));
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what} printed {bad:?} raw:\n{text}");
}

fn output(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert_inert(&format!("{cmd:?} on stderr"), &out.stderr);
    out.stdout
}

#[test]
fn ls_and_show_print_no_field_of_a_hostile_transcript_raw() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("claude");
    hostile_session(&root);
    for args in [&["ls"][..], &["ls", "--json"], &["show", ID], &["show", ID, "--json"]] {
        let out = output(mimesis(&root).args(args));
        assert_inert(&format!("{args:?}"), &out);
        if args.contains(&"--json") {
            // The same values, escaped: a JSON reader gets every byte back.
            let v: Value = serde_json::from_slice(&out).unwrap();
            let text = v.to_string();
            assert!(text.contains('\u{9b}') && text.contains('\u{202e}'), "the values are kept: {text}");
        } else {
            assert!(String::from_utf8_lossy(&out).contains("x\u{fffd}]"), "{args:?} shows the text around them");
        }
    }
    // The model, by name: before issue 32 `show` printed it as it was.
    let text = String::from_utf8(output(mimesis(&root).args(["show", ID]))).unwrap();
    assert!(text.contains("● Claude x\u{fffd}]52;c;"), "{text}");
}

#[test]
fn watch_prints_no_field_of_a_hostile_transcript_raw() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("claude");
    hostile_session(&root);
    for json in [false, true] {
        let mut cmd = mimesis(&root);
        cmd.arg("watch");
        if json {
            cmd.arg("--json");
        }
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut child = Killed(child);
        let out = child.0.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).split(b'\n').map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).expect("the session's line");
            if String::from_utf8_lossy(&line).contains(&ID[..8]) {
                break line;
            }
        };
        assert_inert(&format!("watch (json: {json})"), &line);
    }
}

/// A child killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
