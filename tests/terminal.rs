//! What reaches the user's terminal (issue 32 §1), through the real `mimesis` binary: a
//! transcript whose every field carries escape sequences (a clipboard write, title changes,
//! a screen clear, the 8-bit CSI, bidi overrides) prints none of them raw, in text or in
//! JSON, from `ls`, `show` and `watch`. (The same from another machine: tests/remote.rs.)

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_tests::mimesis::{HOSTILE, ensure_inert, stdout_lines};
use serde_json::{Value, json};

const ID: &str = "dddddddd-1111-4000-8000-000000000001";

fn mimesis(root: &Path) -> Result<Command> {
    let mut c = Command::new(mimesis_tests::supervised::mimesis()?);
    c.env_remove("CLAUDE_CONFIG_DIR").env("MIMESIS_LOG", "warn").arg("--config-dir").arg(root);
    c.arg("--data-dir").arg(root.join("data")).stdin(Stdio::null());
    Ok(c)
}

/// A session whose every field Claude Code's records feed is hostile.
fn hostile_session(root: &Path) -> Result<()> {
    let project = root.join("projects/-hostile");
    std::fs::create_dir_all(&project)?;
    let h = HOSTILE;
    let base = |kind: &str, uuid: &str, s: u32| {
        json!({"type": kind, "uuid": uuid, "timestamp": format!("2026-11-25T10:00:0{s}.000Z"),
               "cwd": format!("/work/{h}"), "gitBranch": h, "sessionId": ID, "version": "2.1.330"})
    };
    let with = |mut r: Value, message: Value| {
        r["message"] = message;
        r
    };
    let records = [
        with(base("user", "u1", 1), json!({"role": "user", "content": h})),
        with(
            base("assistant", "a1", 2),
            json!({"id": "m1", "role": "assistant", "model": h, "stop_reason": "tool_use",
                "content": [{"type": "thinking", "thinking": h, "signature": "s"}, {"type": "text", "text": h},
                            {"type": "tool_use", "id": "t1", "name": h, "input": {"command": h}}],
                "usage": {"input_tokens": 1, "output_tokens": 2}}),
        ),
        with(
            base("user", "u2", 3),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": h, "is_error": true}]}),
        ),
        with(
            base("assistant", "a2", 4),
            json!({"id": "m2", "role": "assistant", "model": h, "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "t2", "name": h, "input": {"file_path": h}}],
                "usage": {"input_tokens": 1, "output_tokens": 2}}),
        ),
        json!({"type": "summary", "summary": h, "leafUuid": "a2"}),
    ];
    let mut f = std::fs::File::create(project.join(format!("{ID}.jsonl")))?;
    for r in records {
        writeln!(f, "{r}")?;
    }
    Ok(())
}

fn output(cmd: &mut Command) -> Result<Vec<u8>> {
    let out = cmd.output()?;
    ensure!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    ensure_inert(&format!("{cmd:?} on stderr"), &out.stderr)?;
    Ok(out.stdout)
}

#[test]
fn ls_and_show_print_no_field_of_a_hostile_transcript_raw() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("claude");
    hostile_session(&root)?;
    for args in [&["ls"][..], &["ls", "--json"], &["show", ID], &["show", ID, "--json"]] {
        let out = output(mimesis(&root)?.args(args))?;
        ensure_inert(&format!("{args:?}"), &out)?;
        if args.contains(&"--json") {
            // The same values, escaped: a JSON reader gets every character back.
            let text = serde_json::from_slice::<Value>(&out)?.to_string();
            ensure!(text.contains('\u{9b}') && text.contains('\u{202e}'), "the values are kept: {text}");
        } else {
            ensure!(String::from_utf8_lossy(&out).contains("x\u{fffd}]"), "{args:?} shows the text around them");
        }
    }
    // The model, by name: before issue 32 `show` printed it as it was.
    let text = String::from_utf8(output(mimesis(&root)?.args(["show", ID]))?)?;
    ensure!(text.contains("● Claude x\u{fffd}]52;c;"), "{text}");
    Ok(())
}

#[test]
fn watch_prints_no_field_of_a_hostile_transcript_raw() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("claude");
    hostile_session(&root)?;
    for args in [&["watch"][..], &["watch", "--json"]] {
        let child = mimesis(&root)?.args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let mut child = Killed(child);
        let lines = stdout_lines(&mut child.0)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).with_context(|| format!("{args:?} showed no session"))?;
            if line.contains(&ID[..8]) {
                break line;
            }
        };
        ensure_inert(&format!("{args:?}"), line.as_bytes())?;
    }
    Ok(())
}

/// A child killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
