//! Answering from Mimesis against real `mimesis watch` processes (issue 32, Approvals):
//! two faces on one data dir hand the socket over and take it with them on SIGTERM; a face
//! full of open requests under a low file limit still sees a new session and its pending
//! tool at once; `pending` marks a request of a session in no roster, lists past 1 MiB,
//! and `approve`/`deny` say what they answered and refuse what is ambiguous.
//!
//! Needs `cargo build -p mimesis-cli` (done by `cargo test --workspace`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_core::approval::{self, Detail, Request, ToFace};
use mimesis_core::ids::SessionId;
use mimesis_tests::watch_cli::{Home, T, Watch, id};
use serde_json::{Value, json};

/// `mimesis <args>`: its exit code, stdout and stderr.
fn cli(h: &Home, args: &[&str]) -> Result<(i32, String, String)> {
    h.run(args, b"")
}

/// `mimesis pending --json`, once a face answers it and `cond` holds for the list.
fn wait_pending(h: &Home, what: &str, cond: impl Fn(&[Value]) -> bool) -> Result<Vec<Value>> {
    let deadline = Instant::now() + T;
    loop {
        let (code, out, err) = cli(h, &["pending", "--json"])?;
        if code == 0 {
            let list: Value = serde_json::from_str(&out).with_context(|| format!("{out:.300}"))?;
            let pending = list["pending"].as_array().cloned().unwrap_or_default();
            if cond(&pending) {
                return Ok(pending);
            }
        }
        ensure!(Instant::now() < deadline, "{what}: `pending` says {code} {err} {out:.300}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A hook's connection: its request sent, held open as a hook holds it.
fn hook(h: &Home, session: &str, target: &str, detail: Option<Detail>) -> Result<UnixStream> {
    let request = Request {
        session_id: SessionId::parse(session)?,
        tool: "Bash".into(),
        target: Some(target.into()),
        cwd: Some("/work/p".into()),
        detail,
    };
    let mut s = UnixStream::connect(approval::socket_path(&h.data))?;
    let mut line = serde_json::to_vec(&ToFace::Request(request))?;
    line.push(b'\n');
    s.write_all(&line)?;
    Ok(s)
}

fn wait_discovered(w: &mut Watch, n: u32) -> Result<Duration> {
    w.wait(&format!("session {n} discovered"), |e| e["session"]["sessionId"] == id(n))
}

/// Issue 32, 8: with `watch` A, then B on one data dir, stopping A left B without the
/// socket (`pending`: "no Mimesis is running") and A's socket behind. Now B takes over when
/// A stops, a face removes its socket on SIGTERM, and a killed face's socket is replaced.
#[test]
fn a_second_watch_takes_the_socket_over_and_each_takes_it_away_on_sigterm() -> Result<()> {
    let h = Home::new()?;
    h.session(1, "tidy up")?;
    let sock = approval::socket_path(&h.data);
    let mut a = Watch::start(&h)?;
    wait_discovered(&mut a, 1)?;
    wait_pending(&h, "A answers", <[Value]>::is_empty)?;
    let mut b = Watch::start(&h)?;
    wait_discovered(&mut b, 1)?;
    let held = hook(&h, &id(1), "echo held by A", None)?;
    wait_pending(&h, "A holds a request", |p| p.len() == 1)?;

    a.terminate()?;
    let mut reply = String::new();
    BufReader::new(&held).read_line(&mut reply)?;
    let decided = !reply.is_empty() && !serde_json::from_str::<Value>(&reply)?["behavior"].is_null();
    ensure!(!decided, "A stopping decides nothing: {reply}");
    let t0 = Instant::now();
    wait_pending(&h, "B took over", <[Value]>::is_empty)?;
    eprintln!("[approvals] B answers {} ms after A ended", t0.elapsed().as_millis());
    let _h = hook(&h, &id(1), "echo held by B", None)?;
    wait_pending(&h, "B holds a request", |p| p.len() == 1)?;

    // Killed: its socket stays; the next face replaces it.
    b.signal(libc::SIGKILL);
    drop(b);
    ensure!(sock.exists(), "a killed face cannot remove its socket");
    let (code, _, err) = cli(&h, &["pending"])?;
    ensure!(code == 1 && err.contains("no Mimesis is running"), "{code} {err}");
    let mut c = Watch::start(&h)?;
    wait_discovered(&mut c, 1)?;
    wait_pending(&h, "C replaced the stale socket", <[Value]>::is_empty)?;
    c.terminate()?;
    ensure!(!sock.exists(), "SIGTERM took the socket away");
    Ok(())
}

/// Issue 32, 7: 1,100 open requests used up a face's file descriptors (`ulimit -n 1024`)
/// and its watcher missed a new session and a new pending tool for more than a minute.
/// Now the face holds at most 256 requests and refuses the rest at once (the hook then
/// leaves the dialog to Claude Code, saying why in its log); the watcher keeps up.
#[test]
fn a_face_full_of_requests_under_a_low_file_limit_still_sees_new_sessions_at_once() -> Result<()> {
    mimesis_os::procs::raise_open_files_limit();
    let h = Home::new()?;
    h.session(1, "first")?;
    let mut w = Watch::start_limited(&h, 1024)?;
    wait_discovered(&mut w, 1)?;
    wait_pending(&h, "the face answers", <[Value]>::is_empty)?;

    let t0 = Instant::now();
    let mut hooks = Vec::new();
    for i in 0..1_100 {
        hooks.push(hook(&h, &format!("s-{i}"), "sleep 1", None)?);
    }
    let (tx, rx) = mpsc::channel();
    for s in &hooks {
        let (s, tx) = (s.try_clone()?, tx.clone());
        std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(s).read_line(&mut line);
            let _ = tx.send(line);
        })?;
    }
    let refused = 1_100 - approval::MAX_OPEN;
    for n in 0..refused {
        let line = rx.recv_timeout(T).with_context(|| format!("only {n} of {refused} refused"))?;
        let v: Value = serde_json::from_str(&line).with_context(|| format!("{line:?}"))?;
        ensure!(v["behavior"].is_null() && v["error"].as_str().is_some_and(|e| e.contains("holds 256")), "{v}");
    }
    eprintln!("[approvals] 1,100 requests: {refused} refused within {} ms", t0.elapsed().as_millis());
    let hook = mimesis_tests::supervised::permission_hook(&h.data, &id(9), "Bash", json!({"command": "ls"}))?;
    let out = mimesis_tests::mimesis::wait_output(hook, T)?;
    ensure!(out.status.success() && out.stdout.is_empty(), "no decision from a full face: {out:?}");
    let log = std::fs::read_to_string(mimesis_core::hook_event::log_file(&h.data))?;
    ensure!(log.contains("holds 256 open permission requests"), "the hook says why: {log}");

    let written = Instant::now();
    h.session(2, "second")?;
    wait_discovered(&mut w, 2)?;
    eprintln!("[approvals] a new session discovered {} ms after it was written", written.elapsed().as_millis());
    let tool = json!({"type": "assistant", "uuid": "a-2", "timestamp": "2026-11-24T00:00:01.000Z",
        "sessionId": id(2), "message": {"id": "m-2", "role": "assistant", "model": "claude-opus-5-5",
        "stop_reason": "tool_use", "content": [{"type": "tool_use", "id": "t-2", "name": "Bash",
        "input": {"command": "cargo test"}}], "usage": {"input_tokens": 1, "output_tokens": 1}}});
    let written = Instant::now();
    std::fs::OpenOptions::new().append(true).open(h.transcript(2))?.write_all(format!("{tool}\n").as_bytes())?;
    w.wait("session 2's pending tool", |e| {
        (e["sessionId"] == id(2) && e["changes"]["pendingTool"]["target"] == "cargo test")
            || (e["session"]["sessionId"] == id(2) && e["session"]["pendingTool"]["target"] == "cargo test")
    })?;
    eprintln!("[approvals] its pending tool seen {} ms after it was written", written.elapsed().as_millis());
    let pending = wait_pending(&h, "the held requests listed", |p| p.len() == approval::MAX_OPEN)?;
    ensure!(pending.len() == approval::MAX_OPEN);
    drop(hooks);
    w.terminate().map(drop)
}

/// Issue 32, 3, 6 and 9 through the CLI: `pending` marks a request of a session in no
/// roster (`knownSession`), and lists past 1 MiB; `approve`/`deny` say what they answered
/// and where, and a session with two open requests is named by request ids only.
#[test]
fn pending_marks_strangers_and_answers_say_what_they_answered() -> Result<()> {
    let h = Home::new()?;
    h.session(1, "Tidy up the build")?;
    let mut w = Watch::start(&h)?;
    wait_discovered(&mut w, 1)?;
    wait_pending(&h, "the face answers", <[Value]>::is_empty)?;

    let mine = hook(&h, &id(1), "echo harmless", None)?;
    let stranger = "5bd58612-9f00-4000-8000-000000000000";
    let theirs = hook(&h, stranger, "rm -rf ~/important", None)?;
    let pending = wait_pending(&h, "both requests", |p| p.len() == 2)?;
    let of = |s: &str| pending.iter().find(|p| p["sessionId"] == s).cloned().context("listed");
    ensure!(of(&id(1))?["knownSession"] == json!(true), "{pending:?}");
    ensure!(of(stranger)?["knownSession"] == json!(false), "{pending:?}");
    let (_, text, _) = cli(&h, &["pending"])?;
    ensure!(text.contains(&format!("unknown session {stranger}")), "{text}");
    let rid = of(&id(1))?["id"].as_str().context("id")?.to_owned();
    ensure!(rid.starts_with("req_"), "a request id reads as one: {rid}");

    let (code, out, err) = cli(&h, &["deny", "5bd586"])?;
    ensure!(code == 0, "{err}");
    ensure!(out.trim() == "Denied Bash `rm -rf ~/important` in an unknown session (5bd58612).", "{out}");
    let (code, out, err) = cli(&h, &["approve", &rid[..10]])?;
    ensure!(code == 0, "{err}");
    ensure!(out.trim() == "Approved Bash `echo harmless` in p · Tidy up the build (aaaaaaaa).", "{out}");
    for (s, behavior) in [(&mine, "allow"), (&theirs, "deny")] {
        let mut reply = String::new();
        BufReader::new(s).read_line(&mut reply)?;
        ensure!(serde_json::from_str::<Value>(&reply)?["behavior"] == behavior, "{reply}");
    }

    // Two open requests in one session: its id names neither.
    let _one = hook(&h, &id(1), "echo one", None)?;
    let _two = hook(&h, &id(1), "echo two", None)?;
    wait_pending(&h, "two requests of one session", |p| p.len() == 2)?;
    let (code, _, err) = cli(&h, &["approve", "aaaaaaaa"])?;
    ensure!(code == 1 && err.contains("has 2 open requests"), "{code} {err}");
    wait_pending(&h, "still both", |p| p.len() == 2)?;

    // Past 1 MiB of requests: listed whole.
    let detail = || Some(Detail::Write { file: "/work/p/big".into(), content: "é".repeat(10_000) });
    let mut big = Vec::new();
    for i in 0..60 {
        big.push(hook(&h, &format!("big-{i}"), "write big", detail())?);
    }
    let pending = wait_pending(&h, "62 requests", |p| p.len() == 62)?;
    let size = serde_json::to_vec(&pending)?.len();
    ensure!(size > 1024 * 1024, "{size} bytes");
    ensure!(
        pending.iter().filter(|p| p["detail"]["content"].as_str().is_some_and(|c| c.len() == 20_000)).count() == 60
    );
    w.terminate().map(drop)
}
