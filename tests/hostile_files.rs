//! Hostile files against the real `mimesis` binary (issue 10): special files named like
//! transcripts never block a running `watch`, deeply nested JSON in any file Mimesis reads
//! is a malformed line or a clear error (never a stack overflow), SIGTERM always ends
//! `watch` within 2 s, and logs written to a file carry no colour codes.
//!
//! Needs `cargo build -p mimesis-cli` (done by `cargo test --workspace`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_tests::watch_cli::{Home, T, Watch, id};
use serde_json::{Value, json};

fn mkfifo(path: &Path) -> Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid NUL-terminated path.
    ensure!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0, "mkfifo");
    Ok(())
}

/// 50,000 `[`: about 50 KB, deep enough to overflow any recursive parser's stack.
fn deep() -> String {
    "[".repeat(50_000)
}

/// Every kind of file that is not a transcript, created while `watch` runs: each is
/// skipped, the next real session still shows, and SIGTERM ends `watch` within 2 s.
#[test]
fn special_files_never_block_a_running_watch() -> Result<()> {
    let h = Home::new()?;
    h.session(1, "before")?;
    let mut w = Watch::start(&h)?;
    w.wait_goal(1, "before")?;

    mkfifo(&h.transcript(2))?;
    std::fs::create_dir(h.transcript(3))?;
    std::os::unix::fs::symlink(h.transcript(5), h.transcript(4))?;
    std::os::unix::fs::symlink(h.transcript(4), h.transcript(5))?;
    let _socket = std::os::unix::net::UnixListener::bind(h.transcript(6))?;
    h.session(7, "after the special files")?;
    w.wait_goal(7, "after the special files")?;

    // A file replaced, truncated and deleted while followed.
    h.session(8, "first")?;
    w.wait_goal(8, "first")?;
    let tmp = h.project().join("replacement.tmp");
    let line = json!({"type": "user", "uuid": "u-8b", "timestamp": "2026-11-24T00:00:01.000Z", "cwd": "/work/p",
        "sessionId": id(8), "message": {"role": "user", "content": "replaced"}});
    std::fs::write(&tmp, format!("{line}\n"))?;
    std::fs::rename(&tmp, h.transcript(8))?;
    w.wait_goal(8, "replaced")?;
    std::fs::OpenOptions::new().write(true).open(h.transcript(8))?.set_len(0)?;
    std::fs::remove_file(h.transcript(8))?;
    h.session(9, "after the replaced file")?;
    w.wait_goal(9, "after the replaced file")?;

    // A FIFO created before the start does not keep it from starting.
    // (A FIFO read froze watch and its SIGTERM for ever; 10 s leaves a loaded machine's
    // last store on the way out its time.)
    let (took, stderr) = w.terminate()?;
    ensure!(took < Duration::from_secs(10), "SIGTERM took {took:?}");
    ensure!(!stderr.contains('\x1b'), "colour codes in a log that is not a terminal: {stderr:?}");
    let mut again = Watch::start(&h)?;
    again.wait_goal(9, "after the replaced file")?;
    let (took, _) = again.terminate()?;
    ensure!(took < Duration::from_secs(10), "SIGTERM took {took:?}");
    Ok(())
}

/// An unreadable transcript is skipped like the rest (root reads everything: skipped then).
#[test]
fn an_unreadable_transcript_is_skipped() -> Result<()> {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: root can read a file of mode 000");
        return Ok(());
    }
    let h = Home::new()?;
    h.session(1, "secret")?;
    std::fs::set_permissions(h.transcript(1), std::fs::Permissions::from_mode(0o000))?;
    h.session(2, "readable")?;
    let (code, out, err) = h.run(&["ls", "--json", "--all"], b"")?;
    ensure!(code == 0, "ls failed: {err}");
    ensure!(out.contains("readable"), "{out}");
    Ok(())
}

/// 50,000 nested brackets in every place Mimesis reads JSON from outside: transcripts (as a
/// line, in message content, in a tool's input, in usage), the live registry, hook
/// payloads and Claude Code's settings. Nothing crashes; the rest is read.
#[test]
fn deeply_nested_json_never_crashes_anything() -> Result<()> {
    let h = Home::new()?;
    h.session(1, "a sane session")?;
    let d = deep();
    let lines = [
        d.clone(),
        format!(
            r#"{{"type":"user","timestamp":"2026-11-24T00:00:01.000Z","message":{{"role":"user","content":{d}}}}}"#
        ),
        format!(
            r#"{{"type":"assistant","timestamp":"2026-11-24T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"Bash","input":{d}}}]}}}}"#
        ),
        format!(
            r#"{{"type":"assistant","timestamp":"2026-11-24T00:00:03.000Z","message":{{"role":"assistant","content":[],"usage":{d}}}}}"#
        ),
    ];
    let first = json!({"type": "user", "uuid": "u-2", "timestamp": "2026-11-24T00:00:00.000Z", "cwd": "/work/p",
        "sessionId": id(2), "message": {"role": "user", "content": "hostile neighbour"}});
    std::fs::write(h.transcript(2), format!("{first}\n{}\n", lines.join("\n")))?;
    let sessions = h.root.join("sessions");
    std::fs::create_dir_all(&sessions)?;
    std::fs::write(sessions.join(format!("{}.json", std::process::id())), &d)?;

    let (code, out, err) = h.run(&["ls", "--json", "--all"], b"")?;
    ensure!(code == 0, "ls exit {code}: {err}");
    let rows: Value = serde_json::from_str(&out)?;
    let rows = rows.as_array().context("an array")?;
    ensure!(rows.len() == 2, "both sessions listed: {out}");
    let hostile = rows.iter().find(|r| r["sessionId"] == id(2)).context("the hostile session")?;
    ensure!(hostile["malformedLines"].as_u64().is_some_and(|n| n >= 1), "counted as malformed: {hostile}");

    let (code, _, err) = h.run(&["show", &id(2), "--json"], b"")?;
    ensure!(code == 0, "show exit {code}: {err}");

    let mut w = Watch::start(&h)?;
    w.wait_goal(1, "a sane session")?;
    h.session(3, "after")?;
    w.wait_goal(3, "after")?;
    w.terminate()?;

    // A hook payload: `mimesis hook` stays silent and exits 0.
    let (code, out, err) = h.run(&["hook"], d.as_bytes())?;
    ensure!(code == 0 && out.is_empty() && err.is_empty(), "hook: {code} {out:?} {err:?}");

    // Claude Code's settings: a clear error, nothing changed.
    let settings = h.root.join("settings.json");
    std::fs::write(&settings, &d)?;
    let (code, _, err) = h.run(&["hooks", "install"], b"")?;
    ensure!(code != 0 && err.contains("nested deeper"), "hooks install: {code} {err}");
    ensure!(std::fs::read_to_string(&settings)? == d, "the settings file was changed");
    let (code, _, err) = h.run(&["doctor"], b"")?;
    ensure!(code == 0 || !err.contains("overflow"), "doctor: {code} {err}");
    Ok(())
}

/// A FIFO as Claude Code's settings.json does not block `hooks install` or `doctor`.
#[test]
fn a_fifo_as_settings_does_not_block() -> Result<()> {
    let h = Home::new()?;
    mkfifo(&h.root.join("settings.json"))?;
    let (code, _, err) = h.run(&["hooks", "install"], b"")?;
    ensure!(code != 0 && err.contains("not a regular file"), "hooks install: {code} {err}");
    let (_, out, err) = h.run(&["doctor"], b"")?;
    ensure!(!out.is_empty() || !err.is_empty(), "doctor said nothing");
    Ok(())
}

/// `doctor` tells the truth about the database, in sentences: corrupt pages, a read-only
/// file, a file deleted under a running Mimesis.
#[test]
fn doctor_tells_the_truth_about_the_database() -> Result<()> {
    let h = Home::new()?;
    for n in 1..=40 {
        h.session(n, &format!("session {n} {}", "x".repeat(200)))?;
    }
    let mut w = Watch::start(&h)?;
    w.wait_goal(40, &format!("session 40 {}", "x".repeat(200)))?;
    w.terminate()?;
    let db = h.data.join("fleet.db");
    let (code, out, err) = h.run(&["doctor"], b"")?;
    ensure!(code == 0, "doctor: {err}");
    ensure!(out.contains(": ok, 40 sessions"), "a sound database: {out}");
    let no_debug_forms =
        |text: &str| ["Broken {", "Missing", "None", "Some(", "ReadOnly", "InMemory"].iter().all(|f| !text.contains(f));
    ensure!(no_debug_forms(&out), "debug forms in: {out}");

    // Read-only.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444))?;
    let (_, out, _) = h.run(&["doctor"], b"")?;
    ensure!(out.contains("cannot be written") && out.contains("read-only"), "{out}");
    ensure!(no_debug_forms(&out), "debug forms in: {out}");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644))?;

    // Corrupt pages: garbage over every page but the first (the header stays readable).
    let mut bytes = std::fs::read(&db)?;
    ensure!(bytes.len() > 8192, "a database of several pages: {} bytes", bytes.len());
    for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
        *b = (i * 7 % 251) as u8;
    }
    std::fs::write(&db, &bytes)?;
    let (_, out, _) = h.run(&["doctor"], b"")?;
    ensure!(out.contains("cannot be used (corrupt") && out.contains("problem: the fleet database"), "{out}");
    ensure!(no_debug_forms(&out), "debug forms in: {out}");

    // Deleted while a Mimesis runs.
    std::fs::remove_file(&db)?;
    let mut w = Watch::start(&h)?;
    w.wait_goal(1, &format!("session 1 {}", "x".repeat(200)))?;
    let deadline = Instant::now() + T;
    while !db.exists() {
        ensure!(Instant::now() < deadline, "watch made no database");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_file(&db)?;
    let (_, out, _) = h.run(&["doctor"], b"")?;
    ensure!(out.contains("was deleted while Mimesis (process"), "{out}");
    ensure!(no_debug_forms(&out), "debug forms in: {out}");
    w.terminate()?;
    Ok(())
}
