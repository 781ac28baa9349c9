//! Answers a background session's dialog through Claude Code's own `claude attach <job id>`
//! (2.1.332: a full-screen client of its background service; keys go to the session; Ctrl+Z
//! detaches and leaves it running): in a terminal Mimesis owns, read with its screen model,
//! the option chosen by its label, the dialog checked gone, then detached. Nothing of the
//! service is touched but through its own verb.
//!
//! The whole API is [`answer`]: Claude Code's verbs for the config folder that holds the job
//! ([`Claude`], which runs them as every verb of Mimesis's), the job's id and the answers in,
//! the option chosen out.

use std::time::Duration;

use mimesis_core::clock::Clock;
use mimesis_core::dialog::{Answer, Dialog};
use mimesis_core::ids::JobId;
use mimesis_core::text::clean_text;
use mimesis_supervise::monitor::Monitor;
use mimesis_supervise::plain::PlainTerminal;
use tokio::sync::broadcast::error::TryRecvError;

use super::screen::{Screen, TypingError, type_answers};
use crate::background::Claude;

/// The attached terminal's size: wide, so that long commands wrap little.
const COLS: u16 = 160;
const ROWS: u16 = 50;
/// How long the client has to draw the session (observed 0.5–1.1 s; far more on a loaded
/// machine: a deadline, not a wait) and a dialog on it.
const FIRST_FRAME: Duration = Duration::from_secs(30);
/// How long to look for a dialog after the first frame before answering anyway (the
/// answer then says there is none).
const DIALOG_SHOWN: Duration = Duration::from_secs(5);
/// How long the client has to leave after Ctrl+Z before it is ended.
const DETACH: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(40);
/// Ctrl+Z: `claude attach` detaches (← would open its agent view).
const DETACH_KEY: &[u8] = b"\x1a";

/// Attaches to the job, types `answers` into its dialog(s) by label, checks each gone,
/// detaches. The label of the last option chosen, or why not in a sentence.
pub async fn answer(
    claude: &Claude,
    job: &JobId,
    answers: Vec<Answer>,
    clock: &dyn Clock,
) -> Result<String, TypingError> {
    let term = PlainTerminal::start(claude.attach_spec(job, COLS, ROWS, 1 << 16))
        .map_err(|source| TypingError::AttachStart { program: claude.program.display().to_string(), source })?;
    let mut screen = Attached::new(term.clone());
    let result = async {
        screen.first_frame(clock).await?;
        type_answers(&mut screen, answers, clock, POLL).await
    }
    .await;
    screen.detach(clock).await;
    result
}

/// The attached client's screen, as Mimesis's terminal model reads it.
struct Attached {
    term: PlainTerminal,
    output: tokio::sync::broadcast::Receiver<std::sync::Arc<[u8]>>,
    monitor: Monitor,
}

impl Attached {
    fn new(term: PlainTerminal) -> Attached {
        let a = term.attach();
        let mut monitor = Monitor::new(a.rows, a.cols, &[]);
        monitor.feed(&a.scrollback, std::time::Instant::now());
        Attached { term, output: a.output, monitor }
    }

    /// Takes in what the client drew since; answers its terminal queries.
    fn read(&mut self) {
        loop {
            match self.output.try_recv() {
                Ok(bytes) => {
                    self.monitor.feed(&bytes, std::time::Instant::now());
                }
                Err(TryRecvError::Lagged(_)) => continue,
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        let replies = self.monitor.take_replies();
        if !replies.is_empty() {
            let _ = self.term.write(&replies);
        }
    }

    /// Why the client ended, from what it printed last.
    fn ended(&mut self) -> Option<TypingError> {
        let code = self.term.exit_code()?;
        self.read();
        let said = self.monitor.last_line().map(|l| clean_text(&l, 200)).unwrap_or_default();
        Some(TypingError::AttachEnded { code, said })
    }

    /// Waits for the session's first frame, and a little for a dialog on it.
    async fn first_frame(&mut self, clock: &dyn Clock) -> Result<(), TypingError> {
        let start = clock.mono();
        let mut drawn = None;
        loop {
            self.read();
            if let Some(why) = self.ended() {
                return Err(why);
            }
            let rows = self.monitor.rows();
            if Dialog::read(&rows).is_some() {
                return Ok(());
            }
            let now = clock.mono();
            if rows.iter().any(|r| !r.trim().is_empty()) {
                let at = *drawn.get_or_insert(now);
                if now.since(at) >= DIALOG_SHOWN {
                    return Ok(());
                }
            }
            if now.since(start) >= FIRST_FRAME {
                return Err(TypingError::NothingDrawn);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Ctrl+Z, then waits for the client to leave (the session goes on); ends it if it does
    /// not (our own client: the service and its session are not touched).
    async fn detach(&mut self, clock: &dyn Clock) {
        if self.term.exit_code().is_some() {
            return;
        }
        let _ = self.term.write(DETACH_KEY);
        let start = clock.mono();
        let mut exited = self.term.exited();
        while exited.borrow_and_update().is_none() {
            if clock.mono().since(start) >= DETACH {
                tracing::warn!("`claude attach` did not leave on Ctrl+Z; ending it");
                self.term.close();
                return;
            }
            let _ = tokio::time::timeout(POLL * 5, exited.changed()).await;
        }
    }
}

impl Screen for Attached {
    async fn rows(&mut self) -> Result<Option<Vec<String>>, TypingError> {
        self.read();
        match self.ended() {
            Some(why) => Err(why),
            None => Ok(Some(self.monitor.rows())),
        }
    }

    async fn send(&mut self, key: &[u8]) -> Result<(), TypingError> {
        match self.ended() {
            Some(why) => Err(why),
            None => Ok(self.term.write(key)?),
        }
    }
}
