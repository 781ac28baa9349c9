//! The interactive scenario, as reusable steps: the real `claude` TUI in a PTY against
//! the mock API.
//!
//! ```no_run
//! use mimesis_tests::scenario::Scenario;
//! # fn main() -> anyhow::Result<()> {
//! let mut s = Scenario::new()?;
//! // Optional: look at every checkpoint while the CLI sits in that state.
//! s.set_observer(|obs, _s| {
//!     eprintln!("{:?}: {}", obs.checkpoint, obs.files.sessions.len());
//!     Ok(())
//! });
//! s.start()?;
//! s.prompt_with_permission()?; // tool_use -> permission dialog
//! s.approve()?;                // Enter on "1. Yes" -> tool runs -> end_turn text
//! s.compact()?;                // /compact
//! s.clear()?;                  // /clear -> new session id and file
//! s.second_prompt()?;          // "second goal ..." -> end_turn text
//! s.exit()?;                   // /exit
//! # Ok(()) }
//! ```
//!
//! Every step acts on the TUI, then waits (without fixed sleeps, up to
//! [`Scenario::step_timeout`]) until both the screen and the files under
//! `$CLAUDE_CONFIG_DIR` show the expected state, records an [`Observation`] and hands it to
//! the observer. On failure the error carries the screen, the files, the file timeline
//! and the API requests.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};

use crate::claude::{CLAUDE_CODE_VERSION, ClaudeHome, ensure_claude_version};
use crate::files::{FilesSnapshot, Recorder, Transcript, content_blocks, record_type};
use crate::mock_api::{Gate, MockApi, RecordedRequest, Reply, RequestKind};
use crate::pty::{Pty, PtyCommand, Screen};

/// How long a dialog is on screen before the scenario answers it, as a person would.
pub const DIALOG_SETTLE: Duration = Duration::from_millis(800);
/// How long a key pressed in a dialog may take to change the screen before it is pressed
/// again ([`choose_on`]), and how many times it is pressed at most.
const KEY_TAKEN: Duration = Duration::from_secs(3);
const KEY_TRIES: u32 = 3;
/// Default per-step timeout.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often step waits re-check the screen and the files.
const POLL: Duration = Duration::from_millis(20);

/// The first prompt; its reply is a Bash `tool_use`.
pub const PROMPT_1: &str = "please write hi to out.txt";
/// Text block streamed before the `tool_use` block in the same API message.
pub const TOOL_INTRO: &str = "I will write the file.";
/// The Bash command of the `tool_use`.
pub const TOOL_COMMAND: &str = "echo hi > out.txt";
/// The Bash description of the `tool_use`.
pub const TOOL_DESCRIPTION: &str = "Write hi to out.txt";
/// The final text of the first turn (after the tool result).
pub const REPLY_1: &str = "Done: out.txt now contains hi.";
/// The prompt after `/clear`.
pub const PROMPT_2: &str = "second goal: say something short";
/// Its reply.
pub const REPLY_2: &str = "Second goal acknowledged.";

/// A moment of the scenario where the CLI is held in a known state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// The TUI shows its idle prompt and `sessions/<pid>.json` exists.
    Started,
    /// The first prompt was submitted and its API request is held by the mock (the CLI
    /// is waiting for the model): registry `busy`, prompt record in the transcript.
    InFlight,
    /// The permission dialog is on screen.
    PermissionDialog,
    /// The approved tool ran and its result was sent back; the model's next reply is
    /// held by the mock (the CLI is working).
    ToolRan,
    /// The first turn ended (tool ran, final text, `turn_duration`).
    TurnDone,
    /// `/compact` finished.
    Compacted,
    /// `/clear` finished: a new session id and transcript.
    Cleared,
    /// The second prompt's turn ended.
    SecondTurnDone,
    /// `/exit` finished; the process is gone.
    Exited,
}

/// What was seen at a [`Checkpoint`].
#[derive(Debug, Clone)]
pub struct Observation {
    /// Which checkpoint.
    pub checkpoint: Checkpoint,
    /// When it was reached.
    pub at: Instant,
    /// The screen.
    pub screen: Screen,
    /// Transcripts and registry files.
    pub files: FilesSnapshot,
    /// The session id the CLI's `sessions/<pid>.json` named (None once it is removed).
    pub session_id: Option<String>,
}

impl Observation {
    /// The transcript of [`Observation::session_id`].
    pub fn transcript(&self) -> Option<&Transcript> {
        self.files.transcript_for(self.session_id.as_deref()?)
    }

    /// The registry entry of the CLI process.
    pub fn registry(&self, pid: u32) -> Option<&Value> {
        self.files.session_for_pid(pid)
    }
}

type Observer = Box<dyn FnMut(&Observation, &Scenario) -> Result<()> + Send>;

/// The real CLI in a PTY, the mock API it talks to, its isolated home, and a recorder of
/// what it writes.
pub struct Scenario {
    /// The mock API.
    pub api: MockApi,
    /// The isolated home.
    pub home: ClaudeHome,
    /// Per-step timeout.
    pub step_timeout: Duration,
    /// Arguments for `claude` (e.g. `--permission-mode default`).
    pub args: Vec<String>,
    /// The CLI's version.
    pub version: String,
    claude: PathBuf,
    pty: Option<Pty>,
    recorder: Recorder,
    observer: Option<Observer>,
    observations: Vec<Observation>,
    exit_code: Option<u32>,
    /// Holds the reply after the approved tool until [`Checkpoint::ToolRan`] was observed.
    after_tool: Gate,
}

impl Scenario {
    /// Installs/locates the oldest supported CLI, starts the mock API, creates the home.
    pub fn new() -> Result<Self> {
        Self::with_version(CLAUDE_CODE_VERSION)
    }

    /// [`Scenario::new`] with the CLI of `version`.
    pub fn with_version(version: &str) -> Result<Self> {
        let claude = ensure_claude_version(version)?;
        let api = MockApi::start()?;
        let home = ClaudeHome::for_version(&api.base_url(), version)?;
        let recorder = Recorder::start(home.config_dir());
        Ok(Self {
            api,
            home,
            step_timeout: STEP_TIMEOUT,
            args: Vec::new(),
            version: version.to_owned(),
            claude,
            pty: None,
            recorder,
            observer: None,
            observations: Vec::new(),
            exit_code: None,
            after_tool: Gate::new(),
        })
    }

    /// Sets a callback run at every checkpoint, while the CLI is in that state (for
    /// example, to check what the engine says). An error fails the step.
    pub fn set_observer(&mut self, f: impl FnMut(&Observation, &Scenario) -> Result<()> + Send + 'static) {
        self.observer = Some(Box::new(f));
    }

    /// The PTY (after [`Scenario::start`]).
    pub fn pty(&self) -> Result<&Pty> {
        self.pty.as_ref().ok_or_else(|| anyhow!("claude not started"))
    }

    /// The `claude` process id (after [`Scenario::start`]).
    pub fn pid(&self) -> Result<u32> {
        Ok(self.pty()?.pid())
    }

    /// Path of the `claude` executable used.
    pub fn claude_path(&self) -> &std::path::Path {
        &self.claude
    }

    /// Observations so far, in order.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// The observation of a checkpoint, if reached.
    pub fn observation(&self, cp: Checkpoint) -> Option<&Observation> {
        self.observations.iter().find(|o| o.checkpoint == cp)
    }

    /// The file recorder (timeline of every record and registry change).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The exit code of `claude`, after [`Scenario::exit`].
    pub fn exit_code(&self) -> Option<u32> {
        self.exit_code
    }

    /// Snapshot of transcripts and registry now.
    pub fn files(&self) -> FilesSnapshot {
        FilesSnapshot::capture(self.home.config_dir())
    }

    /// The file timeline merged with the API requests (`api #N ...`), sorted by time.
    pub fn timeline(&self) -> String {
        let requests = self.api.requests().into_iter().map(|r| (r.at, format!("api {r}"))).collect();
        self.recorder.timeline_with(requests)
    }

    /// Screen, files, timeline and API requests, for failure messages.
    pub fn diagnostics(&self) -> String {
        let screen = match &self.pty {
            Some(p) => p.screen().to_string(),
            None => "(not started)".into(),
        };
        format!(
            "=== screen ===\n{screen}\n=== files ===\n{}=== timeline ===\n{}=== API requests ===\n{}",
            self.files(),
            self.timeline(),
            self.api.summary()
        )
    }

    /// Runs the whole scenario.
    pub fn run_all(&mut self) -> Result<()> {
        self.start()?;
        self.prompt_with_permission()?;
        self.approve()?;
        self.compact()?;
        self.clear()?;
        self.second_prompt()?;
        self.exit()?;
        Ok(())
    }

    // ---------------------------------------------------------------- steps

    /// Spawns `claude` (120x40) in the project directory; waits for the idle prompt and
    /// `sessions/<pid>.json` with `status: "idle"`.
    pub fn start(&mut self) -> Result<Observation> {
        self.step("start", |s| {
            ensure!(s.pty.is_none(), "already started");
            let cmd = PtyCommand::new(s.claude.as_os_str())
                .args(&s.args)
                .envs(s.home.env())
                .cwd(s.home.project_dir())
                .size(120, 40);
            let pty = Pty::spawn(cmd)?;
            s.recorder.note(format!("spawned claude pid {}", pty.pid()));
            s.pty = Some(pty);
            let pid = s.pid()?;
            // The registry file is first written without `status`; `idle` follows.
            s.wait_until("idle prompt and sessions/<pid>.json idle", |screen, files| {
                is_idle_prompt(screen) && registry_field(files, pid, "status") == Some("idle")
            })?;
            s.checkpoint(Checkpoint::Started)
        })
    }

    /// Submits [`PROMPT_1`]; the mock answers (after holding the request for the
    /// [`Checkpoint::InFlight`] observation) with a text block and a Bash `tool_use` in one
    /// message, so the CLI shows the permission dialog. Waits until the screen shows
    /// "Do you want to proceed?", the transcript holds the `tool_use` without a
    /// `tool_result`, and `sessions/<pid>.json` says `waiting`.
    pub fn prompt_with_permission(&mut self) -> Result<Observation> {
        self.step("prompt_with_permission", |s| {
            let gate = Gate::new();
            s.api.push(
                Reply::text_then_tool_use(
                    TOOL_INTRO,
                    "Bash",
                    json!({"command": TOOL_COMMAND, "description": TOOL_DESCRIPTION}),
                )
                .with_gate(&gate),
            );
            s.api.push(Reply::text(REPLY_1).with_gate(&s.after_tool));
            s.type_line(PROMPT_1)?;
            let timeout = s.step_timeout;
            s.api
                .wait_for_request(timeout, |r| r.kind == RequestKind::Main && r.last_user_text().contains(PROMPT_1))
                .context("the prompt's API request")?;
            let pid = s.pid()?;
            // The prompt record is flushed ~0.3-0.5 s after Enter; hold the reply until
            // then, so the file order is the causal order (a reply arriving earlier can be
            // written before the prompt record).
            s.wait_until("registry busy and the prompt in the transcript while the request is held", |_, files| {
                registry_field(files, pid, "status") == Some("busy")
                    && current_transcript(files, pid).is_some_and(|t| {
                        t.records_of_type("user")
                            .any(|r| r.pointer("/message/content").and_then(Value::as_str) == Some(PROMPT_1))
                    })
            })?;
            s.checkpoint(Checkpoint::InFlight)?;
            s.recorder.note("mock: releasing the tool_use reply");
            gate.open();
            s.wait_until(
                "permission dialog, pending tool_use in the transcript, registry waiting",
                |screen, files| {
                    screen.contains("Do you want to proceed?")
                        && registry_field(files, pid, "status") == Some("waiting")
                        && current_transcript(files, pid).is_some_and(|t| !pending_tool_uses(t).is_empty())
                },
            )?;
            s.checkpoint(Checkpoint::PermissionDialog)
        })
    }

    /// Presses Enter on the highlighted "1. Yes". The tool runs and its result goes back
    /// to the mock, which holds the next reply for the [`Checkpoint::ToolRan`]
    /// observation, then ends the turn with [`REPLY_1`] (`end_turn`). Waits for the text
    /// on screen, the idle prompt, a `turn_duration` record after the final text, and the
    /// registry back to `idle`.
    pub fn approve(&mut self) -> Result<Observation> {
        self.step("approve", |s| {
            // 2.1.330 ignores keys for a moment after a dialog appears (so type-ahead cannot
            // answer it); a person takes longer than that to read it anyway.
            s.wait_settled("the permission dialog", DIALOG_SETTLE, |screen| {
                screen.contains("Do you want to proceed?")
            })?;
            s.recorder.note("press 1 (1. Yes)");
            s.pty()?.send("1")?;
            let pid = s.pid()?;
            let timeout = s.step_timeout;
            s.api
                .wait_for_request(timeout, |r| r.kind == RequestKind::Main && !r.tool_results().is_empty())
                .context("the request carrying the tool result")?;
            s.wait_until("the tool result in the transcript, registry busy", |_, files| {
                registry_field(files, pid, "status") == Some("busy")
                    && current_transcript(files, pid).is_some_and(|t| !t.tool_results().is_empty())
            })?;
            s.checkpoint(Checkpoint::ToolRan)?;
            s.recorder.note("mock: releasing the final reply");
            s.after_tool.open();
            s.wait_until("end of the first turn", |screen, files| {
                screen.contains(REPLY_1)
                    && is_idle_prompt(screen)
                    && registry_field(files, pid, "status") == Some("idle")
                    && current_transcript(files, pid).is_some_and(|t| turn_finished(t, REPLY_1))
            })?;
            let out = s.home.project_dir().join("out.txt");
            let content = std::fs::read_to_string(&out)
                .with_context(|| format!("the approved command should create {}", out.display()))?;
            ensure!(content == "hi\n", "out.txt contains {content:?}");
            s.checkpoint(Checkpoint::TurnDone)
        })
    }

    /// Types `/compact`. Waits for "Compacted" on screen, a `compact_boundary` and an
    /// `isCompactSummary` record in the same transcript, and the registry `idle`.
    pub fn compact(&mut self) -> Result<Observation> {
        self.step("compact", |s| {
            let pid = s.pid()?;
            let before = s.registry_session_id()?;
            s.type_line("/compact")?;
            s.wait_until("compaction finished", |screen, files| {
                screen.contains("Compacted")
                    && is_idle_prompt(screen)
                    && registry_field(files, pid, "status") == Some("idle")
                    && files.transcript_for(&before).is_some_and(|t| {
                        t.system_records("compact_boundary").next().is_some() && t.has_compact_summary()
                    })
            })?;
            s.checkpoint(Checkpoint::Compacted)
        })
    }

    /// Types `/clear`. Waits for the registry to name a new session id whose transcript
    /// file exists, and the idle prompt.
    pub fn clear(&mut self) -> Result<Observation> {
        self.step("clear", |s| {
            let pid = s.pid()?;
            let before = s.registry_session_id()?;
            s.type_line("/clear")?;
            s.wait_until("new session after /clear", |screen, files| {
                let Some(id) = registry_field(files, pid, "sessionId") else {
                    return false;
                };
                is_idle_prompt(screen)
                    && id != before
                    && files.transcript_for(id).is_some_and(|t| {
                        t.records_of_type("system")
                            .any(|r| r.get("subtype").and_then(Value::as_str) == Some("local_command"))
                    })
            })?;
            s.checkpoint(Checkpoint::Cleared)
        })
    }

    /// Submits [`PROMPT_2`], answered with [`REPLY_2`] (`end_turn`). Waits like
    /// [`Scenario::approve`].
    pub fn second_prompt(&mut self) -> Result<Observation> {
        self.step("second_prompt", |s| {
            s.api.push(Reply::text(REPLY_2));
            s.type_line(PROMPT_2)?;
            let pid = s.pid()?;
            s.wait_until("end of the second turn", |screen, files| {
                screen.contains(REPLY_2)
                    && is_idle_prompt(screen)
                    && registry_field(files, pid, "status") == Some("idle")
                    && current_transcript(files, pid).is_some_and(|t| turn_finished(t, REPLY_2))
            })?;
            s.checkpoint(Checkpoint::SecondTurnDone)
        })
    }

    /// Types `/exit`. Waits for the process to exit and for `sessions/<pid>.json` to be
    /// removed.
    pub fn exit(&mut self) -> Result<Observation> {
        self.step("exit", |s| {
            let pid = s.pid()?;
            s.type_line("/exit")?;
            let timeout = s.step_timeout;
            let status = s.pty.as_mut().ok_or_else(|| anyhow!("not started"))?.wait_exit(timeout)?;
            s.recorder.note(format!("claude exited: {status:?}"));
            s.exit_code = Some(status.exit_code());
            s.wait_until("screen drained and registry entry removed", |screen, files| {
                screen.exited && files.session_for_pid(pid).is_none()
            })?;
            s.checkpoint(Checkpoint::Exited)
        })
    }

    // ---------------------------------------------------------------- helpers

    /// Waits until `cond` has held on screen for `settle` without a break.
    pub fn wait_settled(&self, what: &str, settle: Duration, cond: impl Fn(&Screen) -> bool) -> Result<()> {
        wait_settled_on(self.pty()?, what, settle, self.step_timeout, cond)
    }

    /// Answers the dialog on screen by the label of one of its options ([`choose_on`]).
    pub fn choose(&self, label: &str) -> Result<()> {
        let pressed = choose_on(self.pty()?, label, self.step_timeout)?;
        self.recorder.note(pressed);
        Ok(())
    }

    /// Spawns `claude` again in the same home (after [`Scenario::exit`] or a kill) with
    /// `args` (e.g. `--resume <id>`), and waits for its idle prompt and registry entry.
    pub fn restart(&mut self, args: Vec<String>) -> Result<Observation> {
        if let Some(mut old) = self.pty.take() {
            let _ = old.wait_exit(Duration::from_secs(5));
        }
        self.args = args;
        self.start()
    }

    /// Types `text` into the prompt, waits until the input line shows it, presses Enter.
    pub fn type_line(&self, text: &str) -> Result<()> {
        let pty = self.pty()?;
        self.wait_until("idle prompt before typing", |screen, _| is_idle_prompt(screen))?;
        pty.send(text)?;
        self.wait_until(&format!("{text:?} in the input line"), |screen, _| {
            prompt_input(screen).is_some_and(|line| line.trim_end() == text)
        })?;
        self.recorder.note(format!("typed {text:?} + Enter"));
        pty.send("\r")?;
        Ok(())
    }

    /// Polls the screen and the files every 20 ms until `cond` holds, up to the step
    /// timeout.
    pub fn wait_until(
        &self,
        what: &str,
        mut cond: impl FnMut(&Screen, &FilesSnapshot) -> bool,
    ) -> Result<(Screen, FilesSnapshot)> {
        let pty = self.pty()?;
        let deadline = Instant::now() + self.step_timeout;
        loop {
            let screen = pty.screen();
            let files = self.files();
            if cond(&screen, &files) {
                return Ok((screen, files));
            }
            if Instant::now() >= deadline {
                bail!("timed out after {:?} waiting for {what}", self.step_timeout);
            }
            std::thread::sleep(POLL);
        }
    }

    /// The session id in `sessions/<pid>.json` now.
    pub fn registry_session_id(&self) -> Result<String> {
        let pid = self.pid()?;
        registry_field(&self.files(), pid, "sessionId")
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("sessions/{pid}.json has no sessionId"))
    }

    fn checkpoint(&mut self, cp: Checkpoint) -> Result<Observation> {
        let pid = self.pty()?.pid();
        let files = self.files();
        let obs = Observation {
            checkpoint: cp,
            at: Instant::now(),
            screen: self.pty()?.screen(),
            session_id: registry_field(&files, pid, "sessionId").map(str::to_owned),
            files,
        };
        self.recorder.note(format!("checkpoint {cp:?}"));
        if let Some(mut observer) = self.observer.take() {
            let result = observer(&obs, self);
            self.observer = Some(observer);
            result.with_context(|| format!("observer at {cp:?}"))?;
        }
        self.observations.push(obs.clone());
        Ok(obs)
    }

    fn step<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.recorder.note(format!("step {name}"));
        match f(self) {
            Ok(v) => Ok(v),
            Err(e) => {
                let diag = self.diagnostics();
                Err(e.context(format!("scenario step `{name}` failed\n{diag}")))
            }
        }
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        // Kill the CLI (and its session) before the mock API and the temporary home go.
        if let Some(mut pty) = self.pty.take() {
            pty.kill();
        }
    }
}

/// Waits (up to `timeout`) until `cond` has held on `pty`'s screen for `settle` without a
/// break.
pub fn wait_settled_on(
    pty: &Pty,
    what: &str,
    settle: Duration,
    timeout: Duration,
    cond: impl Fn(&Screen) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut since: Option<Instant> = None;
    loop {
        if cond(&pty.screen()) {
            let t = *since.get_or_insert_with(Instant::now);
            if t.elapsed() >= settle {
                return Ok(());
            }
        } else {
            since = None;
        }
        ensure!(Instant::now() < deadline, "{what} was never on screen for {settle:?}");
        std::thread::sleep(POLL);
    }
}

/// Answers the dialog on `pty`'s screen (the CLI's own, or a background session's through
/// `claude attach`) by the label of one of its options (never by position or a bare Enter:
/// 2.1.330's auto-mode fallback preselects "No"): its digit when the options are numbered
/// ("4. No"), else the arrow keys to it and Enter. Waits for the dialog to settle first
/// ([`DIALOG_SETTLE`]). Returns what it pressed, for the record.
pub fn choose_on(pty: &Pty, label: &str, timeout: Duration) -> Result<String> {
    let find = |screen: &Screen| {
        let rows = option_rows(screen);
        let exact = rows.iter().find(|(_, text, _)| text == label).cloned();
        exact.or_else(|| rows.into_iter().find(|(_, text, _)| text.starts_with(label)))
    };
    wait_settled_on(pty, &format!("a dialog offering {label:?}"), DIALOG_SETTLE, timeout, |screen| {
        find(screen).is_some()
    })?;
    let screen = pty.screen();
    let (number, _, _) = find(&screen).context("the option")?;
    match number {
        Some(n) => {
            // 2.1.330 ignores keys for a moment after a dialog appears. A dialog shown again in
            // place of one just like it (a plan after its denial) looks settled before it takes
            // keys: the key was lost once under load, and the scenario waited for a reply never
            // asked for. So, as a person would, press again while the screen has not changed at
            // all since the press (a key taken closes the dialog); a few times at most.
            let shown = screen.text();
            for pressed in 1..=KEY_TRIES {
                pty.send(&n.to_string())?;
                let changed = pty.wait_for("the dialog to take the key", KEY_TAKEN, |now| now.text() != shown);
                if changed.is_ok() {
                    return Ok(format!(
                        "press {n} ({label}){}",
                        if pressed > 1 { format!(", {pressed} times") } else { String::new() }
                    ));
                }
            }
            bail!("the dialog offering {label:?} did not take {n}, pressed {KEY_TRIES} times")
        }
        None => {
            let rows = option_rows(&screen);
            let selected = rows.iter().position(|(_, _, sel)| *sel).unwrap_or(0);
            let target = rows.iter().position(|(_, t, _)| t.starts_with(label)).unwrap_or(0);
            let key = if target > selected { "\x1b[B" } else { "\x1b[A" };
            for _ in 0..selected.abs_diff(target) {
                pty.send(key)?;
                std::thread::sleep(POLL);
            }
            pty.send("\r")?;
            Ok(format!("arrows to {label:?}, Enter"))
        }
    }
}

/// A field of `sessions/<pid>.json` as a string.
pub fn registry_field<'a>(files: &'a FilesSnapshot, pid: u32, key: &str) -> Option<&'a str> {
    files.session_for_pid(pid)?.get(key)?.as_str()
}

/// The transcript of the session the registry names for `pid`.
pub fn current_transcript(files: &FilesSnapshot, pid: u32) -> Option<&Transcript> {
    files.transcript_for(registry_field(files, pid, "sessionId")?)
}

/// Ids of `tool_use` blocks with no `tool_result` yet.
pub fn pending_tool_uses(t: &Transcript) -> Vec<String> {
    let answered: Vec<&str> =
        t.tool_results().iter().filter_map(|b| b.get("tool_use_id").and_then(Value::as_str)).collect();
    t.tool_uses()
        .iter()
        .filter_map(|b| b.get("id").and_then(Value::as_str))
        .filter(|id| !answered.contains(id))
        .map(str::to_owned)
        .collect()
}

/// Whether the transcript has an assistant `end_turn` text containing `text`, followed
/// by a `system` `turn_duration` record.
pub fn turn_finished(t: &Transcript, text: &str) -> bool {
    let Some(i) = t.records.iter().position(|r| {
        record_type(r) == "assistant"
            && content_blocks(r).any(|b| b.get("text").and_then(Value::as_str).is_some_and(|x| x.contains(text)))
    }) else {
        return false;
    };
    t.records[i + 1..]
        .iter()
        .any(|r| record_type(r) == "system" && r.get("subtype").and_then(Value::as_str) == Some("turn_duration"))
}

/// The text of the TUI's input line (the `❯ ` row right below a horizontal rule), if shown.
pub fn prompt_input(screen: &Screen) -> Option<String> {
    let rows = &screen.rows;
    (1..rows.len())
        .rev()
        .find(|&i| rows[i].starts_with('❯') && rows[i - 1].starts_with("──"))
        .map(|i| rows[i].trim_start_matches('❯').trim_start().to_owned())
}

/// Whether the TUI shows an empty input line, no spinner and no dialog. The footer below
/// it differs by version and mode (`? for shortcuts` in 2.1.197; the permission mode,
/// `⏵⏵ auto mode on (shift+tab to cycle)`, in 2.1.330), so it is not relied on.
pub fn is_idle_prompt(screen: &Screen) -> bool {
    prompt_input(screen).is_some_and(|l| l.is_empty())
        && !screen.contains("esc to interrupt")
        && !screen.contains("Do you want to proceed?")
}

/// The options of the dialog on screen: (its number if numbered, its label, selected), as
/// Mimesis itself reads them (`mimesis_core::dialog`).
pub fn option_rows(screen: &Screen) -> Vec<(Option<u32>, String, bool)> {
    mimesis_core::dialog::Dialog::read(&screen.rows)
        .map(|d| d.options.into_iter().map(|o| (o.number, o.label, o.selected)).collect())
        .unwrap_or_default()
}

/// The main-conversation requests the mock received, for assertions.
pub fn main_requests(api: &MockApi) -> Vec<RecordedRequest> {
    api.requests_of(&RequestKind::Main)
}
