//! One answer to the dialog on a screen Mimesis reads but does not own (a background
//! session through `claude attach`, a tmux pane, a kitty window, a WezTerm pane), as a pure
//! machine: screens and instants in, keys to type and the outcome out. The driver reads the
//! screen, feeds it in, types what comes out, and sleeps a little between steps.
//!
//! The steps are those of a person: wait until the dialog has settled (Claude Code ignores
//! keys for a moment after a dialog appears), check it is the one meant, type the keys one at
//! a time, then look again until the dialog is gone. Nothing is typed at a screen that shows
//! no dialog, another dialog, or one that keeps changing; a dialog still there after the
//! keys is said, never typed at again.

use std::collections::VecDeque;
use std::time::Duration;

use super::{Answer, Dialog, DialogError};
use crate::clock::Mono;

/// A dialog is answered once it has looked the same this long.
pub const SETTLE: Duration = Duration::from_millis(800);
/// Between the keys of an answer.
pub const KEY_PAUSE: Duration = Duration::from_millis(60);
/// An answer not done in this long has failed.
pub const ANSWER_WAIT: Duration = Duration::from_secs(20);

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Look at the screen again a little later.
    Wait,
    /// Type these bytes (one key), then look again.
    Type(Vec<u8>),
    /// Finished: the label chosen, once the dialog is gone; or why not.
    Done(Result<String, AnswerFailed>),
}

/// Why an answer to a screen we do not own failed: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerFailed {
    #[error("no dialog is on the session's screen")]
    NoDialog,
    #[error(transparent)]
    Dialog(#[from] DialogError),
    #[error("the dialog never settled on the screen: nothing was typed")]
    NeverSettled,
    #[error("the dialog is still on the screen: Claude Code did not take the answer")]
    NotTaken,
}

enum Stage {
    /// The dialog last read and since when it has looked the same.
    Settling(Option<(Dialog, Mono)>),
    Typing {
        dialog: Dialog,
        label: String,
        keys: VecDeque<Vec<u8>>,
        next: Mono,
    },
    Checking {
        dialog: Dialog,
        label: String,
    },
}

/// An answer under way.
pub struct Answering {
    answer: Answer,
    stage: Stage,
    started: Mono,
    deadline: Mono,
    done: bool,
}

impl Answering {
    pub fn new(answer: Answer, now: Mono) -> Answering {
        Answering { answer, stage: Stage::Settling(None), started: now, deadline: now.plus(ANSWER_WAIT), done: false }
    }

    /// The next step, given the screen's rows now (`None`: it could not be read).
    pub fn step(&mut self, rows: Option<&[String]>, now: Mono) -> Step {
        if self.done {
            return Step::Wait;
        }
        let shown = rows.and_then(Dialog::read);
        let step = match &mut self.stage {
            Stage::Settling(seen) => match (shown, seen.take()) {
                (None, _) if now.since(self.started) >= SETTLE => Step::Done(Err(AnswerFailed::NoDialog)),
                (None, _) => Step::Wait,
                (Some(d), Some((before, since))) if d.same_as(&before) && now.since(since) >= SETTLE => {
                    match (d.keys(&self.answer), d.chosen_label(&self.answer)) {
                        (Ok(keys), Ok(label)) => {
                            let mut keys: VecDeque<Vec<u8>> = keys.into();
                            let first = keys.pop_front().unwrap_or_default();
                            self.stage = Stage::Typing { dialog: d, label, keys, next: now.plus(KEY_PAUSE) };
                            Step::Type(first)
                        }
                        (Err(e), _) | (_, Err(e)) => Step::Done(Err(e.into())),
                    }
                }
                (Some(d), Some((before, since))) if d.same_as(&before) => {
                    *seen = Some((before, since));
                    Step::Wait
                }
                (Some(d), _) => {
                    *seen = Some((d, now));
                    Step::Wait
                }
            },
            Stage::Typing { dialog, label, keys, next } => {
                if now < *next {
                    Step::Wait
                } else if let Some(k) = keys.pop_front() {
                    *next = now.plus(KEY_PAUSE);
                    Step::Type(k)
                } else {
                    let (dialog, label) = (dialog.clone(), std::mem::take(label));
                    self.stage = Stage::Checking { dialog, label };
                    Step::Wait
                }
            }
            Stage::Checking { dialog, label } => {
                if shown.is_some_and(|d| d.same_as(dialog)) || rows.is_none() {
                    Step::Wait
                } else {
                    Step::Done(Ok(label.clone()))
                }
            }
        };
        let step = match step {
            Step::Wait if now >= self.deadline => Step::Done(Err(match self.stage {
                Stage::Settling(_) => AnswerFailed::NeverSettled,
                _ => AnswerFailed::NotTaken,
            })),
            s => s,
        };
        self.done = matches!(step, Step::Done(_));
        step
    }

    /// Whether keys were typed already (an answer that fails after that may have done
    /// something).
    pub fn typed(&self) -> bool {
        !matches!(self.stage, Stage::Settling(_))
    }
}
