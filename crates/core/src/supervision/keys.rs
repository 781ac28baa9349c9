//! The keys a session's agent is sent, paced the way a TUI can take them: a typed line's
//! Enter waits until the TUI shows the line in its input row (a TUI takes text and Enter
//! arriving in one read as a paste, and would not submit it), and what is written after it
//! waits behind it; an answer to a dialog waits for the dialog to settle (2.1.330 ignores
//! keys for a moment after a dialog appears), types its keys one at a time, then checks
//! that the dialog is gone — or says why not.
//!
//! Pure: the driver feeds what it writes, the instants and the screen's rows, and sends
//! the bytes this says to send. Its instants are the injected monotonic clock the policy's
//! limits run on (`crate::clock`), so a test moves a typed line's Enter or an answer on by
//! advancing that clock.

use std::collections::VecDeque;
use std::time::Duration;

use crate::clock::Mono;
use crate::dialog::{Answer, Dialog};

/// A dialog is answered once it has been on screen, unchanged or with no output, this long.
pub const DIALOG_SETTLE: Duration = Duration::from_millis(800);
/// Between the keys of an answer.
pub const KEY_PAUSE: Duration = Duration::from_millis(60);
/// An answer not done in this long has failed.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// A typed line's Enter goes at least this long after the text…
pub const ENTER_PAUSE: Duration = Duration::from_millis(50);
/// …and at most this long after it (a TUI that does not echo).
pub const ENTER_WAIT: Duration = Duration::from_secs(2);
/// How often the screen is looked at while an Enter or an answer waits.
pub const ENTER_POLL: Duration = Duration::from_millis(25);

/// Why a dialog was not answered: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("the session has no running agent to answer")]
    NoAgent,
    #[error("another answer to this session is under way")]
    Busy,
    #[error("no dialog is on the session's screen")]
    NoDialog,
    /// The dialog on screen has no such option (the dialog's own words).
    #[error(transparent)]
    NoSuchOption(#[from] crate::dialog::DialogError),
    #[error("the dialog never settled on screen")]
    NeverSettled,
    #[error("the dialog is still on screen: the agent did not take the answer")]
    NotTaken,
    #[error("the agent exited before the answer was taken")]
    Exited,
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyEffect {
    /// Bytes to the agent's terminal, now.
    Send(Vec<u8>),
    /// The answer under way is done: the label of the option chosen, or why not.
    Answered(Result<String, AnswerError>),
}

/// Bytes to the PTY that wait behind a typed line's Enter.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Held {
    Bytes(Vec<u8>),
    Line(Vec<u8>),
}

/// A typed line whose Enter is not sent yet.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Typing {
    /// The end of the line, without whitespace, as the screen would show it.
    needle: String,
    since: Mono,
}

#[derive(Clone, Debug)]
struct Answering {
    answer: Answer,
    stage: AnswerStage,
    /// When it gives up.
    deadline: Mono,
}

#[derive(Clone, Debug)]
enum AnswerStage {
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

/// The keys of one session's current process.
#[derive(Clone, Debug)]
pub struct Keys {
    typing: Option<Typing>,
    held: VecDeque<Held>,
    answering: Option<Answering>,
    /// When the current process last printed something.
    output_at: Mono,
    out: Vec<KeyEffect>,
}

impl Keys {
    pub fn new(now: Mono) -> Keys {
        Keys { typing: None, held: VecDeque::new(), answering: None, output_at: now, out: Vec::new() }
    }

    /// Bytes for the agent, in order: behind a typed line still waiting for its Enter.
    pub fn write(&mut self, bytes: Vec<u8>, now: Mono, screen: &dyn Fn() -> Vec<String>) -> Vec<KeyEffect> {
        self.put(Held::Bytes(bytes), now, screen);
        std::mem::take(&mut self.out)
    }

    /// A line to type: the text now (or behind a waiting Enter), its Enter once the TUI
    /// shows it.
    pub fn type_line(&mut self, line: Vec<u8>, now: Mono, screen: &dyn Fn() -> Vec<String>) -> Vec<KeyEffect> {
        self.put(Held::Line(line), now, screen);
        std::mem::take(&mut self.out)
    }

    /// The process printed something.
    pub fn output(&mut self, now: Mono) {
        self.output_at = now;
    }

    /// Starts answering the dialog on screen; refused while another answer is under way.
    pub fn answer(&mut self, answer: Answer, now: Mono, screen: &dyn Fn() -> Vec<String>) -> Vec<KeyEffect> {
        if self.answering.is_some() {
            return vec![KeyEffect::Answered(Err(AnswerError::Busy))];
        }
        let deadline = now.plus(ANSWER_WAIT);
        self.answering = Some(Answering { answer, stage: AnswerStage::Settling(None), deadline });
        self.check_answer(now, screen);
        std::mem::take(&mut self.out)
    }

    /// Looks at the screen again: a waiting Enter, an answer's next step.
    pub fn poll(&mut self, now: Mono, screen: &dyn Fn() -> Vec<String>) -> Vec<KeyEffect> {
        self.check_typing(now, screen);
        self.check_answer(now, screen);
        std::mem::take(&mut self.out)
    }

    /// Only a waiting Enter (cheap enough to look at before every message).
    pub fn poll_typing(&mut self, now: Mono, screen: &dyn Fn() -> Vec<String>) -> Vec<KeyEffect> {
        self.check_typing(now, screen);
        std::mem::take(&mut self.out)
    }

    /// When to poll next: while an Enter or an answer waits.
    pub fn next_poll(&self, now: Mono) -> Option<Mono> {
        (self.typing.is_some() || self.answering.is_some()).then(|| now.plus(ENTER_POLL))
    }

    /// A new process: nothing typed for the last one goes to it.
    pub fn process_started(&mut self) {
        self.typing = None;
        self.held.clear();
    }

    /// The process is gone: an answer under way fails, what waited is dropped.
    pub fn process_ended(&mut self) -> Vec<KeyEffect> {
        self.typing = None;
        self.held.clear();
        self.answering.take().map(|_| KeyEffect::Answered(Err(AnswerError::Exited))).into_iter().collect()
    }

    fn send(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.out.push(KeyEffect::Send(bytes));
        }
    }

    fn put(&mut self, msg: Held, now: Mono, screen: &dyn Fn() -> Vec<String>) {
        if self.typing.is_some() {
            self.held.push_back(msg);
            return;
        }
        match msg {
            Held::Bytes(b) => self.send(b),
            Held::Line(line) => {
                let text = String::from_utf8_lossy(&line);
                let needle: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                let needle = needle.chars().rev().take(16).collect::<Vec<_>>().into_iter().rev().collect();
                self.send(line);
                self.typing = Some(Typing { needle, since: now });
                self.check_typing(now, screen);
            }
        }
    }

    /// Sends a waiting Enter once the TUI shows the line (or waited long enough), then
    /// what was held behind it.
    fn check_typing(&mut self, now: Mono, screen: &dyn Fn() -> Vec<String>) {
        let Some(t) = &self.typing else { return };
        let waited = now.since(t.since);
        if waited < ENTER_PAUSE || (waited < ENTER_WAIT && !input_shows(&screen(), &t.needle)) {
            return;
        }
        self.typing = None;
        self.send(b"\r".to_vec());
        while self.typing.is_none()
            && let Some(msg) = self.held.pop_front()
        {
            self.put(msg, now, screen);
        }
    }

    /// Moves an answer on: settled → keys, one at a time → the dialog gone.
    fn check_answer(&mut self, now: Mono, screen: &dyn Fn() -> Vec<String>) {
        let Some(mut a) = self.answering.take() else { return };
        let shown = Dialog::read(&screen());
        let quiet = now.since(self.output_at) >= DIALOG_SETTLE;
        let outcome = match &mut a.stage {
            AnswerStage::Settling(seen) => match (shown, seen.take()) {
                (None, _) if quiet => Some(Err(AnswerError::NoDialog)),
                (None, _) => None,
                (Some(d), Some((before, since)))
                    if d.same_as(&before) && (quiet || now >= since.plus(DIALOG_SETTLE)) =>
                {
                    match d.keys(&a.answer) {
                        Err(e) => Some(Err(AnswerError::NoSuchOption(e))),
                        Ok(keys) => {
                            let label = d.chosen_label(&a.answer).unwrap_or_default();
                            a.stage = AnswerStage::Typing { dialog: d, label, keys: keys.into(), next: now };
                            None
                        }
                    }
                }
                (Some(d), Some((before, since))) if d.same_as(&before) => {
                    *seen = Some((before, since));
                    None
                }
                (Some(d), _) => {
                    *seen = Some((d, now));
                    None
                }
            },
            AnswerStage::Typing { dialog, label, keys, next } => {
                if now >= *next
                    && let Some(k) = keys.pop_front()
                {
                    self.out.push(KeyEffect::Send(k));
                    *next = now.plus(KEY_PAUSE);
                }
                if keys.is_empty() {
                    let (dialog, label) = (dialog.clone(), std::mem::take(label));
                    a.stage = AnswerStage::Checking { dialog, label };
                }
                None
            }
            AnswerStage::Checking { dialog, label } => {
                (!shown.is_some_and(|d| d.same_as(dialog))).then(|| Ok(label.clone()))
            }
        };
        match outcome {
            Some(result) => {
                tracing::info!(?result, "answered the dialog on screen");
                self.out.push(KeyEffect::Answered(result));
            }
            None if now >= a.deadline => {
                let why = match a.stage {
                    AnswerStage::Settling(_) => AnswerError::NeverSettled,
                    _ => AnswerError::NotTaken,
                };
                self.out.push(KeyEffect::Answered(Err(why)));
            }
            None => self.answering = Some(a),
        }
    }
}

/// Does the TUI's input row (the last `❯` row and what wraps below it, up to the box's
/// rule) show `needle` (compared without whitespace)? Without such a row, any row counts.
fn input_shows(rows: &[String], needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let Some(start) = rows.iter().rposition(|r| r.trim_start().starts_with('❯')) else {
        return rows.iter().any(|r| squeeze(r).contains(needle));
    };
    let input: String =
        rows[start..].iter().take_while(|r| !r.trim_start().starts_with('─')).map(|r| squeeze(r)).collect();
    input.contains(needle)
}

#[cfg(test)]
mod tests;
