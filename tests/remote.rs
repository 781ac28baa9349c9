//! Sessions on another machine over SSH (issue 13), against a real OpenSSH server on
//! loopback (`support::sshd`) and the real `mimesis` binary on both sides: the helper is
//! installed on first connect (and only with the user's word), `ls --host` and `show
//! host:id` bring the remote's sessions with `host`, `watch --host` follows an append on
//! the remote, a server that goes away leaves the host stale with its roster kept and it
//! comes back by itself, and hostile values run nothing anywhere.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_core::remote::PROTOCOL;
use mimesis_tests::mimesis::{HOSTILE, ensure_inert, stdout_lines};
use mimesis_tests::sshd::Sshd;
use mimesis_tests::supervised::mimesis;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(60);

/// One local machine and one "remote" one, served by a real sshd.
struct Rig {
    _dir: tempfile::TempDir,
    base: PathBuf,
    sshd: Sshd,
}

impl Rig {
    fn new() -> Result<Option<Rig>> {
        if !Sshd::available() {
            // scripts/setup.sh installs openssh-server; a bare `cargo test` elsewhere skips.
            eprintln!("skipped: no {} (scripts/setup.sh installs it)", mimesis_tests::sshd::SSHD);
            return Ok(None);
        }
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let sshd = Sshd::start(&base.join("sshd"))?;
        let rig = Rig { _dir: dir, base, sshd };
        std::fs::create_dir_all(rig.local_root())?;
        rig.add_machine("devbox")?;
        Ok(Some(rig))
    }

    fn add_machine(&self, alias: &str) -> Result<()> {
        std::fs::create_dir_all(self.remote_root(alias).join("projects"))?;
        self.sshd.add_alias(alias, &self.remote_root(alias), &self.remote_data(alias))
    }

    fn local_root(&self) -> PathBuf {
        self.base.join("local/.claude")
    }
    fn remote_root(&self, alias: &str) -> PathBuf {
        self.base.join(alias).join(".claude")
    }
    fn remote_data(&self, alias: &str) -> PathBuf {
        self.base.join(alias).join("data")
    }

    fn command(&self) -> Result<Command> {
        let mut c = Command::new(mimesis()?);
        c.env("CLAUDE_CONFIG_DIR", self.local_root())
            .env("MIMESIS_DATA_DIR", self.base.join("local/data"))
            .env("MIMESIS_SSH_CONFIG", &self.sshd.client_config)
            .env_remove("MIMESIS_LOG")
            .stdin(Stdio::null());
        Ok(c)
    }

    fn run(&self, args: &[&str]) -> Result<(i32, String, String)> {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Result<(i32, String, String)> {
        let mut c = self.command()?;
        c.envs(env.iter().copied());
        let child = c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let out = mimesis_tests::mimesis::wait_output(child, T)?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        ))
    }

    fn json(&self, args: &[&str]) -> Result<Value> {
        let (code, out, err) = self.run(args)?;
        ensure!(code == 0, "mimesis {args:?} exited {code}: {err}\nsshd: {}", self.sshd.log());
        serde_json::from_str(&out).with_context(|| format!("not JSON: {out}"))
    }
}

fn id(n: u32) -> String {
    format!("bbbbbbbb-0000-4000-8000-{n:012}")
}

/// A session shaped like what Claude Code 2.1.330 writes: a prompt, a reply, a pending
/// tool call.
fn write_session(root: &Path, project: &str, n: u32, prompt: &str, cwd: &str) -> Result<PathBuf> {
    let dir = root.join("projects").join(project);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.jsonl", id(n)));
    let lines = [
        json!({"type": "user", "uuid": format!("u{n}"), "parentUuid": null, "timestamp": "2026-11-25T10:00:00.000Z",
            "cwd": cwd, "sessionId": id(n), "version": "2.1.330", "gitBranch": "main",
            "message": {"role": "user", "content": prompt}}),
        json!({"type": "assistant", "uuid": format!("a{n}"), "parentUuid": format!("u{n}"),
            "timestamp": "2026-11-25T10:00:05.000Z", "cwd": cwd, "sessionId": id(n), "version": "2.1.330",
            "message": {"role": "assistant", "model": "claude-opus-4-8", "id": format!("msg{n}"),
                "content": [{"type": "text", "text": "Looking."}],
                "usage": {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text)?;
    Ok(path)
}

fn append(path: &Path, line: &Value) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    writeln!(f, "{line}")?;
    Ok(())
}

#[test]
fn the_helper_is_installed_on_first_connect_and_ls_lists_the_remote_sessions() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    write_session(&rig.remote_root("devbox"), "-srv-api", 1, "fix the flaky test", "/srv/api")?;
    write_session(&rig.remote_root("devbox"), "-srv-web", 2, "add dark mode", "/srv/web")?;
    write_session(&rig.local_root(), "-home-me-p", 3, "local work", "/home/me/p")?;

    // No Mimesis there: said plainly, with what to do; nothing is copied without the word.
    let (code, out, err) = rig.run(&["ls", "--json", "--host", "devbox", "--no-local"])?;
    ensure!(code == 1, "exit {code}, stdout {out}, stderr {err}");
    ensure!(err.contains("devbox") && err.contains("not installed") && err.contains("--install-helper"), "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out)?, json!([]));
    let helper = rig.remote_data("devbox").join("bin/mimesis");
    ensure!(!helper.exists(), "installed without being asked");

    let rows = rig.json(&["ls", "--json", "--host", "devbox", "--install-helper"])?;
    let meta = std::fs::metadata(&helper).context("the helper was not installed")?;
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "only the user may run it");
    assert_eq!(std::fs::read(&helper)?, std::fs::read(mimesis()?)?, "the same build");
    let rows = rows.as_array().context("an array")?;
    assert_eq!(rows.len(), 3, "{rows:#?}");
    let by_id = |n: u32| rows.iter().find(|r| r["sessionId"] == id(n)).cloned().unwrap_or_default();
    assert_eq!(by_id(1)["host"], "devbox");
    assert_eq!(by_id(1)["goal"], "fix the flaky test");
    assert_eq!(by_id(1)["cwd"], "/srv/api");
    assert_eq!(by_id(1)["usage"]["outputTokens"], 20);
    assert_eq!(by_id(2)["host"], "devbox");
    assert_eq!(by_id(3)["host"], Value::Null, "a local session has host null");

    // Installed now: the next connection needs no word; `show host:id` reads there.
    let items = rig.json(&["show", &format!("devbox:{}", id(1)), "--json"])?;
    let items = items.as_array().context("an array")?;
    assert_eq!(items[0]["kind"], "prompt");
    assert_eq!(items[0]["text"], "fix the flaky test");
    let (code, _, err) = rig.run(&["show", "devbox:cccccccc-0000-4000-8000-000000000009"])?;
    ensure!(code == 1 && err.contains("no session with id"), "{code} {err}");

    // The text roster groups the remote's rows under their host.
    let (code, text, _) = rig.run(&["ls", "--host", "devbox"])?;
    ensure!(code == 0 && text.contains("devbox") && text.contains("add dark mode"), "{text}");

    // Configured machines and their state.
    let (code, _, err) = rig.run(&["hosts", "add", "devbox"])?;
    ensure!(code == 0, "{err}");
    let hosts = rig.json(&["hosts", "--json"])?;
    assert_eq!(hosts[0]["host"], "devbox");
    assert_eq!(hosts[0]["state"], "live");
    assert_eq!(hosts[0]["sessions"], 2);
    Ok(())
}

#[test]
fn hostile_destinations_ids_and_remote_values_run_nothing() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let marker = rig.base.join("pwned");
    let evil = format!("$(touch {m}); `touch {m}` | touch {m} & touch {m}; '\"", m = marker.display());
    write_session(&rig.remote_root("devbox"), "-srv-api", 1, &evil, &evil)?;

    for dest in [format!("devbox;touch {}", marker.display()), format!("-oProxyCommand=touch {}", marker.display())] {
        let (code, _, err) = rig.run(&["ls", "--json", &format!("--host={dest}")])?;
        ensure!(code != 0 && err.contains("not an SSH destination"), "{dest}: {code} {err}");
    }
    let (code, _, err) = rig.run(&["show", &format!("devbox:$(touch {})", marker.display())])?;
    ensure!(code != 0 && err.contains("not a session id"), "{code} {err}");

    let rows = rig.json(&["ls", "--json", "--host", "devbox", "--no-local", "--install-helper"])?;
    assert_eq!(rows[0]["goal"], evil.as_str(), "the value arrives as text");
    let (code, text, _) = rig.run(&["ls", "--host", "devbox", "--no-local"])?;
    ensure!(code == 0 && text.contains("touch"), "{text}");
    let items = rig.json(&["show", &format!("devbox:{}", id(1)), "--json"])?;
    assert_eq!(items[0]["text"], evil.as_str());
    ensure!(!marker.exists(), "a hostile value ran a command");
    Ok(())
}

/// `mimesis watch --json --host …`, its stdout read line by line on a thread.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line read so far.
    history: Vec<Value>,
}

impl Watch {
    fn start(rig: &Rig, args: &[&str]) -> Result<Watch> {
        let mut child = rig.command()?.arg("watch").args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let lines = stdout_lines(&mut child)?;
        Ok(Watch { child, lines, history: Vec::new() })
    }

    fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Result<Value> {
        let deadline = Instant::now() + T;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let v: Value = serde_json::from_str(&l).with_context(|| format!("not JSON: {l}"))?;
                    self.history.push(v.clone());
                    if pred(&v) {
                        return Ok(v);
                    }
                    seen.push(l);
                }
                Err(_) => bail!("no {what} within {T:?}; saw:\n{}", seen.join("\n")),
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
fn watch_follows_the_remote_and_a_host_that_drops_comes_back_by_itself() -> Result<()> {
    let Some(mut rig) = Rig::new()? else { return Ok(()) };
    let path = write_session(&rig.remote_root("devbox"), "-srv-api", 1, "fix the flaky test", "/srv/api")?;
    let mut w = Watch::start(&rig, &["--json", "--host", "devbox", "--no-local", "--install-helper"])?;
    w.wait_for("the remote session", |v| v["type"] == "discovered" && v["session"]["host"] == "devbox")?;
    w.wait_for("the host live", |v| v["type"] == "host" && v["state"] == "live")?;

    // An append there is an update here, carrying the host.
    append(
        &path,
        &json!({"type": "user", "uuid": "u-late", "timestamp": "2026-11-25T10:01:00.000Z", "cwd": "/srv/api",
            "sessionId": id(1), "message": {"role": "user", "content": "and the docs"}}),
    )?;
    w.wait_for("the update", |v| v["type"] == "updated" && v["host"] == "devbox" && v["sessionId"] == id(1))?;

    // The machine goes away: stale, its roster kept (nothing removed).
    rig.sshd.kill();
    let stale = w.wait_for("the host stale", |v| v["type"] == "host" && v["state"] != "live")?;
    assert_eq!(stale["state"], "stale", "{stale}");
    assert_eq!(stale["sessions"], 1, "the last roster is kept: {stale}");
    ensure!(stale["message"].as_str().is_some_and(|m| !m.is_empty()), "a reason: {stale}");

    // It comes back: reconnects by itself, and what changed meanwhile arrives.
    append(
        &path,
        &json!({"type": "user", "uuid": "u-later", "timestamp": "2026-11-25T10:02:00.000Z", "cwd": "/srv/api",
            "sessionId": id(1), "message": {"role": "user", "content": "and the changelog"}}),
    )?;
    rig.sshd.restart()?;
    w.wait_for("the host live again", |v| v["type"] == "host" && v["state"] == "live")?;

    // Mimesis killed outright: its ssh and the far side's `serve` end with it (the far side
    // sees its input close), nothing of ours lives on.
    let _ = w.child.kill();
    let _ = w.child.wait();
    let ours = |p: &mimesis_os::procs::Stat| {
        mimesis_os::procs::cmdline(p.pid).is_some_and(|c| {
            let c = c.join(" ");
            c.contains(&*rig.sshd.client_config.to_string_lossy())
                || c.contains(&*rig.remote_data("devbox").to_string_lossy())
        })
    };
    let deadline = Instant::now() + T;
    loop {
        let left: Vec<u32> =
            mimesis_os::procs::all().iter().filter(|p| p.state != 'Z' && ours(p)).map(|p| p.pid).collect();
        if left.is_empty() {
            break;
        }
        ensure!(Instant::now() < deadline, "processes of ours outlived Mimesis: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The test server itself (`support::sshd`): its port is found free by binding it and letting
/// it go, so another program can take it before sshd binds it (at the start, or while a test
/// has the server down). Then it moves to another port, and every alias with it.
#[test]
fn the_test_server_moves_to_another_port_when_its_own_was_taken_meanwhile() -> Result<()> {
    let Some(mut rig) = Rig::new()? else { return Ok(()) };
    let old = rig.sshd.port;
    rig.sshd.kill();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", old))?;
    rig.sshd.restart()?;
    ensure!(rig.sshd.port != old, "sshd restarted on the port another program holds");
    let out = Command::new("ssh")
        .arg("-F")
        .arg(&rig.sshd.client_config)
        .args(["-o", "BatchMode=yes", "devbox", "echo", "logged-in"])
        .stdin(Stdio::null())
        .output()?;
    ensure!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "logged-in",
        "the alias did not follow the server to port {}: {}{}",
        rig.sshd.port,
        String::from_utf8_lossy(&out.stderr),
        rig.sshd.log()
    );
    Ok(())
}

/// The terminal a window opens for a session on another machine, as the app opens it:
/// `ssh -t host mimesis run --session-id …` in a pseudo-terminal of its own.
fn remote_terminal(rig: &Rig, alias: &str, run_args: &[&str]) -> Result<mimesis_wiring::plain::PlainTerminal> {
    use mimesis_core::remote::{Destination, remote_mimesis};
    let ssh = mimesis_wiring::remote::Ssh::new("ssh", Some(rig.sshd.client_config.clone()));
    let mut args = vec!["run"];
    args.extend_from_slice(run_args);
    let argv = ssh.argv(&Destination::parse(alias).map_err(anyhow::Error::msg)?, &remote_mimesis(&args), true);
    mimesis_wiring::plain::PlainTerminal::start(mimesis_wiring::plain::PlainSpec {
        program: argv[0].clone().into(),
        args: argv[1..].to_vec(),
        cwd: rig.base.clone(),
        env: Vec::new(),
        cols: 100,
        rows: 30,
        scrollback: 1 << 20,
    })
    .map_err(anyhow::Error::msg)
}

/// What a terminal has shown so far, until it shows `needle`.
fn screen_until(t: &mimesis_wiring::plain::PlainTerminal, needle: &str) -> Result<String> {
    let deadline = Instant::now() + T;
    loop {
        let shown = String::from_utf8_lossy(&t.attach().scrollback).into_owned();
        if shown.contains(needle) {
            return Ok(shown);
        }
        ensure!(Instant::now() < deadline, "the terminal never showed {needle:?}; it shows:\n{shown}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_session_started_over_ssh_t_is_supervised_there_and_its_supervision_comes_through() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let standin = mimesis_tests::supervised::standin()?;
    std::fs::create_dir_all(rig.remote_root("gpu").join("projects"))?;
    rig.sshd.add_alias_with("gpu", &rig.remote_root("gpu"), &rig.remote_data("gpu"), Some(&standin))?;
    let work = rig.base.join("gpu/work");
    std::fs::create_dir_all(&work)?;
    rig.json(&["ls", "--json", "--host", "gpu", "--no-local", "--install-helper"])?;

    let mut w = Watch::start(&rig, &["--json", "--host", "gpu", "--no-local"])?;
    w.wait_for("the host live", |v| v["type"] == "host" && v["state"] == "live")?;

    // A new session under an id chosen here, so its row is known before it exists there.
    let id = "cccccccc-1111-4222-8333-444444444444";
    let work_s = work.to_string_lossy().into_owned();
    let term = remote_terminal(&rig, "gpu", &["--cwd", &work_s, "--session-id", id])?;
    screen_until(&term, "for shortcuts").context("the agent's screen through ssh -t")?;
    // (The row may come first from the agent's registry entry, before its supervisor's
    // snapshot gives it its supervision.)
    let row = w.wait_for("the supervised row", |v| {
        let (s, sup) = match v["type"] == "discovered" {
            true => (&v["session"], &v["session"]["supervision"]),
            false => (v, &v["changes"]["supervision"]),
        };
        s["sessionId"] == id && v["host"].as_str().or(s["host"].as_str()) == Some("gpu") && sup.is_object()
    })?;
    let supervised =
        if row["type"] == "discovered" { &row["session"]["supervision"] } else { &row["changes"]["supervision"] };
    ensure!(supervised["state"] == "running", "supervised on its machine: {row}");

    // Typing in the terminal reaches the agent there; its transcript changes the row here.
    term.write(b"rename the billing module\r").map_err(anyhow::Error::msg)?;
    w.wait_for("the goal", |v| v["sessionId"] == id && v["changes"]["goal"] == "rename the billing module")?;

    // Closing the terminal ends the session there (SIGHUP), and says so through the stream:
    // the row first (no supervision once that run has gone), then the event.
    term.close();
    let ended = w.wait_for("the session's end", |v| {
        v["type"] == "supervision" && v["host"] == "gpu" && v["event"]["type"] == "session_terminated"
    })?;
    assert_eq!(ended["event"]["sessionId"], id, "{ended}");
    assert_eq!(ended["event"]["reason"], "signal", "{ended}");
    let plain = |v: &Value| v["sessionId"] == id && v["changes"].get("supervision").is_some_and(Value::is_null);
    if !w.history.iter().any(plain) {
        w.wait_for("a plain row again", plain)?;
    }
    Ok(())
}

/// `mimesis cost --host` (issue 36): the remote's report comes through `serve` in one
/// request, answered from its files without indexing there, and its rows are merged with
/// this machine's, each naming its host, under one total; a machine with no Mimesis is
/// said, with what to do.
#[test]
fn cost_host_merges_the_remote_rows_under_their_host() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    write_session(&rig.remote_root("devbox"), "-srv-api", 1, "fix the flaky test", "/srv/api")?;
    write_session(&rig.remote_root("devbox"), "-srv-web", 2, "add dark mode", "/srv/web")?;
    write_session(&rig.local_root(), "-home-me-p", 3, "local work", "/home/me/p")?;

    let (code, out, err) = rig.run(&["cost", "--json", "--host", "devbox"])?;
    ensure!(code == 1, "exit {code}, stdout {out}, stderr {err}");
    ensure!(err.contains("devbox") && err.contains("--install-helper"), "{err}");
    let here: Value = serde_json::from_str(&out)?;
    assert_eq!(here["total"]["inputTokens"], 10, "this machine's report is printed all the same");

    let v = rig.json(&["cost", "--json", "--by", "session", "--host", "devbox", "--install-helper"])?;
    let rows = v["rows"].as_array().context("rows")?;
    let host_of = |n: u32| rows.iter().find(|r| r["key"] == id(n)).map(|r| r["host"].clone());
    assert_eq!(host_of(1), Some(json!("devbox")));
    assert_eq!(host_of(2), Some(json!("devbox")));
    assert_eq!(host_of(3), Some(Value::Null), "this machine's row has host null");
    assert_eq!((&v["total"]["inputTokens"], &v["total"]["outputTokens"]), (&json!(30), &json!(60)));
    assert_eq!(v["total"]["models"], json!(["claude-opus-4-8"]));

    let v = rig.json(&["cost", "--json", "--host", "devbox", "--no-local"])?;
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!((&v["rows"][0]["key"], &v["rows"][0]["host"]), (&json!("2026-11-25"), &json!("devbox")));
    assert_eq!(v["rows"][0]["inputTokens"], 20);

    let (code, text, err) = rig.run(&["cost", "--host", "devbox"])?;
    ensure!(code == 0, "{err}");
    let head = text.lines().next().unwrap_or_default();
    ensure!(head.contains("Host") && text.contains("devbox") && text.contains("here"), "{text}");

    // A range that cannot match is refused before any machine is asked.
    let (code, _, err) = rig.run(&["cost", "--since", "2026-11-02", "--until", "2026-11-01", "--host", "devbox"])?;
    ensure!(code == 1 && err.contains("is after --until"), "{code} {err}");
    Ok(())
}

// ---- hostile remotes (issue 32) ------------------------------------------------------------

/// Makes `alias`'s "Mimesis" a shell script: what a hostile (or broken) machine runs when
/// asked for `mimesis serve --stdio`, reached through the real sshd.
fn hostile_helper(rig: &Rig, alias: &str, script: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let bin = rig.remote_data(alias).join("bin");
    std::fs::create_dir_all(&bin)?;
    let path = bin.join("mimesis");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n"))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// A file the hostile script `cat`s: one JSON value a line.
fn said(rig: &Rig, name: &str, lines: impl IntoIterator<Item = Value>) -> Result<PathBuf> {
    use std::io::Write;
    let path = rig.base.join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
    for l in lines {
        writeln!(f, "{l}")?;
    }
    f.flush()?;
    Ok(path)
}

fn hello(protocol: u32, version: &str) -> Value {
    json!({"type": "hello", "protocol": protocol, "version": version, "os": "linux", "arch": "x86_64"})
}

/// A row whose every text field is hostile.
fn hostile_row(n: u32) -> Value {
    let h = HOSTILE;
    json!({
        "sessionId": id(n), "projectId": h, "cwd": h, "repoRoot": h, "branch": h, "goal": h, "summary": h,
        "title": h, "status": "waiting_for_approval", "hasPendingToolUse": true, "pendingTool": {"tool": h, "target": h},
        "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": h,
        "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
        "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null, "supersededAt": null,
        "workChainId": h, "workChainName": h, "chainLength": 1, "source": "watcher", "supervision": null,
        "live": true, "pid": 7, "transcriptPath": h, "permissionMode": h, "malformedLines": 0, "statusFile": null,
        "name": h, "host": h
    })
}

/// One timeline item of every kind, every text field hostile.
fn hostile_items() -> Value {
    let (h, ts) = (HOSTILE, "2026-11-25T10:00:00.000Z");
    json!([
        {"kind": "prompt", "uuid": h, "timestamp": ts, "text": h},
        {"kind": "assistant_text", "uuid": h, "timestamp": ts, "text": h, "model": h},
        {"kind": "thinking", "uuid": h, "timestamp": ts, "text": h, "redacted": false},
        {"kind": "tool_call", "uuid": h, "timestamp": ts, "toolUseId": h, "tool": h, "input": {"command": h},
         "result": {"content": h, "isError": true, "timestamp": ts}},
        {"kind": "compaction", "uuid": h, "timestamp": ts, "trigger": h, "preTokens": 5, "summary": h},
        {"kind": "api_error", "uuid": h, "timestamp": ts, "text": h, "status": 529, "retrying": true},
        {"kind": "system", "uuid": h, "timestamp": ts, "subtype": h, "text": h},
        {"kind": "segment", "uuid": h, "timestamp": ts, "sessionId": id(1), "previousSessionId": id(2), "reason": h},
        {"kind": "answer", "uuid": h, "timestamp": ts, "tool": h, "target": h, "behavior": h, "choice": h,
         "message": h, "answers": {h: h}, "via": h, "text": h},
    ])
}

#[test]
fn no_word_of_a_hostile_remote_reaches_the_terminal_raw() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    // It says hello, sends rows whose every field is hostile, answers every `show` with a
    // timeline whose every field is hostile, then a supervision event, and stays.
    let start = said(
        &rig,
        "start.jsonl",
        [hello(PROTOCOL, "0.1.0"), json!({"type": "snapshot", "sessions": [hostile_row(1)]})],
    )?;
    let items = rig.base.join("items.json");
    std::fs::write(&items, hostile_items().to_string())?;
    hostile_helper(
        &rig,
        "devbox",
        &format!(
            "read -r hello; cat '{start}'\n\
             while read -r line; do case \"$line\" in *'\"show\"'*)\n\
               req=$(printf '%s' \"$line\" | sed 's/.*\"req\":\\([0-9]*\\).*/\\1/')\n\
               printf '{{\"type\":\"timeline\",\"req\":%s,\"items\":%s}}\\n' \"$req\" \"$(cat '{items}')\";; esac; done",
            start = start.display(),
            items = items.display()
        ),
    )?;
    for args in [
        &["ls", "--host", "devbox", "--no-local"][..],
        &["ls", "--json", "--host", "devbox", "--no-local"],
        &["show", &format!("devbox:{}", id(1))],
        &["show", &format!("devbox:{}", id(1)), "--json"],
    ] {
        let (code, out, err) = rig.run(args)?;
        ensure!(code == 0, "{args:?}: {code} {err}");
        ensure_inert(&format!("{args:?}"), out.as_bytes())?;
        ensure_inert(&format!("{args:?} on stderr"), err.as_bytes())?;
        ensure!(out.contains("31m"), "{args:?} shows the text around the escapes: {out}");
    }
    // Before issue 32 the text timeline printed the model and a segment's reason raw.
    let (_, out, _) = rig.run(&["show", &format!("devbox:{}", id(1))])?;
    ensure!(out.contains("● Claude x\u{fffd}]52;c;") && out.contains("══ x\u{fffd}]52"), "{out}");

    // `watch` in text: the host's line, the row, and the configured machines' states.
    let mut watch = rig.command()?;
    let mut child = watch
        .args(["watch", "--host", "devbox", "--no-local"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let lines = stdout_lines(&mut child)?;
    let mut seen = String::new();
    let deadline = Instant::now() + T;
    while !(seen.contains("live") && seen.contains(&id(1)[..8])) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(l) = lines.recv_timeout(left) else {
            let _ = child.kill();
            bail!("watch showed no live host and row within {T:?}:\n{seen}")
        };
        seen.push_str(&l);
        seen.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    ensure_inert("watch", seen.as_bytes())?;
    Ok(())
}

#[test]
fn a_hostile_remotes_words_in_errors_are_filtered_and_cut_short() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let long = format!("{HOSTILE}{}", "A".repeat(20_000));
    let cases = [
        // The version string in "speaks protocol 99".
        ("protocol", said(&rig, "p.jsonl", [hello(99, &long)])?, "speaks protocol 99"),
        // serde's "unknown variant `…`".
        ("variant", said(&rig, "v.jsonl", [hello(PROTOCOL, "0.1.0"), json!({"type": long})])?, "unknown variant"),
    ];
    for (what, lines, needle) in cases {
        hostile_helper(&rig, "devbox", &format!("read -r hello; cat '{}'; exec sleep 30", lines.display()))?;
        let (code, _, err) = rig.run(&["ls", "--host", "devbox", "--no-local"])?;
        ensure!(code == 1 && err.contains(needle), "{what}: {code} {err}");
        ensure_inert(what, err.as_bytes())?;
        ensure!(err.len() < 1_000, "{what}: the remote's words are quoted at length: {} bytes", err.len());
    }
    // The system name after mimesis-helper-missing.
    let name = rig.base.join("uname.txt");
    std::fs::write(&name, &long)?;
    hostile_helper(
        &rig,
        "devbox",
        &format!("printf 'mimesis-helper-missing %s\\n' \"$(cat '{}')\" >&2; exit 127", name.display()),
    )?;
    let (code, _, err) = rig.run(&["ls", "--host", "devbox", "--no-local"])?;
    ensure!(code == 1 && err.contains("not installed"), "{code} {err}");
    ensure_inert("helper missing", err.as_bytes())?;
    ensure!(err.len() < 1_000, "the system name is quoted at length: {} bytes", err.len());
    Ok(())
}

/// The `ssh` processes `mimesis` runs against this rig's server, alive now.
fn our_ssh(rig: &Rig) -> Vec<u32> {
    let config = rig.sshd.client_config.to_string_lossy().into_owned();
    mimesis_os::procs::all()
        .iter()
        .filter(|p| p.state != 'Z')
        .filter(|p| {
            mimesis_os::procs::cmdline(p.pid)
                .is_some_and(|c| c.first().is_some_and(|a| a.ends_with("ssh")) && c.contains(&config))
        })
        .map(|p| p.pid)
        .collect()
}

fn ensure_gone(rig: &Rig, what: &str) -> Result<()> {
    let deadline = Instant::now() + T;
    loop {
        let left = our_ssh(rig);
        if left.is_empty() {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "{what}: its ssh outlived it: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_host_that_says_hello_and_goes_silent_is_given_up_and_its_ssh_ends_with_mimesis() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    // Hello, then nothing, its input ignored, for longer than any wait of the test.
    let lines = said(&rig, "hello.jsonl", [hello(PROTOCOL, "0.1.0")])?;
    hostile_helper(&rig, "devbox", &format!("read -r hello; cat '{}'; exec sleep 90", lines.display()))?;

    // Every wait is bounded: before issue 32, `ls --host` waited for the snapshot for ever.
    // The variable sets every wait, the hello's too: on a loaded machine ssh took longer
    // than 2 s to connect once (under cargo-nextest, load 7-8), the host then given up before
    // its hello; `ls` is run again then, at most 3 times in all.
    let wait = [("MIMESIS_REMOTE_WAIT_SECS", "2")];
    for n in 1..=3 {
        let (code, _, err) = rig.run_with(&["ls", "--host", "devbox", "--no-local"], &wait)?;
        ensure_gone(&rig, "ls after giving up")?;
        if code == 1 && err.contains("sent no sessions within 2 s of its hello") {
            break;
        }
        ensure!(n < 3 && code == 1 && err.contains("the host did not answer within 2 s"), "{code} {err}");
        eprintln!("ls {n}: no hello within 2 s (a slow connection): again");
    }
    let (code, _, err) = rig.run_with(&["show", &format!("devbox:{}", id(1))], &wait)?;
    ensure!(code == 1 && err.contains("did not answer within 2 s"), "{code} {err}");
    ensure_gone(&rig, "show after giving up")?;

    // Interrupted or killed while it waits: its ssh (in a process group of its own, which
    // a Ctrl-C does not reach) ends with it.
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
        let mut child = rig
            .command()?
            .args(["ls", "--host", "devbox", "--no-local"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let deadline = Instant::now() + T;
        while our_ssh(&rig).is_empty() {
            ensure!(Instant::now() < deadline, "no ssh started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let _ = child.wait();
        ensure_gone(&rig, &format!("ls after signal {signal}"))?;
    }
    Ok(())
}

#[test]
fn a_host_that_keeps_discovering_sessions_or_sends_a_huge_line_is_cut_off_with_a_sentence() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let row = |n: usize| {
        let mut r = hostile_row(0);
        r["sessionId"] = format!("eeeeeeee-0000-4000-8000-{n:012}").into();
        r
    };
    // A snapshot, then `discovered` after `discovered`: cut at 20,000 sessions, the rows
    // held so far kept, the host stale with a sentence.
    let discovering =
        (0..=20_000).map(|n| json!({"type": "event", "event": {"type": "discovered", "session": row(n)}}));
    let lines = said(
        &rig,
        "discover.jsonl",
        [hello(PROTOCOL, "0.1.0"), json!({"type": "snapshot", "sessions": []})].into_iter().chain(discovering),
    )?;
    hostile_helper(&rig, "devbox", &format!("read -r hello; cat '{}'; exec sleep 60", lines.display()))?;
    let mut w = Watch::start(&rig, &["--json", "--host", "devbox", "--no-local"])?;
    let cut = w.wait_for("the host cut off", |v| v["type"] == "host" && v["state"] == "stale")?;
    assert_eq!(cut["sessions"], 20_000, "{cut}");
    let message = cut["message"].as_str().unwrap_or_default();
    ensure!(message.contains("more than 20,000 sessions"), "{message}");
    drop(w);

    // One snapshot line longer than 64 MiB: refused while it is read, never held whole.
    let huge = rig.base.join("huge.jsonl");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&huge)?);
        writeln!(f, "{}", hello(PROTOCOL, "0.1.0"))?;
        write!(f, "{{\"type\":\"snapshot\",\"sessions\":[")?;
        let one = row(1).to_string();
        let mut n = 0;
        while n < 65 * 1024 * 1024 {
            write!(f, "{one},")?;
            n += one.len() + 1;
        }
        writeln!(f, "{one}]}}")?;
        f.flush()?;
    }
    hostile_helper(&rig, "devbox", &format!("read -r hello; cat '{}'; exec sleep 60", huge.display()))?;
    let (code, _, err) = rig.run(&["ls", "--host", "devbox", "--no-local"])?;
    ensure!(code == 1 && err.contains("more than 64.0 MiB on one line"), "{code} {err}");
    Ok(())
}

#[test]
fn a_remote_update_patches_only_its_own_fields() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let mut mine = hostile_row(1);
    mine["goal"] = "fix the flaky test".into();
    mine["transcriptPath"] = "/srv/.claude/projects/-srv-api/x.jsonl".into();
    let hijack = json!({"type": "event", "event": {"type": "updated", "sessionId": id(1), "changes":
        {"sessionId": "hijack", "transcriptPath": "/etc/shadow", "host": "elsewhere", "goal": "and the docs"}}});
    let lines = said(
        &rig,
        "update.jsonl",
        [hello(PROTOCOL, "0.1.0"), json!({"type": "snapshot", "sessions": [mine]}), hijack],
    )?;
    hostile_helper(&rig, "devbox", &format!("read -r hello; cat '{}'; exec sleep 60", lines.display()))?;
    let mut w = Watch::start(&rig, &["--json", "--host", "devbox", "--no-local"])?;
    let update = w.wait_for("the update", |v| v["type"] == "updated")?;
    assert_eq!(update["sessionId"], id(1), "keyed by the id it was sent for: {update}");
    assert_eq!(update["host"], "devbox");
    // Before issue 32: {"goal", "host", "sessionId": "hijack", "transcriptPath": "/etc/shadow"}.
    assert_eq!(update["changes"], json!({"goal": "and the docs"}), "{update}");
    Ok(())
}

#[test]
fn search_runs_on_each_host_and_its_hits_are_merged_with_the_host_named() -> Result<()> {
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let remote = write_session(&rig.remote_root("devbox"), "-srv-api", 1, "drop the kingfisher cache", "/srv/api")?;
    write_session(&rig.local_root(), "-home-me-p", 3, "the kingfisher is local", "/home/me/p")?;
    append(
        &remote,
        &json!({"type": "user", "uuid": "late", "timestamp": "2026-11-25T12:00:00.000Z", "sessionId": id(1),
            "message": {"role": "user", "content": "kingfisher again, later"}}),
    )?;
    let v = rig.json(&["search", "kingfisher", "--json", "--host", "devbox", "--install-helper"])?;
    let hits = v["hits"].as_array().context("hits")?;
    let seen: Vec<(&str, &Value)> = hits.iter().map(|h| (h["uuid"].as_str().unwrap_or(""), &h["host"])).collect();
    // Newest first; u1 and u3 were written at the same instant.
    assert_eq!(seen, [("late", &json!("devbox")), ("u1", &json!("devbox")), ("u3", &Value::Null)], "{v}");
    assert_eq!(v["total"], 3);
    // A host that cannot be reached is said on stderr; what the others found is printed.
    let (code, out, err) = rig.run(&["search", "kingfisher", "--json", "--host", "nosuchhost"])?;
    ensure!(code == 1 && err.contains("nosuchhost"), "{code} {err}");
    let v: Value = serde_json::from_str(&out)?;
    assert_eq!(v["hits"][0]["uuid"], "u3");
    assert_eq!(v["failed"][0]["host"], "nosuchhost");
    Ok(())
}

/// The window's search of the machines it follows (`search_host`): each host's search runs
/// on the hub's own connection to it, its hits come back with `host`, a record appended
/// there is found by the next search, and a machine that cannot be reached is a sentence
/// naming why, at once (the window shows this machine's hits meanwhile).
#[test]
fn the_windows_hub_searches_each_followed_machine_on_its_connection() -> Result<()> {
    use mimesis_core::clock::{Clock, SystemClock};
    use mimesis_core::remote::{Destination, HostState};
    use mimesis_core::search::Request;
    let Some(rig) = Rig::new()? else { return Ok(()) };
    let remote = write_session(&rig.remote_root("devbox"), "-srv-api", 1, "drop the kingfisher cache", "/srv/api")?;
    rig.json(&["ls", "--json", "--host", "devbox", "--no-local", "--install-helper"])?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let clock: std::sync::Arc<dyn Clock> = std::sync::Arc::new(SystemClock);
    let hub = mimesis_wiring::remote::Hub::new(
        mimesis_wiring::remote::Ssh::new("ssh", Some(rig.sshd.client_config.clone())),
        clock,
    );
    let dests: Vec<Destination> = ["devbox", "nosuchhost"]
        .iter()
        .map(|d| Destination::parse(d).map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    rt.block_on(async { hub.set_hosts(&dests) });
    let state = |h: &str| hub.hosts().into_iter().find(|i| i.host == h).map(|i| i.state);
    let deadline = Instant::now() + T;
    while state("devbox") != Some(HostState::Live) || state("nosuchhost") == Some(HostState::Connecting) {
        ensure!(Instant::now() < deadline, "the hub's hosts: {:?}\nsshd: {}", hub.hosts(), rig.sshd.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // As the window asks: its timeline open, then the search with the window's limit.
    let items = rt.block_on(hub.timeline(&format!("devbox:{}", id(1)))).map_err(anyhow::Error::msg)?;
    ensure!(!items.is_empty(), "the remote timeline");
    let req = |q: &str| Request { query: q.into(), limit: Some(50), ..Request::default() };
    let found = rt.block_on(hub.search("devbox", &req("kingfisher"))).map_err(anyhow::Error::msg)?;
    let seen: Vec<(&str, Option<&str>)> = found.hits.iter().map(|h| (h.uuid.as_str(), h.host.as_deref())).collect();
    assert_eq!(seen, [("u1", Some("devbox"))], "{found:?}");
    assert_eq!(found.hits[0].session_id.as_str(), id(1));
    // What is appended there is found by the next search.
    append(
        &remote,
        &json!({"type": "user", "uuid": "late", "timestamp": "2026-11-25T12:00:00.000Z", "sessionId": id(1),
            "message": {"role": "user", "content": "the kingfisher again, later"}}),
    )?;
    let found = rt.block_on(hub.search("devbox", &req("kingfisher"))).map_err(anyhow::Error::msg)?;
    let uuids: Vec<&str> = found.hits.iter().map(|h| h.uuid.as_str()).collect();
    assert_eq!(uuids, ["late", "u1"], "newest first: {found:?}");
    // The host's refusal of a query is its sentence.
    let refused = rt.block_on(hub.search("devbox", &req("-kingfisher")));
    ensure!(refused.as_ref().is_err_and(|e| e.to_string().contains("only excludes")), "{refused:?}");
    // A machine that cannot be reached is said at once, with why.
    let t0 = Instant::now();
    let failed = rt.block_on(hub.search("nosuchhost", &req("kingfisher")));
    ensure!(failed.as_ref().is_err_and(|e| e.to_string().starts_with("not reachable — ")), "{failed:?}");
    ensure!(t0.elapsed() < Duration::from_secs(5), "an unreachable host was waited for: {:?}", t0.elapsed());
    let unknown = rt.block_on(hub.search("elsewhere", &req("kingfisher")));
    ensure!(unknown.as_ref().is_err_and(|e| e.to_string().contains("not in the list")), "{unknown:?}");
    drop(hub);
    Ok(())
}
