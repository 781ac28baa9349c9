//! One control vocabulary for the sessions Mimesis can act on (issue 33): `bg` (dispatch
//! to Claude Code's background service), `attach`, `logs`, `stop`, `respawn`, `rm`, for the
//! CLI and the window alike.
//!
//! - [`resolve`]: what an id names: a background session (its short id, or a session id or
//!   a unique prefix of one), a session supervised by a running Mimesis, one on another
//!   machine (`host:id`); or a sentence saying why it cannot be acted on (unknown,
//!   ambiguous, an interactive session in a terminal of its own, ended).
//! - [`Claude`]: Claude Code's own verbs (`claude --bg|attach|logs|stop|respawn|rm`), run as
//!   the supervisor runs its agent (`$MIMESIS_AGENT`, else the stored setting, else
//!   `claude`), with `CLAUDE_CONFIG_DIR` naming the config folder the session lives in.
//!   Nothing of the service is ever signalled by Mimesis: its sessions are stopped and
//!   restarted through these verbs only.
//! - [`remote_verb`]: the same verbs on another machine, through its own `mimesis`.
//!
//! What the verbs print is Claude Code's (untrusted): a face shows it through its
//! terminal-safe text path. `claude logs` prints raw terminal output: [`screen_text`]
//! draws it on a terminal model and returns the screen's lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mimesis_core::ids::{JobId, SessionId};
use mimesis_core::remote::{Destination, remote_mimesis, split_host_id};
use mimesis_core::supervision::fleet::OWNER_MARKS;
use mimesis_supervise::plain::PlainSpec;
use mimesis_watch::background as files;

/// How long a verb of Claude Code's may take (`claude respawn` takes 2–4 s on a loaded
/// machine, `--bg` up to ~2 s with the service's start).
pub const VERB_WAIT: Duration = Duration::from_secs(60);

/// How long `bg` waits, after `claude --bg` returned, for the job to name its session (its
/// state file is there when `--bg` returns).
pub const SESSION_WAIT: Duration = Duration::from_secs(15);

/// A verb Mimesis runs through Claude Code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    Stop,
    Respawn,
    Remove,
}

impl Verb {
    /// Claude Code's (and `mimesis`'s) word for it.
    pub fn word(self) -> &'static str {
        match self {
            Verb::Stop => "stop",
            Verb::Respawn => "respawn",
            Verb::Remove => "rm",
        }
    }
}

/// Why a session cannot be acted on, or a verb failed: each a sentence for the user.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ControlError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Ambiguous(String),
    /// A session Mimesis knows but cannot act on (an interactive one in a terminal of its
    /// own, an ended one, one supervised by another Mimesis).
    #[error("{0}")]
    Uncontrollable(String),
    /// Claude Code (or ssh) ran and failed, or could not run.
    #[error("{0}")]
    Failed(String),
}

/// A background session: the config folder it lives in, its job, and its session when
/// the job names one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgTarget {
    pub root: PathBuf,
    pub job: JobId,
    pub session_id: Option<SessionId>,
    /// The folder the session works in, as its job says (checked: absolute, no `..`).
    pub cwd: Option<PathBuf>,
}

/// What an id names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Background(BgTarget),
    /// Supervised by a running Mimesis (the window, or a `mimesis run`), whose process is
    /// `owner`.
    Supervised {
        session_id: SessionId,
        owner: u32,
    },
    /// On another machine: its destination and the id as given there.
    Remote {
        host: Destination,
        id: String,
    },
}

/// The program Claude Code's verbs run with: `$MIMESIS_AGENT`, else the agent stored in
/// the settings when it is a `claude`, else `claude` on the PATH (as the supervisor
/// resolves its agent).
pub fn claude_program(data_dir: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("MIMESIS_AGENT").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let stored = crate::stored_settings(&data_dir.join(mimesis_fleetdb::FILE_NAME)).agent.command();
    if stored.kind == mimesis_core::supervision::AgentKind::ClaudeLike
        && stored.program.file_name().is_some_and(|n| n.to_string_lossy().contains("claude"))
    {
        return stored.program;
    }
    PathBuf::from("claude")
}

/// Claude Code's verbs for the sessions of one config folder.
#[derive(Clone, Debug)]
pub struct Claude {
    pub program: PathBuf,
    pub root: PathBuf,
    /// The session's folder, where its verbs run (else the home folder).
    pub cwd: Option<PathBuf>,
}

/// What a verb printed and how it ended.
#[derive(Clone, Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// What it said, as one line of plain text (stdout, else stderr), cut.
    pub fn said(&self) -> String {
        let text = if self.stdout.iter().any(|b| !b.is_ascii_whitespace()) { &self.stdout } else { &self.stderr };
        mimesis_core::text::clean_text(&mimesis_core::text::strip_ansi(&String::from_utf8_lossy(text)), 400)
    }
}

impl Claude {
    pub fn new(program: PathBuf, root: &Path) -> Claude {
        Claude { program, root: root.to_owned(), cwd: None }
    }

    /// The verbs run in the session's own folder, when it is one: 2.1.332 refuses to respawn
    /// a running session that works through a gateway (`ANTHROPIC_BASE_URL`) from anywhere
    /// else ("Not restarted: this session runs through an LLM gateway…").
    pub fn in_folder(mut self, cwd: Option<&Path>) -> Claude {
        self.cwd = cwd.filter(|c| c.is_dir()).map(Path::to_owned);
        self
    }

    /// [`Claude::new`] for a background session, in its folder.
    pub fn of(data_dir: &Path, t: &BgTarget) -> Claude {
        Claude::new(claude_program(data_dir), &t.root).in_folder(t.cwd.as_deref())
    }

    /// `claude <args>` for this config folder, in `cwd`: `CLAUDE_CONFIG_DIR` names the
    /// folder (unless it is the default one and unset here), none of Mimesis's own marks
    /// (a service started by it must never count as one of our agents), the user's values
    /// of what the toolkit was given.
    /// A bare `claude` off the PATH runs from where its installer put it, with its folder
    /// first on its PATH (`mimesis_os::programs`).
    pub fn command(&self, args: &[&str], cwd: &Path) -> Command {
        let (program, path) = mimesis_os::programs::to_run(&self.program);
        let mut cmd = Command::new(program);
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        cmd.args(args).current_dir(cwd);
        without_marks(&mut cmd);
        let default = dirs::home_dir().map(|h| h.join(".claude"));
        if std::env::var_os("CLAUDE_CONFIG_DIR").is_some() || default.as_deref() != Some(self.root.as_path()) {
            cmd.env("CLAUDE_CONFIG_DIR", &self.root);
        }
        mimesis_os::child_env::restore(&mut cmd);
        cmd
    }

    /// Runs `claude <args>` to its end (no terminal; output captured), at most
    /// [`VERB_WAIT`]; one that hangs is killed (it is our client, never the service).
    pub fn run(&self, args: &[&str], cwd: &Path) -> Result<Ran, ControlError> {
        let mut cmd = self.command(args, cwd);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = cmd.spawn().map_err(|e| {
            ControlError::Failed(format!(
                "cannot run {} ({e}); set the agent in Settings or $MIMESIS_AGENT to Claude Code's `claude`",
                self.program.display()
            ))
        })?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(VERB_WAIT) {
            Ok(Ok(out)) => Ok(Ran { code: out.status.code(), stdout: out.stdout, stderr: out.stderr }),
            Ok(Err(e)) => Err(ControlError::Failed(format!("claude {}: {e}", args.first().unwrap_or(&"")))),
            Err(_) => {
                mimesis_os::procs::signal(pid, libc::SIGKILL);
                Err(ControlError::Failed(format!(
                    "claude {} did not finish within {} s",
                    args.first().unwrap_or(&""),
                    VERB_WAIT.as_secs()
                )))
            }
        }
    }

    /// `claude stop|respawn|rm <job>`: Claude Code's line (`stopped <id>`), or why not.
    pub fn act(&self, job: &JobId, verb: Verb) -> Result<String, ControlError> {
        let ran = self.run(&[verb.word(), job.as_str()], &self.cwd())?;
        if ran.ok() {
            Ok(ran.said())
        } else {
            Err(ControlError::Failed(format!("claude {} {job} failed: {}", verb.word(), ran.said())))
        }
    }

    /// `claude logs <job>`: the session's recent terminal output, raw (untrusted bytes: see
    /// [`screen_text`]).
    pub fn logs(&self, job: &JobId) -> Result<Vec<u8>, ControlError> {
        let ran = self.run(&["logs", job.as_str()], &self.cwd())?;
        if ran.ok() {
            Ok(ran.stdout)
        } else {
            Err(ControlError::Failed(format!("claude logs {job} failed: {}", ran.said())))
        }
    }

    /// `claude attach <job>`, to run in a terminal (the user's, or one of the window's):
    /// Ctrl+Z detaches and leaves the session running.
    pub fn attach_command(&self, job: &JobId) -> Command {
        self.command(&["attach", job.as_str()], &self.cwd())
    }

    /// [`Claude::attach_command`] for a terminal of the window's own (a [`PlainSpec`]).
    pub fn attach_spec(&self, job: &JobId, cols: u16, rows: u16, scrollback: usize) -> PlainSpec {
        spec_of(&self.attach_command(job), cols, rows, scrollback)
    }

    /// The folder a verb runs in: the session's, else the home folder.
    fn cwd(&self) -> PathBuf {
        self.cwd.clone().or_else(|| dirs::home_dir().filter(|h| h.is_dir())).unwrap_or_else(std::env::temp_dir)
    }

    /// `claude --bg [--permission-mode MODE] PROMPT` in `cwd`, then the session the job
    /// names (waited for, at most [`SESSION_WAIT`]).
    pub fn dispatch(
        &self,
        cwd: &Path,
        prompt: &str,
        permission_mode: Option<&str>,
    ) -> Result<Dispatched, ControlError> {
        if let Some(problem) = mimesis_os::files::folder_problem(&cwd.to_string_lossy()) {
            return Err(ControlError::Failed(format!("{}: {problem}", cwd.display())));
        }
        let prompt = prompt.trim();
        if prompt.is_empty() {
            return Err(ControlError::Failed(
                "a background session starts with a prompt: say what it should do".into(),
            ));
        }
        if prompt.starts_with('-') {
            return Err(ControlError::Failed(
                "a prompt starting with '-' would be read as an option by claude; reword its start".into(),
            ));
        }
        let mut args = vec!["--bg"];
        if let Some(m) = permission_mode {
            if !m.bytes().all(|b| b.is_ascii_alphabetic()) || m.is_empty() || m.len() > 32 {
                return Err(ControlError::Failed(format!("{m:?} is not a permission mode")));
            }
            args.extend(["--permission-mode", m]);
        }
        args.push(prompt);
        let ran = self.run(&args, cwd)?;
        if !ran.ok() {
            return Err(ControlError::Failed(format!("claude --bg failed: {}", ran.said())));
        }
        self.named(&ran)
    }

    /// `claude --bg --resume <id>` in `cwd`: the service continues that session (whose
    /// process has ended) under its own id (2.1.330 and later; see
    /// [`mimesis_core::supervision::handover::help_offers_bg_resume`]).
    pub fn resume_in_background(&self, cwd: &Path, id: &SessionId) -> Result<Dispatched, ControlError> {
        if let Some(problem) = mimesis_os::files::folder_problem(&cwd.to_string_lossy()) {
            return Err(ControlError::Failed(format!("{}: {problem}", cwd.display())));
        }
        let ran = self.run(&["--bg", "--resume", id.as_str()], cwd)?;
        if !ran.ok() {
            return Err(ControlError::Failed(format!("claude --bg --resume {id} failed: {}", ran.said())));
        }
        let d = self.named(&ran)?;
        if &d.session_id != id {
            return Err(ControlError::Failed(format!(
                "claude --bg --resume {id} started a copy ({}) instead: {}",
                d.session_id,
                ran.said()
            )));
        }
        Ok(d)
    }

    /// Does this `claude` continue a session in the background (`--bg --resume`)? Asks its
    /// `--help`.
    pub fn resumes_in_background(&self) -> bool {
        self.run(&["--help"], &self.cwd()).is_ok_and(|r| {
            r.ok() && mimesis_core::supervision::handover::help_offers_bg_resume(&String::from_utf8_lossy(&r.stdout))
        })
    }

    /// The job `--bg` printed, and the session it names (waited for, at most
    /// [`SESSION_WAIT`]).
    fn named(&self, ran: &Ran) -> Result<Dispatched, ControlError> {
        let job = backgrounded(&String::from_utf8_lossy(&ran.stdout)).ok_or_else(|| {
            ControlError::Failed(format!("claude --bg printed no background session id: {}", ran.said()))
        })?;
        let t0 = Instant::now();
        loop {
            let named = files::job_state(&self.root, &job).and_then(|s| s.session_id).or_else(|| {
                files::running_workers(&self.root).into_iter().find(|w| w.job == job).map(|w| w.session_id)
            });
            if let Some(session_id) = named.filter(|s| job.names(s)) {
                return Ok(Dispatched { job, session_id });
            }
            if t0.elapsed() >= SESSION_WAIT {
                return Err(ControlError::Failed(format!(
                    "background session {job} started, but its job names no session yet; `mimesis ls` will show it"
                )));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// A session dispatched to the background service.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dispatched {
    /// The full session id.
    pub session_id: SessionId,
    /// Its short id (what `claude attach` takes).
    #[serde(rename = "jobId")]
    pub job: JobId,
}

/// The short id in what `claude --bg` printed (`backgrounded · 3f2a9c1d`).
pub fn backgrounded(stdout: &str) -> Option<JobId> {
    let rest = stdout.lines().find_map(|l| l.trim().strip_prefix("backgrounded · "))?;
    JobId::parse(rest.split_whitespace().next()?).ok()
}

/// Raw terminal output (what `claude logs` prints) drawn on a `cols`×`rows` terminal
/// model: the screen's lines, trailing blank ones dropped. Nothing of the escapes is left;
/// a face still shows the lines through its own terminal-safe path.
pub fn screen_text(raw: &[u8], cols: u16, rows: u16) -> Vec<String> {
    let mut screen = mimesis_supervise::monitor::Monitor::new(rows, cols, &[]);
    screen.feed(raw, Instant::now());
    let mut lines: Vec<String> = screen.rows().into_iter().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// What `query` names among the sessions under `roots` (and the supervisors of
/// `data_dir`). Unknown, ambiguous and uncontrollable ids are refused with a sentence.
pub fn resolve(roots: &[PathBuf], data_dir: &Path, query: &str) -> Result<Target, ControlError> {
    if let (Some(host), id) = split_host_id(query) {
        let host = Destination::parse(host).map_err(|e| ControlError::NotFound(e.to_string()))?;
        SessionId::parse(id).map_err(|e| ControlError::NotFound(e.to_string()))?;
        return Ok(Target::Remote { host, id: id.to_owned() });
    }
    let bad = || {
        ControlError::NotFound(format!(
            "{query:?} is not a session id (ids are made of letters, digits, '-' and '_'); `mimesis ls` lists them"
        ))
    };
    if query.is_empty() || SessionId::parse(query).is_err() {
        return Err(bad());
    }
    // Background jobs: every root's job folders (and running workers without one).
    let mut jobs: Vec<BgTarget> = Vec::new();
    for root in roots {
        let f = files::read_once(root);
        let checked = |c: Option<&str>| c.and_then(|c| mimesis_core::layout::checked_cwd(c).ok());
        for (job, st) in f.jobs {
            let session_id = st.session_id.filter(|s| job.names(s));
            let cwd = checked(st.cwd.as_deref());
            jobs.push(BgTarget { root: root.clone(), job, session_id, cwd });
        }
        for w in f.workers {
            if !jobs.iter().any(|j| j.job == w.job && j.root == *root) && w.job.names(&w.session_id) {
                let cwd = checked(w.cwd.as_deref());
                jobs.push(BgTarget { root: root.clone(), job: w.job, session_id: Some(w.session_id), cwd });
            }
        }
    }
    // A short id, exactly.
    let exact: Vec<&BgTarget> = jobs.iter().filter(|j| j.job.as_str() == query).collect();
    if let [one] = exact.as_slice() {
        return Ok(Target::Background((*one).clone()));
    }
    // A session id, or a unique prefix of one: the jobs' sessions and every transcript.
    let mut ids: Vec<SessionId> = jobs.iter().filter_map(|j| j.session_id.clone()).collect();
    for root in roots {
        ids.extend(crate::once::discover(root).into_iter().map(|l| l.session_id));
    }
    ids.sort();
    ids.dedup();
    let id = match ids.iter().find(|i| i.as_str() == query) {
        Some(exact) => exact.clone(),
        None => {
            let matching: Vec<&SessionId> = ids.iter().filter(|i| i.as_str().starts_with(query)).collect();
            match matching.as_slice() {
                [] => {
                    let searched: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
                    return Err(ControlError::NotFound(format!(
                        "no session with id {query} in {}; `mimesis ls` lists the sessions",
                        searched.join(", ")
                    )));
                }
                [one] => (*one).clone(),
                many => {
                    let shown: Vec<&str> = many.iter().take(5).map(|i| i.as_str()).collect();
                    return Err(ControlError::Ambiguous(format!(
                        "{query} matches {} sessions ({}…); give more of the id",
                        many.len(),
                        shown.join(", ")
                    )));
                }
            }
        }
    };
    let of_id: Vec<&BgTarget> = jobs.iter().filter(|j| j.session_id.as_ref() == Some(&id)).collect();
    match of_id.as_slice() {
        [one] => return Ok(Target::Background((*one).clone())),
        [] => {}
        _ => {
            return Err(ControlError::Ambiguous(format!(
                "session {id} is a background session of several config folders; give --config-dir"
            )));
        }
    }
    if let Some(owner) = supervisor_of(roots, data_dir, &id) {
        return Ok(Target::Supervised { session_id: id, owner });
    }
    Err(ControlError::Uncontrollable(uncontrollable(roots, &id)))
}

/// The running supervisor (its PID) that published `id` as one of its sessions.
fn supervisor_of(roots: &[PathBuf], data_dir: &Path, id: &SessionId) -> Option<u32> {
    use mimesis_supervise::metrics;
    let collected = metrics::collect(&metrics::dir(data_dir), false);
    collected.live.iter().find_map(|p| {
        let bytes = mimesis_os::files::read_bounded(&p.path, 16 << 20).ok()?;
        let snapshot: metrics::Snapshot = mimesis_core::json::from_slice(&bytes).ok()?;
        crate::once::under_roots(roots, snapshot.supervised).iter().any(|(l, _)| l.session_id == *id).then_some(p.pid)
    })
}

/// Why a session that is neither background nor supervised here cannot be acted on.
fn uncontrollable(roots: &[PathBuf], id: &SessionId) -> String {
    let live = roots.iter().flat_map(|r| {
        mimesis_watch::registry::read_dir(&mimesis_core::layout::sessions_dir(r))
            .into_iter()
            .filter(mimesis_watch::registry::alive)
    });
    match live.into_iter().find(|e| e.session_id == *id) {
        Some(e) => format!(
            "session {id} is an interactive session in a terminal of its own (pid {}): Mimesis does not control it; \
             `mimesis focus {id}` brings its terminal forward",
            e.pid
        ),
        None => format!(
            "session {id} has ended; `mimesis run --resume {id}` continues it supervised, \
             or `claude --resume {id}` in a terminal"
        ),
    }
}

/// A command as a terminal of the window's runs it (the variables it sets; the ones it
/// removes are never in the app's own environment: Mimesis's mark is its agents' only).
fn spec_of(cmd: &Command, cols: u16, rows: u16, scrollback: usize) -> PlainSpec {
    let text = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    PlainSpec {
        program: PathBuf::from(cmd.get_program()),
        args: cmd.get_args().map(text).collect(),
        cwd: cmd.get_current_dir().map(Path::to_owned).unwrap_or_else(std::env::temp_dir),
        env: cmd.get_envs().filter_map(|(k, v)| Some((text(k), text(v?)))).collect(),
        cols,
        rows,
        scrollback,
    }
}

/// What the window's embedded terminal runs to show `target`: `claude attach <job>` for a
/// background session here, `ssh -t host mimesis attach <id>` for one on another machine.
pub fn attach_spec(
    data_dir: &Path,
    target: &Target,
    (cols, rows): (u16, u16),
    scrollback: usize,
) -> Result<PlainSpec, ControlError> {
    match target {
        Target::Background(t) => Ok(Claude::of(data_dir, t).attach_spec(&t.job, cols, rows, scrollback)),
        Target::Remote { host, id } => Ok(spec_of(&remote_verb(host, "attach", id, true)?, cols, rows, scrollback)),
        Target::Supervised { session_id, .. } => Err(ControlError::Uncontrollable(format!(
            "session {session_id} is supervised here: its terminal is the window's own"
        ))),
    }
}

/// None of Mimesis's owner marks: Claude Code's service that a verb may start (`claude
/// --bg`, `claude attach`) is Claude Code's, never one of our agents that our exit ends.
fn without_marks(cmd: &mut Command) {
    for k in OWNER_MARKS {
        cmd.env_remove(k);
    }
}

/// `ssh host mimesis <verb> <id>` (with a terminal for `attach`): the same verb on the
/// machine the session runs on, by its own Mimesis.
pub fn remote_verb(host: &Destination, verb: &str, id: &str, tty: bool) -> Result<Command, ControlError> {
    SessionId::parse(id).map_err(|e| ControlError::NotFound(e.to_string()))?;
    if !["attach", "logs", "stop", "respawn", "rm"].contains(&verb) {
        return Err(ControlError::Failed(format!("{verb} is not a verb Mimesis runs on another machine")));
    }
    let remote = remote_mimesis(&[verb, id]);
    let argv = crate::remote::Ssh::from_env().argv(host, &remote, tty);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    without_marks(&mut cmd);
    mimesis_os::child_env::restore(&mut cmd);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_claude_bg_prints() {
        let out = "backgrounded · ab2c7b09\n  claude agents             list sessions\n  claude attach ab2c7b09    open in this terminal\n";
        assert_eq!(backgrounded(out).map(|j| j.to_string()).as_deref(), Some("ab2c7b09"));
        assert_eq!(backgrounded("Starting background service…\n"), None);
        assert_eq!(backgrounded("backgrounded · ../x\n"), None);
        assert_eq!(backgrounded("backgrounded · AB2C7B09\n"), None);
    }

    #[test]
    fn logs_are_drawn_on_a_screen_and_lose_their_escapes() {
        let raw = b"\x1b[2J\x1b[H\x1b[1;31mhello\x1b[0m\x1b[3;5Hworld\x1b]0;title\x07\r\n";
        let lines = screen_text(raw, 40, 10);
        assert_eq!(lines, ["hello", "", "    world"]);
        assert!(lines.iter().all(|l| !l.contains('\x1b')));
    }

    fn root_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, s) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, s).unwrap();
        }
        d
    }

    const A: &str = "aa2e1246-11cc-48b1-aa61-76af4aa5d5aa";
    const B: &str = "aa2f0000-11cc-48b1-aa61-76af4aa5d5aa";

    #[test]
    fn ids_name_background_sessions_by_short_id_session_id_or_prefix() {
        let d = root_with(&[
            ("jobs/aa2e1246/state.json", &format!(r#"{{"state":"done","sessionId":"{A}"}}"#)),
            (&format!("projects/-p/{A}.jsonl"), "{}\n"),
            (&format!("projects/-p/{B}.jsonl"), "{}\n"),
        ]);
        let roots = vec![d.path().to_owned()];
        let data = tempfile::tempdir().unwrap();
        let want = Target::Background(BgTarget {
            root: d.path().to_owned(),
            job: JobId::parse("aa2e1246").unwrap(),
            session_id: Some(SessionId::parse(A).unwrap()),
            cwd: None,
        });
        for q in ["aa2e1246", A, "aa2e1"] {
            assert_eq!(resolve(&roots, data.path(), q).as_ref(), Ok(&want), "{q}");
        }
        assert!(matches!(resolve(&roots, data.path(), "aa2"), Err(ControlError::Ambiguous(_))));
        assert!(matches!(resolve(&roots, data.path(), "ff"), Err(ControlError::NotFound(_))));
        assert!(matches!(resolve(&roots, data.path(), "../x"), Err(ControlError::NotFound(_))));
        // Not a background session, not running: ended.
        let Err(ControlError::Uncontrollable(why)) = resolve(&roots, data.path(), "aa2f") else { panic!() };
        assert!(why.contains("has ended") && why.contains(B), "{why}");
        // Another machine's.
        assert!(matches!(resolve(&roots, data.path(), "devbox:aa2e"), Ok(Target::Remote { .. })));
    }

    #[test]
    fn a_live_interactive_session_is_not_ours_to_control() {
        let me = std::process::id();
        let ticks = mimesis_os::procs::start_ticks(me).unwrap();
        let d = root_with(&[
            (&format!("projects/-p/{B}.jsonl"), "{}\n"),
            (
                &format!("sessions/{me}.json"),
                &format!(
                    r#"{{"pid":{me},"sessionId":"{B}","procStart":"{ticks}","kind":"interactive","status":"idle"}}"#
                ),
            ),
        ]);
        let data = tempfile::tempdir().unwrap();
        let Err(ControlError::Uncontrollable(why)) = resolve(&[d.path().to_owned()], data.path(), B) else { panic!() };
        assert!(why.contains("terminal of its own") && why.contains("mimesis focus"), "{why}");
    }

    #[test]
    fn the_verbs_run_the_agent_with_the_sessions_config_folder_and_no_mark_of_ours() {
        let claude = Claude::new(PathBuf::from("/opt/claude"), Path::new("/srv/cfg"));
        let cmd = claude.attach_command(&JobId::parse("aa2e1246").unwrap());
        assert_eq!(cmd.get_program(), "/opt/claude");
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(args, ["attach", "aa2e1246"]);
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(envs.contains(&(std::ffi::OsStr::new("CLAUDE_CONFIG_DIR"), Some(std::ffi::OsStr::new("/srv/cfg")))));
        for k in OWNER_MARKS {
            assert!(envs.contains(&(std::ffi::OsStr::new(k), None)), "{k}: {envs:?}");
        }
    }

    #[test]
    fn a_remote_verb_quotes_its_words_and_takes_only_ids() {
        let host = Destination::parse("devbox").unwrap();
        let cmd = remote_verb(&host, "stop", "aa2e1246", false).unwrap();
        let last = cmd.get_args().last().unwrap().to_string_lossy().into_owned();
        assert_eq!(last, remote_mimesis(&["stop", "aa2e1246"]));
        assert!(cmd.get_args().any(|a| a == "-T"));
        assert!(remote_verb(&host, "stop", "a;rm -rf ~", false).is_err());
        assert!(remote_verb(&host, "sh", "aa2e1246", false).is_err());
    }
}
