//! Sessions on another machine over SSH (issue 13), against a real OpenSSH server on
//! loopback (`support::sshd`) and the real `mimesis` binary on both sides: the helper is
//! installed on first connect (and only with the user's word), `ls --host` and `show
//! host:id` bring the remote's sessions with `host`, `watch --host` follows an append on
//! the remote, a server that goes away leaves the host stale with its roster kept and it
//! comes back by itself, and hostile values run nothing anywhere.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
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
        let child = self.command()?.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
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
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
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

/// The terminal a window opens for a session on another machine, as the app opens it:
/// `ssh -t host mimesis run --session-id …` in a pseudo-terminal of its own.
fn remote_terminal(rig: &Rig, alias: &str, run_args: &[&str]) -> Result<mimesis_wiring::plain::PlainTerminal> {
    use mimesis_core::remote::{Destination, remote_mimesis};
    let ssh = mimesis_wiring::remote::Ssh { program: "ssh".into(), config: Some(rig.sshd.client_config.clone()) };
    let mut args = vec!["run"];
    args.extend_from_slice(run_args);
    let argv = ssh.argv(&Destination::parse(alias).map_err(anyhow::Error::msg)?, &remote_mimesis(&args), true);
    mimesis_wiring::plain::PlainTerminal::start(mimesis_wiring::plain::PlainSpec {
        program: argv[0].clone().into(),
        args: argv[1..].to_vec(),
        cwd: rig.base.clone(),
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
    let row = w.wait_for("the supervised row", |v| {
        let s = if v["type"] == "discovered" { &v["session"] } else { v };
        s["sessionId"] == id && v["host"].as_str().or(s["host"].as_str()) == Some("gpu")
    })?;
    let supervised = if row["type"] == "discovered" {
        row["session"]["supervision"].clone()
    } else {
        row["changes"]["supervision"].clone()
    };
    ensure!(supervised.is_object() || row["type"] == "updated", "supervised on its machine: {row}");

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
