//! `mimesis bg|attach|logs|stop|respawn|rm`: one control vocabulary for the sessions
//! Mimesis can act on (docs/ipc.md "Acting on sessions"). What an id names and how each
//! verb is carried out is `mimesis_wiring::background`; this face prints, and passes
//! Claude Code's own words through the terminal-safe text path.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use mimesis_wiring::background::{self as bg, BgTarget, Claude, ControlError, Target, Verb};

use crate::render::sanitize;
use crate::term::{self, Term};

#[derive(clap::Args)]
pub struct BgArgs {
    /// The folder the session works in.
    #[arg(long, value_name = "DIR")]
    cwd: PathBuf,
    /// Print {"sessionId": …, "jobId": …} as JSON.
    #[arg(long)]
    json: bool,
    /// The session's permission mode (`manual`, `plan`, `acceptEdits`, …); Claude Code's
    /// default when not given.
    #[arg(long = "permission-mode", value_name = "MODE")]
    permission_mode: Option<String>,
    /// What the session should do.
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    prompt: Vec<String>,
}

/// The verbs that take an id.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Attach,
    Logs,
    Act(Verb),
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Attach => "attach",
            Action::Logs => "logs",
            Action::Act(v) => v.word(),
        }
    }
}

/// `mimesis bg`: dispatches a session to Claude Code's background service.
pub fn dispatch(roots: &[PathBuf], data_dir: &Path, args: BgArgs) -> anyhow::Result<()> {
    let root = roots.first().context("no Claude Code config folder: set CLAUDE_CONFIG_DIR or --config-dir")?;
    let cwd = std::path::absolute(&args.cwd).unwrap_or(args.cwd);
    let claude = Claude::new(bg::claude_program(data_dir), root);
    let prompt = args.prompt.join(" ");
    let started = claude.dispatch(&cwd, &prompt, args.permission_mode.as_deref())?;
    let mut out = Term::stdout();
    if args.json {
        term::json_line(&mut out, &started)?;
    } else {
        writeln!(
            out,
            "Started {} in the background (job {}). `mimesis attach {}` opens it; `mimesis stop {}` stops it.",
            started.session_id, started.job, started.job, started.job
        )?;
    }
    Ok(out.flush()?)
}

/// `mimesis attach|logs|stop|respawn|rm ID`. The exit code is the verb's (non-zero, with a
/// sentence on stderr, for an id that cannot be acted on).
pub fn act(roots: &[PathBuf], data_dir: &Path, action: Action, query: &str) -> anyhow::Result<ExitCode> {
    let target = match bg::resolve(roots, data_dir, query) {
        Ok(t) => t,
        Err(e) => bail!("{}", sanitize(&e.to_string(), false)),
    };
    match target {
        Target::Background(t) => background(data_dir, action, &t),
        Target::Remote { host, id } => {
            let tty = action == Action::Attach;
            if tty && !io::stdin().is_terminal() {
                bail!("attach needs a terminal: run it in one");
            }
            let mut cmd = bg::remote_verb(&host, action.word(), &id, tty)?;
            if tty {
                return Err(exec(cmd)).context("cannot run ssh");
            }
            let out = cmd.output().with_context(|| format!("cannot run ssh to {host}"))?;
            print_lines(&out.stdout, &mut Term::stdout())?;
            print_lines(&out.stderr, &mut Term::stderr())?;
            Ok(ExitCode::from(out.status.code().map_or(1, |c| c.clamp(0, 255) as u8)))
        }
        Target::Supervised { session_id, owner } => {
            let verb = action.word();
            let how = match action {
                Action::Act(Verb::Stop) => "Stop",
                Action::Act(Verb::Respawn) => "Restart",
                Action::Act(Verb::Remove) => "Delete",
                Action::Attach | Action::Logs => "its terminal",
            };
            Err(ControlError::Uncontrollable(format!(
                "session {session_id} is supervised by Mimesis (pid {owner}): `mimesis {verb}` acts on Claude Code's \
                 background sessions; use {how} in the window (or Ctrl-C in the terminal of its `mimesis run`)"
            ))
            .into())
        }
    }
}

fn background(data_dir: &Path, action: Action, t: &BgTarget) -> anyhow::Result<ExitCode> {
    let claude = Claude::of(data_dir, t);
    match action {
        Action::Attach => {
            if !io::stdin().is_terminal() || !term::stdout_is_terminal() {
                bail!("attach needs a terminal: run it in one (Ctrl+Z detaches and leaves the session running)");
            }
            Err(exec(claude.attach_command(&t.job))).with_context(|| format!("cannot run {}", claude.program.display()))
        }
        Action::Logs => {
            // Raw terminal output: drawn on a screen model, then printed as plain lines.
            let raw = claude.logs(&t.job)?;
            let mut out = Term::stdout();
            for line in bg::screen_text(&raw, 200, 50) {
                writeln!(out, "{}", sanitize(&line, false))?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Action::Act(verb) => {
            let said = claude.act(&t.job, verb)?;
            writeln!(Term::stdout(), "{}", sanitize(&said, false))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Untrusted output, line by line, through the terminal-safe path.
fn print_lines(bytes: &[u8], out: &mut dyn Write) -> io::Result<()> {
    let text = mimesis_core::text::strip_ansi(&String::from_utf8_lossy(bytes));
    for line in text.lines() {
        writeln!(out, "{}", sanitize(line, false))?;
    }
    out.flush()
}

/// Replaces this process with `cmd` (in the user's terminal); returns only on failure.
fn exec(mut cmd: std::process::Command) -> io::Error {
    use std::os::unix::process::CommandExt;
    cmd.exec()
}
