//! Answers a dialog in the terminal pane an outside session runs in (tmux, kitty, WezTerm):
//! the pane's text read with the terminal's own remote control, the option's key typed with
//! it, the pane read again until the dialog is gone. Programs run without a shell, each id a
//! plain id ([`mimesis_core::answering::send_argv`]). A tmux pane must be the one that runs
//! the session (its process descends from the pane's) before anything is typed into it.

use std::process::Stdio;
use std::time::Duration;

use mimesis_core::answering::{Pane, PaneKind, capture_argv, send_argv};
use mimesis_core::clock::Clock;
use mimesis_core::dialog::Answer;
use mimesis_core::text::clean_text;

use super::screen::{CommandError, Screen, TypingError, type_answers};

/// A capture or a key's command that takes longer has failed.
const COMMAND_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(80);

/// Types `answers` into the dialog of the session `pid` (when known) in `pane`.
pub async fn answer(
    pane: &Pane,
    pid: Option<u32>,
    answers: Vec<Answer>,
    clock: &dyn Clock,
) -> Result<String, TypingError> {
    if let (PaneKind::Tmux { .. }, Some(pid)) = (&pane.kind, pid) {
        let mut argv = pane.program();
        argv.extend(["display-message".into(), "-p".into(), "-t".into(), pane.id.clone(), "#{pane_pid}".into()]);
        let out = run(&argv).await?;
        let pane_pid: u32 = out.trim().parse().map_err(|_| TypingError::NoPaneProcess(pane.what()))?;
        if !descends_from(pid, pane_pid) {
            return Err(TypingError::NotThePane { what: pane.what(), pid });
        }
    }
    let mut screen = PaneScreen { pane, last_error: None };
    type_answers(&mut screen, answers, clock, POLL).await.map_err(|e| match screen.last_error.take() {
        Some(why) => TypingError::PaneUnread { error: Box::new(e), why },
        None => e,
    })
}

struct PaneScreen<'a> {
    pane: &'a Pane,
    /// Why the pane could not be read last time, for the final sentence.
    last_error: Option<CommandError>,
}

impl Screen for PaneScreen<'_> {
    async fn rows(&mut self) -> Result<Option<Vec<String>>, TypingError> {
        match run(&capture_argv(self.pane)).await {
            Ok(text) => {
                self.last_error = None;
                Ok(Some(text.lines().map(|l| l.trim_end().to_owned()).collect()))
            }
            Err(e) => {
                self.last_error = Some(e);
                Ok(None)
            }
        }
    }

    async fn send(&mut self, key: &[u8]) -> Result<(), TypingError> {
        let argv = send_argv(self.pane, key).ok_or(TypingError::NotAKey)?;
        Ok(run(&argv).await.map(drop)?)
    }
}

/// Runs `argv` (no shell; the user's environment), its stdout; an error in a sentence.
async fn run(argv: &[String]) -> Result<String, CommandError> {
    let (program, args) = argv.split_first().ok_or(CommandError::Empty)?;
    let mut std = std::process::Command::new(program);
    mimesis_os::child_env::restore(&mut std);
    std.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut cmd = tokio::process::Command::from(std);
    cmd.kill_on_drop(true);
    let out = match tokio::time::timeout(COMMAND_WAIT, cmd.output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(source)) => return Err(CommandError::Spawn { program: program.clone(), source }),
        Err(_) => return Err(CommandError::Timeout { program: program.clone(), secs: COMMAND_WAIT.as_secs() }),
    };
    if !out.status.success() {
        let why = clean_text(&String::from_utf8_lossy(&out.stderr), 200);
        return Err(CommandError::Failed { program: program.clone(), why });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `pid` is `ancestor` or one of its descendants.
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut p = pid;
    for _ in 0..64 {
        if p == ancestor {
            return true;
        }
        match mimesis_os::procs::stat(p) {
            Some(s) if s.ppid > 1 && s.ppid != p => p = s.ppid,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_descends_from_its_parents_only() {
        let me = std::process::id();
        let parent = mimesis_os::procs::stat(me).unwrap().ppid;
        assert!(super::descends_from(me, me) && super::descends_from(me, parent));
        assert!(!super::descends_from(parent, me));
        assert!(!super::descends_from(u32::MAX, me), "no such process");
    }
}
