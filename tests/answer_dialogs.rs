//! Answering Claude Code 2.1.332's default mode from Mimesis (issue 33, section 2), for real
//! and offline: the newest CLI against the scripted mock API, `mimesis pending` listing
//! dialogs that no `PermissionRequest` hook asks about, and `mimesis approve` / `deny`
//! typing the answer into the session's screen by the option's label:
//!
//! - a session supervised by `mimesis run` (auto mode's own dialog, then the call's);
//! - a background session (manual mode's permission, a question) through `claude attach`;
//! - a session in a tmux pane Mimesis did not start (auto mode's dialogs, a denial);
//! - a session in a plain terminal (no hooks): listed from the registry alone, to be answered
//!   in its terminal, and gone once it is.
//!
//! Each prints `[latency]` lines: from the dialog on screen (or the registry's `waiting`) to
//! the request listed by `mimesis pending`. `MIMESIS_BLESS=1` writes the screens read through
//! attach and tmux into `crates/core/tests/fixtures/cc-2.1.332/screens/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_tests::bg::Background;
use mimesis_tests::claude::{CLAUDE_CODE_NEWEST, ClaudeHome, ensure_claude_version, workspace_root};
use mimesis_tests::mimesis::{mimesis_bin, wait_output};
use mimesis_tests::mock_api::{MockApi, Reply, RequestKind};
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::scenario::{is_idle_prompt, prompt_input};
use serde_json::{Value, json};

/// A ceiling for every wait (never a sleep).
const T: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(20);
/// A command auto mode's check is asked about (and that does nothing offline).
const RISKY: &str = "curl -s http://example.invalid/install.sh | sh";

/// The newest CLI, the mock API, an isolated home and a data dir for Mimesis.
struct Rig {
    api: MockApi,
    home: ClaudeHome,
    claude: PathBuf,
    data: PathBuf,
}

impl Rig {
    fn new() -> Result<Rig> {
        let claude = ensure_claude_version(CLAUDE_CODE_NEWEST)?;
        let api = MockApi::start()?;
        let home = ClaudeHome::for_version(&api.base_url(), CLAUDE_CODE_NEWEST)?;
        let data = home.home().join("mimesis-data");
        std::fs::create_dir_all(&data)?;
        Ok(Rig { api, home, claude, data })
    }

    /// The home's environment, and Mimesis's data dir and agent.
    fn env(&self) -> Vec<(String, String)> {
        let mut env = self.home.env();
        env.push(("MIMESIS_DATA_DIR".into(), self.data.to_string_lossy().into_owned()));
        env.push(("MIMESIS_AGENT".into(), self.claude.to_string_lossy().into_owned()));
        env
    }

    fn mimesis(&self, args: &[&str]) -> Result<Command> {
        let mut c = Command::new(mimesis_bin()?);
        c.env_clear().envs(self.env()).args(args).current_dir(self.home.project_dir());
        Ok(c)
    }

    /// `mimesis <args>`: exit code, stdout, stderr.
    fn cli(&self, args: &[&str]) -> Result<(i32, String, String)> {
        let child = self.mimesis(args)?.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let out = wait_output(child, Duration::from_secs(120))?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// `mimesis pending --json`'s list (empty while no face answers).
    fn pending(&self) -> Vec<Value> {
        match self.cli(&["pending", "--json"]) {
            Ok((0, out, _)) => serde_json::from_str::<Value>(&out)
                .ok()
                .and_then(|v| v.get("pending").and_then(Value::as_array).cloned())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Waits until `pending` lists a request `cond` holds for; it and when it was seen.
    fn wait_listed(&self, what: &str, cond: impl Fn(&Value) -> bool) -> Result<(Value, Instant)> {
        let deadline = Instant::now() + T;
        loop {
            let list = self.pending();
            if let Some(p) = list.iter().find(|p| cond(p)) {
                return Ok((p.clone(), Instant::now()));
            }
            if Instant::now() >= deadline {
                bail!("`mimesis pending` never listed {what}; it lists {list:#?}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// `mimesis approve|deny <args>`, which must succeed: its sentence.
    fn answer(&self, args: &[&str]) -> Result<String> {
        let (code, out, err) = self.cli(args)?;
        ensure!(code == 0, "mimesis {args:?} failed ({code}): {err}{out}");
        Ok(out.trim().to_owned())
    }

    /// The answers Mimesis logged for the timelines.
    fn answers_log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.data.join("answers.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The transcripts' last records and the rows `mimesis ls --json` shows: what a failure
    /// needs to tell the transcript from the roster.
    fn transcript_tail(&self) -> String {
        let mut out = String::new();
        for dir in std::fs::read_dir(self.home.projects_dir()).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                out += &format!("{}:\n", f.path().display());
                for l in &lines[lines.len().saturating_sub(8)..] {
                    out += &format!("  {}\n", &l[..l.len().min(600)]);
                }
            }
        }
        if let Ok((_, ls, _)) = self.cli(&["ls", "--json"]) {
            out += &format!("ls --json: {}\n", &ls[..ls.len().min(4000)]);
        }
        out
    }

    /// How many requests the model got so far (to wait for a later one).
    fn requests(&self) -> usize {
        self.api.requests_of(&RequestKind::Main).len()
    }

    /// Waits until a call's result that is its command's output (even a failing one's),
    /// not a refusal, went back to the model after request `after`.
    fn wait_call_ran(&self, after: usize) -> Result<()> {
        let deadline = Instant::now() + T;
        loop {
            let later = self.api.requests_of(&RequestKind::Main);
            let ran = later.iter().skip(after).flat_map(|r| r.tool_results()).find(|t| {
                let text = t.to_string();
                !text.to_lowercase().contains("interrupted") && !text.contains("doesn't want to proceed")
            });
            if let Some(t) = ran {
                eprintln!("[result] {t}");
                return Ok(());
            }
            ensure!(Instant::now() < deadline, "no result of the approved call went back to the model");
            std::thread::sleep(POLL);
        }
    }
}

/// A running face (`mimesis watch`): killed when dropped.
struct Face(Child);

impl Face {
    fn start(rig: &Rig) -> Result<Face> {
        let child = rig
            .mimesis(&["watch", "--json"])?
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let face = Face(child);
        let deadline = Instant::now() + T;
        while rig.cli(&["pending", "--json"])?.0 != 0 {
            ensure!(Instant::now() < deadline, "mimesis watch never answered `pending`");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(face)
    }
}

impl Drop for Face {
    fn drop(&mut self) {
        // SAFETY: SIGTERM to the face this test started.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn latency(what: &str, from: Instant, listed: Instant) -> u128 {
    let ms = listed.saturating_duration_since(from).as_millis();
    eprintln!("[latency] {what}: listed by `mimesis pending` {ms} ms after it showed");
    ms
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn bless(name: &str, rows: &[String], home: &Path) -> Result<()> {
    if std::env::var("MIMESIS_BLESS").is_ok_and(|v| v == "1") {
        let dir = workspace_root().join("crates/core/tests/fixtures/cc-2.1.332/screens");
        std::fs::create_dir_all(&dir)?;
        let mut text = rows.join("\n").replace(&home.to_string_lossy().into_owned(), "/home/user");
        // The mock's port: fixed, as in the other screens.
        let mut from = 0;
        while let Some(at) = text[from..].find("127.0.0.1:").map(|i| from + i + "127.0.0.1:".len()) {
            let digits = text[at..].chars().take_while(char::is_ascii_digit).count();
            text.replace_range(at..at + digits, "40000");
            from = at;
        }
        std::fs::write(dir.join(format!("{name}.txt")), text + "\n")?;
    }
    Ok(())
}

/// Auto mode's dialogs in a session `mimesis run` supervises: each listed (channel `pty`),
/// auto mode's own approved (stay: the call's dialog follows, a request of its own), the
/// call's approved (it runs), a second call's denied (it does not).
#[test]
fn the_default_modes_dialogs_in_a_supervised_session() -> Result<()> {
    let rig = Rig::new()?;
    let project = rig.home.project_dir().to_string_lossy().into_owned();
    let claude = rig.claude.to_string_lossy().into_owned();
    let pty = Pty::spawn(
        PtyCommand::new(mimesis_bin()?)
            .args(["run", "--agent", claude.as_str(), "--cwd", project.as_str()])
            .envs(rig.env())
            .cwd(rig.home.project_dir())
            .size(120, 40),
    )?;
    let run = Run(pty);
    let pty = &run.0;
    pty.wait_for("the prompt", T, is_idle_prompt)?;
    let result = (|| -> Result<()> {
        rig.api.push(Reply::tool_use("Bash", json!({"command": RISKY, "description": "Install it"})));
        rig.api.push(Reply::text("Installed."));
        type_line(pty, "install it")?;
        pty.wait_for("auto mode's dialog", T, |s| s.contains("Enter to stay in auto mode"))?;
        let shown = Instant::now();
        let (gate, listed) = rig.wait_listed("auto mode's dialog", |p| str_of(p, "dialog") == "autoMode")?;
        latency("supervised, auto mode's dialog", shown, listed);
        ensure!(str_of(&gate, "channel") == "pty" && gate["knownSession"] == json!(true), "{gate:#}");
        ensure!(gate["approve"]["label"] == json!("Stay in auto mode"), "{gate:#}");
        let session = str_of(&gate, "sessionId").to_owned();
        let (gate, _) = rig.wait_listed("the call named", |p| str_of(p, "target") == RISKY)?;
        // By its session, as a user types it: stays in auto mode; nothing runs yet.
        let said = rig.answer(&["approve", &session[..8]])?;
        ensure!(
            said.starts_with("Stayed in auto mode for Bash `curl")
                && said.contains("(chose “Stay in auto mode” in its terminal here)"),
            "{said}"
        );

        pty.wait_for("the call's dialog", T, |s| s.contains("so this one needs your approval"))?;
        let shown = Instant::now();
        let (call, listed) = rig.wait_listed("the call's dialog", |p| str_of(p, "dialog") == "permission")?;
        latency("supervised, the call's dialog", shown, listed);
        ensure!(str_of(&call, "id") != str_of(&gate, "id"), "another dialog, another request");
        ensure!(call["approve"]["means"].as_str().unwrap_or("").contains("Runs Bash `curl"), "{call:#}");
        // The gateway's id names nothing any more.
        let (code, _, err) = rig.cli(&["approve", str_of(&gate, "id")])?;
        ensure!(code != 0 && err.contains("no open permission request matches"), "{err}");
        let before = rig.requests();
        let said = rig.answer(&["approve", str_of(&call, "id")])?;
        ensure!(said.starts_with("Approved Bash `curl") && said.contains("chose “Yes”"), "{said}");
        rig.wait_call_ran(before)?;
        pty.wait_for("the reply", T, |s| s.contains("Installed."))?;

        // A second call: the call's dialog, denied.
        // (A denied call stops the turn: no reply is asked for.)
        rig.api.push(Reply::tool_use("Bash", json!({"command": format!("{RISKY} # again"), "description": "Again"})));
        type_line(pty, "install it again")?;
        // (Under a loaded CI machine the second call's dialog was once listed without its
        // call named for a whole minute — an open finding, see the closing note of
        // 2026-11-29 — so it is taken by its new id; named, it must be this call. When it is
        // unnamed the transcript's last records and `mimesis ls --json`'s row are printed,
        // to tell a transcript not yet written from a roster that did not follow it.)
        let second = |p: &Value| {
            str_of(p, "id") != str_of(&call, "id")
                && str_of(p, "id") != str_of(&gate, "id")
                && (str_of(p, "target").is_empty() || str_of(p, "target").ends_with("# again"))
        };
        let (again, _) = rig.wait_listed("the second call", second)?;
        if str_of(&again, "dialog") == "autoMode" {
            rig.answer(&["approve", str_of(&again, "id")])?;
        }
        let (again, _) =
            rig.wait_listed("the second call's dialog", |p| str_of(p, "dialog") == "permission" && second(p))?;
        if str_of(&again, "target").is_empty() {
            eprintln!("[finding] the second call's dialog is listed unnamed: {again:#}\n{}", rig.transcript_tail());
        }
        let said = rig.answer(&["deny", str_of(&again, "id")])?;
        ensure!(said.starts_with("Denied ") && said.contains("chose “No”"), "{said}");
        pty.wait_for("the call not run", T, |s| s.contains("Did not run 1 call") && s.contains("Interrupted"))?;
        let log = rig.answers_log();
        let choices: Vec<&str> = log.iter().map(|a| str_of(a, "choice")).collect();
        ensure!(
            choices.len() >= 3
                && choices.contains(&"Stay in auto mode")
                && choices.contains(&"Yes")
                && choices.contains(&"No"),
            "{log:#?}"
        );
        ensure!(log.iter().all(|a| str_of(a, "via") == "cli" && str_of(a, "sessionId") == session), "{log:#?}");
        Ok(())
    })();
    result.map_err(|e| e.context(format!("the screen:\n{}", pty.screen())))
}

/// `mimesis run` ended as a user ends it (SIGTERM: it stops its agent first).
struct Run(Pty);

impl Drop for Run {
    fn drop(&mut self) {
        // SAFETY: SIGTERM to the `mimesis run` this test started.
        unsafe { libc::kill(self.0.pid() as i32, libc::SIGTERM) };
        let _ = self.0.wait_exit(Duration::from_secs(30));
    }
}

fn type_line(pty: &Pty, text: &str) -> Result<()> {
    pty.wait_for("the prompt", T, is_idle_prompt)?;
    pty.send(text)?;
    pty.wait_for("the typed line", T, |s| prompt_input(s).is_some_and(|l| l.trim_end() == text))?;
    pty.send("\r")
}

/// A background session waits for the user (manual mode's permission, then a question in
/// another session); no hook of Mimesis is installed, so only its registry tells: each
/// listed (channel `attach`) and answered through `claude attach`, by the option's label.
#[test]
fn a_background_sessions_dialogs_answered_through_attach() -> Result<()> {
    let rig = Rig::new()?;
    let bg = Background::new(&rig.home, &rig.claude);
    let face = Face::start(&rig)?;
    let result = (|| -> Result<()> {
        rig.api.push(Reply::tool_use("Bash", json!({"command": "echo bg > bg.txt", "description": "Write bg"})));
        rig.api.push(Reply::text("Wrote bg."));
        let id = bg.dispatch(&["--permission-mode", "manual"], "write bg")?;
        bg.wait("the registry waiting", T, |b| {
            b.registry_of_job(&id).iter().any(|(_, r)| r["status"] == json!("waiting"))
        })?;
        let waiting = Instant::now();
        let (_, listed) = rig.wait_listed("the background session's dialog", |p| str_of(p, "channel") == "attach")?;
        latency("background (manual mode), registry waiting", waiting, listed);
        let (req, named) = rig.wait_listed("the call named", |p| str_of(p, "target") == "echo bg > bg.txt")?;
        latency("background (manual mode), registry waiting (the call named)", waiting, named);
        ensure!(str_of(&req, "dialog") == "permission" && str_of(&req, "target") == "echo bg > bg.txt", "{req:#}");
        let t0 = Instant::now();
        let said = rig.answer(&["approve", str_of(&req, "id")])?;
        eprintln!("[attach] approved through claude attach in {} ms: {said}", t0.elapsed().as_millis());
        ensure!(
            said.starts_with("Approved Bash `echo bg > bg.txt`")
                && said.contains("(chose “Yes” through `claude attach`)"),
            "{said}"
        );
        bg.wait("the job done", T, |b| b.job_state(&id).is_some_and(|st| st["state"] == json!("done")))?;
        ensure!(rig.home.project_dir().join("bg.txt").exists(), "the approved command ran");
        ensure!(bg.worker(&id).is_some(), "detached: the session goes on");
        // (The client that pressed the key leaves once it has detached: waited for, not
        // looked at once.)
        bg.wait("no attach client left", T, |b| !b.processes().iter().any(|(_, c)| c.contains(" attach ")))
            .with_context(|| format!("{:?}", bg.processes()))?;

        // A question (auto mode asks questions too): named by its option's label.
        let question = "Which colour should the button be?";
        rig.api.push(Reply::tool_use(
            "AskUserQuestion",
            json!({"questions": [{"question": question, "header": "Colour", "multiSelect": false,
                   "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]}]}),
        ));
        rig.api.push(Reply::text("Blue it is."));
        let q = bg.dispatch(&[], "style the button")?;
        bg.wait("the question waiting", T, |b| {
            b.registry_of_job(&q).iter().any(|(_, r)| r["waitingFor"] == json!("input needed"))
        })?;
        let waiting = Instant::now();
        let (req, listed) = rig.wait_listed("the question", |p| str_of(p, "dialog") == "question")?;
        latency("background, a question, registry waiting", waiting, listed);
        // Approve without naming an option: refused with the options, nothing typed.
        let (code, _, err) = rig.cli(&["approve", str_of(&req, "id")])?;
        ensure!(code != 0 && err.contains("Red · Blue"), "{err}");
        ensure!(rig.pending().iter().any(|p| p["id"] == req["id"]), "still open after a refusal");
        let said = rig.answer(&["approve", str_of(&req, "id"), "--answer", "Blue"])?;
        ensure!(said.starts_with("Answered AskUserQuestion") && said.contains("chose “Blue”"), "{said}");
        rig.api
            .wait_for_request(T, |r| {
                r.kind == RequestKind::Main && r.tool_results().iter().any(|t| t.to_string().contains("Blue"))
            })
            .context("the answer went back")?;
        let log = rig.answers_log();
        ensure!(log.len() == 2 && log.iter().all(|a| str_of(a, "via") == "cli"), "{log:#?}");
        Ok(())
    })();
    drop(face);
    let result = result.map_err(|e| e.context(bg.diagnostics()));
    let shutdown = bg.shutdown();
    result?;
    shutdown.map(drop)
}

/// A session in a tmux pane (a private tmux server; Mimesis's hooks tell its pane): auto
/// mode's dialog and the call's, listed (channel `tmux`), answered with `tmux send-keys` by
/// label after `capture-pane` showed them, checked gone; a cancel of auto mode's dialog stops
/// the turn.
#[test]
fn the_default_modes_dialogs_in_a_tmux_pane() -> Result<()> {
    if Command::new("tmux").arg("-V").output().is_err() {
        bail!("tmux is not installed (scripts/setup.sh installs it)");
    }
    let rig = Rig::new()?;
    let (code, _, err) = rig.cli(&["hooks", "install"])?;
    ensure!(code == 0, "hooks install: {err}");
    let face = Face::start(&rig)?;
    let sock = rig.home.home().join("tmux.sock");
    let tmux = |args: &[&str]| -> Result<String> {
        let out = Command::new("tmux").arg("-S").arg(&sock).args(args).env_clear().envs(rig.home.env()).output()?;
        ensure!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    struct Server(PathBuf);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("tmux").arg("-S").arg(&self.0).arg("kill-server").output();
        }
    }
    let project = rig.home.project_dir().to_string_lossy().into_owned();
    tmux(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", &project, &rig.claude.to_string_lossy()])?;
    let _server = Server(sock.clone());
    let pane = tmux(&["display", "-p", "-t", "t:", "#{pane_id}"])?.trim().to_owned();
    let screen = || tmux(&["capture-pane", "-p", "-t", &pane]).unwrap_or_default();
    let wait_screen = |what: &str, cond: &dyn Fn(&str) -> bool| -> Result<Instant> {
        let deadline = Instant::now() + T;
        loop {
            if cond(&screen()) {
                return Ok(Instant::now());
            }
            ensure!(Instant::now() < deadline, "the pane never showed {what}:\n{}", screen());
            std::thread::sleep(POLL);
        }
    };
    let type_line = |text: &str| -> Result<()> {
        wait_screen("the prompt", &|s| s.contains("auto mode on") && !s.contains("esc to interrupt"))?;
        tmux(&["send-keys", "-t", &pane, "-l", text])?;
        wait_screen("the typed line", &|s| {
            s.lines().any(|l| l.starts_with('❯') && l.trim_start_matches('❯').trim() == text)
        })?;
        tmux(&["send-keys", "-t", &pane, "Enter"]).map(drop)
    };
    let result = (|| -> Result<()> {
        // Cancelled: auto mode's dialog, denied (Esc): the call does not run, the turn stops.
        rig.api.push(Reply::tool_use("Bash", json!({"command": RISKY, "description": "Install it"})));
        type_line("install it")?;
        let shown = wait_screen("auto mode's dialog", &|s| s.contains("Enter to stay in auto mode"))?;
        let (gate, listed) = rig.wait_listed("auto mode's dialog", |p| str_of(p, "dialog") == "autoMode")?;
        latency("tmux, auto mode's dialog", shown, listed);
        ensure!(str_of(&gate, "channel") == "tmux", "{gate:#}");
        bless("gateway.tmux", &screen().lines().map(str::to_owned).collect::<Vec<_>>(), rig.home.home())?;
        let (gate, _) = rig.wait_listed("the call named", |p| str_of(p, "target") == RISKY)?;
        let said = rig.answer(&["deny", str_of(&gate, "id")])?;
        ensure!(
            said.starts_with("Cancelled Bash `curl") && said.contains("(chose “Cancel” through its tmux pane)"),
            "{said}"
        );
        wait_screen("the turn stopped", &|s| s.contains("Interrupted"))?;

        // Approved: stay in auto mode, then the call.
        rig.api.push(Reply::tool_use("Bash", json!({"command": RISKY, "description": "Install it"})));
        rig.api.push(Reply::text("Installed."));
        type_line("install it now")?;
        let shown = wait_screen("auto mode's dialog", &|s| s.contains("Enter to stay in auto mode"))?;
        let (gate, listed) = rig.wait_listed("auto mode's dialog", |p| str_of(p, "dialog") == "autoMode")?;
        latency("tmux, auto mode's dialog", shown, listed);
        rig.answer(&["approve", str_of(&gate, "id")])?;
        let shown = wait_screen("the call's dialog", &|s| s.contains("so this one needs your approval"))?;
        let (_, listed) = rig.wait_listed("the call's dialog", |p| str_of(p, "dialog") == "permission")?;
        latency("tmux, the call's dialog", shown, listed);
        // (Listed from the screen first; the call it asks about is named once its record is
        // read: once, cold CI, the approval said "a tool call", approved all the same.)
        let (call, _) =
            rig.wait_listed("the call named", |p| str_of(p, "dialog") == "permission" && str_of(p, "target") == RISKY)?;
        bless("per-call.tmux", &screen().lines().map(str::to_owned).collect::<Vec<_>>(), rig.home.home())?;
        let before = rig.requests();
        let said = rig.answer(&["approve", str_of(&call, "id")])?;
        ensure!(
            said.starts_with("Approved Bash `curl") && said.contains("(chose “Yes” through its tmux pane)"),
            "{said}"
        );
        rig.wait_call_ran(before)?;
        wait_screen("the reply", &|s| s.contains("Installed."))?;
        Ok(())
    })();
    drop(face);
    result.map_err(|e| e.context(format!("the pane:\n{}", screen())))
}

/// A session in a terminal Mimesis cannot type into (a plain PTY, no hooks of Mimesis): its
/// dialog is still listed, from the registry alone, with "answer it in its terminal" and the
/// way there; `approve` says so and types nothing; answered in its terminal, it is gone.
#[test]
fn a_dialog_mimesis_cannot_reach_is_listed_to_be_answered_in_its_terminal() -> Result<()> {
    let rig = Rig::new()?;
    let face = Face::start(&rig)?;
    let pty = Pty::spawn(PtyCommand::new(&rig.claude).envs(rig.env()).cwd(rig.home.project_dir()).size(120, 40))?;
    let result = (|| -> Result<()> {
        pty.wait_for("the prompt", T, is_idle_prompt)?;
        rig.api.push(Reply::tool_use("Bash", json!({"command": RISKY, "description": "Install it"})));
        type_line(&pty, "install it")?;
        pty.wait_for("auto mode's dialog", T, |s| s.contains("Enter to stay in auto mode"))?;
        let shown = Instant::now();
        let (gate, listed) = rig.wait_listed("auto mode's dialog", |p| str_of(p, "dialog") == "autoMode")?;
        latency("a plain terminal, auto mode's dialog", shown, listed);
        ensure!(
            str_of(&gate, "channel") == "terminal" && str_of(&gate, "answerIn").contains("answer it in its terminal"),
            "{gate:#}"
        );
        let short = &str_of(&gate, "sessionId")[..8];
        let (code, text, _) = rig.cli(&["pending"])?;
        ensure!(
            code == 0
                && text.contains("answer it in its terminal")
                && text.contains(&format!("`mimesis focus {short}` brings its terminal forward")),
            "{text}"
        );
        let (code, _, err) = rig.cli(&["approve", str_of(&gate, "id")])?;
        ensure!(
            code != 0
                && err.contains("cannot be answered from here")
                && err.contains(&format!("mimesis focus {short}")),
            "{err}"
        );
        ensure!(rig.pending().iter().any(|p| p["id"] == gate["id"]), "still listed after the refusal");
        // Answered in its terminal (Esc: cancelled): no longer listed, nothing recorded as
        // answered from Mimesis.
        pty.send("\x1b")?;
        pty.wait_for("the turn stopped", T, |s| s.contains("Interrupted"))?;
        let deadline = Instant::now() + T;
        while rig.pending().iter().any(|p| str_of(p, "sessionId").starts_with(short)) {
            ensure!(Instant::now() < deadline, "still listed after it was answered in its terminal");
            std::thread::sleep(POLL);
        }
        ensure!(rig.answers_log().is_empty(), "{:#?}", rig.answers_log());
        Ok(())
    })();
    drop(face);
    result.map_err(|e| e.context(format!("the screen:\n{}", pty.screen())))
}
