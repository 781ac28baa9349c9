//! Mimesis as the face of Claude Code 2.1.332's own fleet (issue 33 §1), for real and
//! offline: the newest CLI against the scripted mock API, its background service started
//! by `mimesis bg` (through `claude --bg`) in an isolated home and ended through its own
//! verb by [`Background`]'s drop, after which no process of the home is left.
//!
//! What each test shows: a background session dispatched by `mimesis bg` is a row of kind
//! `background` with its job (checked against `claude agents --json`, which the product
//! never polls) in the live engine and in `mimesis ls --json`; `mimesis logs|stop|respawn|
//! rm|attach` act on it through Claude Code's own verbs; a dialog in a background session
//! shows as waiting for approval. Each prints `[latency]` lines: how long after the
//! registry, and after the job's state file, the roster's status followed (negative: the
//! roster knew first), and `[bg]` lines with the verbs' timings.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_tests::bg::Background;
use mimesis_tests::claude::{CLAUDE_CODE_NEWEST, ClaudeHome, ensure_claude_version};
use mimesis_tests::engine_watch::{EngineWatch, State};
use mimesis_tests::files::{FileEvent, Recorder};
use mimesis_tests::mock_api::{MockApi, Reply};
use mimesis_tests::pty::{Pty, PtyCommand};
use serde_json::{Value, json};

/// A ceiling for every wait (never a sleep).
const T: Duration = Duration::from_secs(60);

struct Setup {
    api: MockApi,
    home: ClaudeHome,
    claude: PathBuf,
    data: tempfile::TempDir,
}

impl Setup {
    fn new() -> Result<Setup> {
        let claude = ensure_claude_version(CLAUDE_CODE_NEWEST)?;
        let api = MockApi::start()?;
        let home = ClaudeHome::for_version(&api.base_url(), CLAUDE_CODE_NEWEST)?;
        Ok(Setup { api, home, claude, data: tempfile::tempdir()? })
    }

    fn background(&self) -> Background {
        Background::new(&self.home, &self.claude)
    }

    /// The environment `mimesis` runs in: the home's, with the 2.1.332 CLI as its agent.
    fn env(&self) -> Vec<(String, String)> {
        let mut env = self.home.env();
        env.push(("MIMESIS_AGENT".into(), self.claude.to_string_lossy().into_owned()));
        env.push(("MIMESIS_DATA_DIR".into(), self.data.path().to_string_lossy().into_owned()));
        env
    }

    fn mimesis(&self, args: &[&str]) -> Result<Command> {
        let mut cmd = Command::new(mimesis_tests::mimesis::mimesis_bin()?);
        cmd.args(args).env_clear().envs(self.env()).current_dir(self.home.project_dir());
        cmd.stdin(std::process::Stdio::null());
        Ok(cmd)
    }

    /// `mimesis <args>`: (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> Result<(i32, String, String)> {
        let out = mimesis_tests::mimesis::wait_output(
            self.mimesis(args)?.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn()?,
            T,
        )?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// `mimesis ls --json`, the row of `id`.
    fn ls_row(&self, id: &str) -> Result<Option<Value>> {
        let (code, out, err) = self.run(&["ls", "--json"])?;
        ensure!(code == 0, "mimesis ls --json: {err}");
        let rows: Vec<Value> = serde_json::from_str(&out).context("ls --json")?;
        Ok(rows.into_iter().find(|r| r["sessionId"] == json!(id)))
    }
}

/// `mimesis bg --cwd <project> --json <prompt…>` (with `extra` flags): (session id, job id).
fn dispatch(s: &Setup, extra: &[&str], prompt: &str) -> Result<(String, String, Duration)> {
    let project = s.home.project_dir().to_string_lossy().into_owned();
    let mut args = vec!["bg", "--cwd", project.as_str(), "--json"];
    args.extend_from_slice(extra);
    args.push(prompt);
    let t0 = Instant::now();
    let (code, out, err) = s.run(&args)?;
    let took = t0.elapsed();
    ensure!(code == 0, "mimesis bg exited {code}: {err}");
    let v: Value = serde_json::from_str(out.trim()).with_context(|| format!("mimesis bg printed {out:?}"))?;
    let sid = v["sessionId"].as_str().context("sessionId")?.to_owned();
    let job = v["jobId"].as_str().context("jobId")?.to_owned();
    ensure!(sid.starts_with(&job) && job.len() == 8, "{v}");
    Ok((sid, job, took))
}

/// When the engine first reported `status` for `id` after `since`, against the last file
/// change before it that `cause` picks (positive: the roster followed the file), else the
/// first after it (negative: the roster knew first).
fn latency(
    engine: &EngineWatch,
    rec: &Recorder,
    since: Instant,
    id: &str,
    status: &str,
    cause: impl Fn(&FileEvent) -> bool,
) -> Option<f64> {
    let reported = engine.with(|st: &State| {
        st.status_changes.iter().find(|(at, sid, s)| *at >= since && sid == id && s == status).map(|c| c.0)
    })?;
    let changes: Vec<Instant> =
        rec.events().into_iter().filter(|e| e.at >= since && cause(&e.event)).map(|e| e.at).collect();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    match changes.iter().rev().find(|at| **at <= reported) {
        Some(at) => Some(ms(reported - *at)),
        None => changes.first().map(|at| -ms(*at - reported)),
    }
}

fn registry_is<'a>(id: &'a str, status: &'static str) -> impl Fn(&FileEvent) -> bool + 'a {
    move |e| {
        matches!(e, FileEvent::Session { value, .. }
            if value["sessionId"] == json!(id) && value["status"] == json!(status))
    }
}

fn job_is<'a>(job: &'a str, key: &'static str, value: &'static str) -> impl Fn(&FileEvent) -> bool + 'a {
    move |e| matches!(e, FileEvent::Job { id, value: v } if id == job && v[key] == json!(value))
}

fn report(what: &str, against: &str, ms: Option<f64>) {
    match ms {
        Some(ms) => eprintln!("[latency] 2.1.332 background: {what}: {against} → roster in {ms:.0} ms"),
        None => eprintln!("[latency] 2.1.332 background: {what}: {against}: not measured"),
    }
}

fn field<'a>(st: &'a State, id: &str, key: &str) -> Option<&'a Value> {
    st.field(id, key)
}

/// `mimesis bg` → the row (kind, job) in the engine and in `mimesis ls --json`, checked
/// against `claude agents --json` → `mimesis logs` → `stop` → `respawn` → `rm`; unknown ids
/// refused with a sentence.
#[test]
fn a_background_session_through_mimesis_verbs() -> Result<()> {
    let s = Setup::new()?;
    let engine = EngineWatch::start(s.home.config_dir())?;
    let rec = Recorder::start(s.home.config_dir());
    let bg = s.background();
    let result = (|| -> Result<()> {
        s.api.push(Reply::text("Hello from the background.").with_delay(Duration::from_millis(300)));
        let t0 = Instant::now();
        let (sid, job, took) = dispatch(&s, &[], "say hello")?;
        engine.wait_for("the row of the background session", T, |st| {
            field(st, &sid, "kind") == Some(&json!("background"))
                && field(st, &sid, "job").is_some_and(|j| j["id"] == json!(job))
        })?;
        let to_row = t0.elapsed();
        let listed = bg.agent(&job, false)?.context("claude agents --json lists it")?;
        ensure!(listed["sessionId"] == json!(sid) && listed["kind"] == json!("background"), "{listed}");
        eprintln!(
            "[bg] mimesis bg returned in {} ms; the row (kind background, its job) in the engine {} ms after dispatch",
            took.as_millis(),
            to_row.as_millis()
        );

        engine
            .wait_for("the prompt in the transcript", T, |st| field(st, &sid, "goal") == Some(&json!("say hello")))?;
        let turn = Instant::now();
        engine.wait_for("the turn over: job done, waiting for input, the job's label", T, |st| {
            field(st, &sid, "job").is_some_and(|j| j["state"] == json!("done"))
                && field(st, &sid, "status") == Some(&json!("waiting_for_input"))
                && field(st, &sid, "name") == Some(&json!(MockApi::JOB_LABEL))
        })?;
        report(
            "dispatch (working)",
            "registry busy",
            latency(&engine, &rec, t0, &sid, "working", registry_is(&sid, "busy")),
        );
        report(
            "dispatch (working)",
            "job state.json written (working)",
            latency(&engine, &rec, t0, &sid, "working", job_is(&job, "state", "working")),
        );
        let idle = latency(&engine, &rec, turn, &sid, "waiting_for_input", registry_is(&sid, "idle"));
        report("turn over (waiting_for_input)", "registry idle", idle);
        if std::env::var_os("MIMESIS_BG_TRACE").is_some() {
            let changes = engine.with(|st| {
                st.status_changes
                    .iter()
                    .map(|(at, id, s)| (*at, format!("roster {} {s}", &id[..8])))
                    .collect::<Vec<_>>()
            });
            eprintln!("{}", rec.timeline_with(changes));
        }
        report(
            "turn over (waiting_for_input)",
            "job tempo idle",
            latency(&engine, &rec, turn, &sid, "waiting_for_input", job_is(&job, "tempo", "idle")),
        );

        // The one-shot roster says the same, and agrees with Claude Code's own list.
        let row = s.ls_row(&sid)?.context("mimesis ls --json lists it")?;
        let listed = bg.wait_agent_state(&job, &row["job"]["state"], T)?;
        ensure!(row["kind"] == json!("background") && row["live"] == json!(true), "{row}");
        ensure!(row["job"]["id"] == listed["id"] && row["job"]["state"] == listed["state"], "{row} / {listed}");
        ensure!(row["pid"] == listed["pid"], "the row's pid is the session's own process: {row} / {listed}");
        ensure!(row["job"]["intent"] == json!("say hello") && row["job"]["attempt"] == json!(1), "{row}");
        ensure!(row["name"] == listed["name"], "{row} / {listed}");

        // logs: the screen as plain text, no escape left.
        let (code, out, err) = s.run(&["logs", &job])?;
        ensure!(code == 0, "mimesis logs: {err}");
        ensure!(out.contains("Hello from the background.") && !out.contains('\u{1b}'), "logs: {out:?}");

        // Unknown and malformed ids: a sentence, exit 1; nothing run.
        for (q, says) in [("zz999999", "no session with id zz999999"), ("../x", "is not a session id")] {
            let (code, _, err) = s.run(&["stop", q])?;
            ensure!(code == 1 && err.contains(says), "stop {q}: {code} {err}");
        }

        // stop (by short id): the worker goes, the row is not live.
        let t1 = Instant::now();
        let (code, out, err) = s.run(&["stop", &job])?;
        ensure!(code == 0 && out.trim() == format!("stopped {job}"), "stop: {code} {out} {err}");
        let returned = t1.elapsed();
        engine.wait_for("the stopped row not live", T, |st| field(st, &sid, "live") == Some(&json!(false)))?;
        eprintln!(
            "[bg] mimesis stop: exit 0 in {} ms; the row not live {} ms after it was run",
            returned.as_millis(),
            t1.elapsed().as_millis()
        );
        // (The service takes the worker off its roster file in its own time.)
        bg.wait("stopped: no worker", T, |b| b.worker(&job).is_none())?;
        ensure!(bg.agent(&job, false)?.is_none(), "stopped: not among the running sessions");
        let row = s.ls_row(&sid)?.context("still listed")?;
        ensure!(
            row["live"] == json!(false) && row["status"] == json!("idle") && row["job"]["id"] == json!(job),
            "{row}"
        );

        // respawn (by a prefix of the session id): resumed, live again.
        let t2 = Instant::now();
        let (code, out, err) = s.run(&["respawn", &sid[..12]])?;
        ensure!(code == 0 && out.trim() == format!("restarted {job}"), "respawn: {code} {out} {err}");
        let returned = t2.elapsed();
        engine.wait_for("the respawned row live", T, |st| field(st, &sid, "live") == Some(&json!(true)))?;
        eprintln!(
            "[bg] mimesis respawn: exit 0 in {} ms; the row live {} ms after it was run",
            returned.as_millis(),
            t2.elapsed().as_millis()
        );
        bg.wait("respawned: a worker", T, |b| b.worker(&job).is_some())?;

        // rm: the job goes; the row stays, a background session's transcript.
        let (code, out, err) = s.run(&["rm", &sid])?;
        ensure!(code == 0 && out.trim() == format!("removed {job}"), "rm: {code} {out} {err}");
        engine.wait_for("the removed job gone from the row", T, |st| {
            field(st, &sid, "job") == Some(&Value::Null) && field(st, &sid, "live") == Some(&json!(false))
        })?;
        let row = s.ls_row(&sid)?.context("the transcript stays")?;
        ensure!(row["kind"] == json!("background") && row["job"].is_null(), "{row}");
        Ok(())
    })();
    finish(result, &bg, &rec)
}

/// `mimesis attach <id>` in a terminal: the session's own screen (measured to its first
/// frame); Ctrl+Z detaches and the session goes on.
#[test]
fn attach_opens_the_session_in_the_users_terminal() -> Result<()> {
    let s = Setup::new()?;
    let bg = s.background();
    let rec = Recorder::start(s.home.config_dir());
    let result = (|| -> Result<()> {
        s.api.push(Reply::text("Attached hello."));
        let (sid, job, _) = dispatch(&s, &[], "say hello")?;
        bg.wait("the session at its prompt", T, |b| {
            b.registry_of_job(&job).iter().any(|(_, r)| r["status"] == json!("idle"))
        })?;
        let mut cmd = PtyCommand::new(mimesis_tests::mimesis::mimesis_bin()?)
            .args(["attach", &sid[..10]])
            .envs(s.env())
            .cwd(s.home.project_dir())
            .size(120, 40);
        cmd = cmd.env("TERM", "xterm-256color");
        let t0 = Instant::now();
        let mut pty = Pty::spawn(cmd)?;
        pty.wait_for("the session's screen through attach", T, |sc| sc.contains("say hello"))?;
        let first = t0.elapsed();
        pty.wait_for("the reply", T, |sc| sc.contains("Attached hello."))?;
        eprintln!("[latency] 2.1.332 background: mimesis attach → first frame in {} ms", first.as_millis());
        pty.send("\x1a")?;
        let exit = pty.wait_exit(T)?;
        ensure!(exit.success(), "Ctrl+Z detaches with exit 0: {exit:?}");
        ensure!(bg.worker(&job).is_some(), "detached, the session goes on");
        // Without a terminal, attach says why.
        let (code, _, err) = s.run(&["attach", &job])?;
        ensure!(code == 1 && err.contains("needs a terminal"), "{code} {err}");
        Ok(())
    })();
    finish(result, &bg, &rec)
}

/// A background session in manual mode at a permission dialog: waiting for approval, from
/// the registry and the job's `tempo: "blocked"` alike; stopped while it waits.
#[test]
fn a_background_sessions_dialog_is_waiting_for_approval() -> Result<()> {
    let s = Setup::new()?;
    let engine = EngineWatch::start(s.home.config_dir())?;
    let rec = Recorder::start(s.home.config_dir());
    let bg = s.background();
    let result = (|| -> Result<()> {
        s.api.push(Reply::tool_use("Bash", json!({"command": "echo bg > bg.txt", "description": "Write bg"})));
        s.api.push(Reply::text("Wrote bg."));
        let t0 = Instant::now();
        let (sid, job, _) = dispatch(&s, &["--permission-mode", "manual"], "write bg")?;
        engine.wait_for("waiting for approval, the job blocked", T, |st| {
            field(st, &sid, "status") == Some(&json!("waiting_for_approval"))
                && field(st, &sid, "job").is_some_and(|j| {
                    j["state"] == json!("blocked") && j["needs"] == json!("approve Bash: echo bg > bg.txt")
                })
        })?;
        // Claude Code's own list says so too (at times a moment later than its job's file).
        bg.wait_agent_state(&job, &json!("blocked"), T)?;
        report(
            "dialog (waiting_for_approval)",
            "registry waiting",
            latency(&engine, &rec, t0, &sid, "waiting_for_approval", registry_is(&sid, "waiting")),
        );
        report(
            "dialog (waiting_for_approval)",
            "job tempo blocked",
            latency(&engine, &rec, t0, &sid, "waiting_for_approval", job_is(&job, "tempo", "blocked")),
        );
        let row = s.ls_row(&sid)?.context("listed")?;
        ensure!(row["status"] == json!("waiting_for_approval") && row["job"]["state"] == json!("blocked"), "{row}");
        let (code, out, _) = s.run(&["stop", &job])?;
        ensure!(code == 0 && out.trim() == format!("stopped {job}"), "{out}");
        engine.wait_for("stopped: idle, not live", T, |st| {
            field(st, &sid, "live") == Some(&json!(false)) && field(st, &sid, "status") == Some(&json!("idle"))
        })?;
        Ok(())
    })();
    finish(result, &bg, &rec)
}

/// The test's result with the service's diagnostics and the files' timeline, after the
/// service is ended through its own verb and no process of it is left.
fn finish(result: Result<()>, bg: &Background, rec: &Recorder) -> Result<()> {
    let result = result.map_err(|e| e.context(format!("{}\n=== files ===\n{}", bg.diagnostics(), rec.timeline())));
    let shutdown = bg.shutdown();
    result?;
    shutdown.map(|_| ())
}

/// What the service's supervisor process carries of Mimesis's owner mark.
fn service_mark(bg: &Background) -> Result<(u32, Option<Vec<u8>>)> {
    let pid = bg.daemon_status().and_then(|d| d["supervisorPid"].as_u64()).context("the service's pid")? as u32;
    Ok((pid, mimesis_os::procs::env_var(pid, mimesis_core::supervision::fleet::OWNER_ENV)))
}

/// No process of Mimesis outlives it (its exit sweep ends what carries its marks, even out
/// of its agents' sessions), yet Claude Code's service is never Mimesis's to end: a service
/// that `mimesis bg` starts carries none of its marks, and one that an agent of Mimesis
/// started (`claude --bg` in its shell, so with its marks) outlives `mimesis run`'s exit
/// sweep and the next start's sweep, sessions included, while the agent's own `setsid`
/// child is ended.
#[test]
fn claude_codes_service_outlives_mimesis_exit_sweep() -> Result<()> {
    use mimesis_core::supervision::fleet::{OWNER_DATA_ENV, OWNER_ENV};
    let s = Setup::new()?;
    let bg = s.background();
    let rec = Recorder::start(s.home.config_dir());
    let result = (|| -> Result<()> {
        // `mimesis bg` run from a shell that carries a Mimesis's marks (inside a supervised
        // session): the service it starts carries none.
        s.api.push(Reply::text("Hello."));
        let project = s.home.project_dir().to_string_lossy().into_owned();
        let out = s
            .mimesis(&["bg", "--cwd", &project, "--json", "say hello"])?
            .env(OWNER_ENV, "1-1")
            .env(OWNER_DATA_ENV, s.data.path())
            .output()?;
        ensure!(out.status.success(), "mimesis bg: {}", String::from_utf8_lossy(&out.stderr));
        let (pid, mark) = service_mark(&bg)?;
        ensure!(mark.is_none(), "the service {pid} started by mimesis bg carries our mark {mark:?}");
        bg.shutdown()?;

        // An agent of `mimesis run` starts the service itself, then a `setsid` child of its own.
        s.api.push(Reply::text("Hello again."));
        let script = "\"$BG_CLAUDE\" --bg 'say hello' > bg.out 2>&1; setsid sleep 300 & echo $! > child.pid; \
                      while [ ! -e go ]; do sleep 0.05; done; exit 0";
        let run = s
            .mimesis(&["run", "--agent", "sh", "--", "-c", script])?
            .env("BG_CLAUDE", &s.claude)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let mut run = Killed(Some(run));
        let dir = s.home.project_dir();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        bg.wait("the agent's claude --bg", T, |_| mimesis_tests::bg::parse_backgrounded(&read("bg.out")).is_some())?;
        bg.wait("the agent's setsid child", T, |_| read("child.pid").trim().parse::<u32>().is_ok())?;
        let job = mimesis_tests::bg::parse_backgrounded(&read("bg.out")).context("its job")?;
        let child: u32 = read("child.pid").trim().parse()?;
        bg.wait("its worker", T, |b| b.worker(&job).is_some())?;
        let (service, mark) = service_mark(&bg)?;
        ensure!(mark.is_some(), "started by an agent of ours, the service {service} carries its mark");
        let worker = bg.worker(&job).and_then(|w| w["pid"].as_u64()).context("the worker's pid")? as u32;
        std::fs::write(dir.join("go"), "")?;
        let status = mimesis_tests::mimesis::wait_output(run.0.take().context("the run")?, T)?;
        ensure!(status.status.success(), "mimesis run: {}", String::from_utf8_lossy(&status.stderr));
        let t0 = Instant::now();
        while mimesis_os::procs::alive(child) {
            ensure!(t0.elapsed() < T, "the agent's setsid child {child} outlived the run");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The next start on the same data dir sweeps what gone owners left: not the service.
        let out = s.mimesis(&["run", "--agent", "sh", "--", "-c", "exit 0"])?.output()?;
        ensure!(out.status.success(), "mimesis run: {}", String::from_utf8_lossy(&out.stderr));
        for (pid, what) in [(service, "the service"), (worker, "the session's PTY host")] {
            ensure!(mimesis_os::procs::alive(pid), "{what} ({pid}) was ended by Mimesis's sweep");
        }
        ensure!(bg.agent(&job, false)?.is_some(), "claude agents still lists {job}");
        eprintln!("[bg] the service ({service}) and its session outlived mimesis run's exit and start sweeps");
        Ok(())
    })();
    finish(result, &bg, &rec)
}

/// A process of the test, killed if the test leaves it running.
struct Killed(Option<std::process::Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
