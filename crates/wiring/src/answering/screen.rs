//! Types answers into a screen Mimesis reads but does not own, step by step with the pure
//! machine [`mimesis_core::dialog::Answering`]: read the screen, feed it in, type what it
//! says, wait a little, again, until it says it is done.

use std::time::Duration;

use mimesis_core::clock::Clock;
use mimesis_core::dialog::{Answer, AnswerFailed, Answering, Step};
use mimesis_supervise::{StartError, TerminalError};

/// A screen to answer on.
pub(super) trait Screen {
    /// Its visible rows now; `None` when they cannot be read this time; an error when they
    /// never will be again (the client ended).
    async fn rows(&mut self) -> Result<Option<Vec<String>>, TypingError>;
    /// Types one key; an error says why it could not be.
    async fn send(&mut self, key: &[u8]) -> Result<(), TypingError>;
}

/// Why answers typed into a screen Mimesis does not own did not go through: the sentence
/// is the Display.
#[derive(Debug, thiserror::Error)]
pub enum TypingError {
    #[error(transparent)]
    Answer(#[from] AnswerFailed),
    #[error("{error} (after {taken} of {of} answers were taken)")]
    After { error: AnswerFailed, taken: usize, of: usize },
    #[error("this Mimesis supervises no session")]
    NoSupervisor,
    /// Why the dialog's screen cannot be reached from here (the route's own sentence).
    #[error("{0}")]
    Unreachable(String),
    #[error("cannot run {program} attach: {source}")]
    AttachStart { program: String, source: StartError },
    #[error("`claude attach` ended (exit code {code}) before the answer: {said}")]
    AttachEnded { code: i32, said: String },
    #[error("`claude attach` drew nothing: the session did not show")]
    NothingDrawn,
    #[error(transparent)]
    Write(#[from] TerminalError),
    #[error("tmux named no process for {0}")]
    NoPaneProcess(String),
    #[error("{what} does not run this session (process {pid} is not one of the pane's): nothing was typed")]
    NotThePane { what: String, pid: u32 },
    #[error("{error} ({why})")]
    PaneUnread { error: Box<TypingError>, why: CommandError },
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error("not a key an answer types")]
    NotAKey,
}

/// Why a terminal's remote-control command failed: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("nothing to run")]
    Empty,
    #[error("cannot run {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} did not answer within {secs} s")]
    Timeout { program: String, secs: u64 },
    #[error("{program} failed: {why}")]
    Failed { program: String, why: String },
}

/// Types `answers` in turn (each waits for its dialog, and for it to be gone); the label of
/// the last option chosen, or why not.
pub(super) async fn type_answers(
    screen: &mut impl Screen,
    answers: Vec<Answer>,
    clock: &dyn Clock,
    poll: Duration,
) -> Result<String, TypingError> {
    let mut last = String::new();
    let n = answers.len();
    for (i, answer) in answers.into_iter().enumerate() {
        let mut a = Answering::new(answer, clock.mono());
        last = loop {
            let rows = screen.rows().await?;
            match a.step(rows.as_deref(), clock.mono()) {
                Step::Wait => tokio::time::sleep(poll).await,
                Step::Type(key) => screen.send(&key).await?,
                Step::Done(Ok(label)) => break label,
                Step::Done(Err(error)) if i > 0 => return Err(TypingError::After { error, taken: i, of: n }),
                Step::Done(Err(e)) => return Err(e.into()),
            }
        };
    }
    Ok(last)
}
