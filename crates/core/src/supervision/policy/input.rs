//! The user's input (P2): what waits while no process can take it, delivered in order once
//! the agent is back; in one-shot mode, the line being typed. The queue is [`InputQueue`];
//! where a piece of input goes is below, on the policy.

use std::collections::VecDeque;

use super::{Delivery, Effect, Proc, Purpose, SessionPolicy};
use crate::supervision::view::{Mode, SupervisionState};

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct InputQueue {
    pub queue: VecDeque<Vec<u8>>,
    /// One-shot mode: the line being typed.
    line: Vec<u8>,
    /// What went to a resumed process before it showed a turn: it may yet refuse the
    /// resume and exit, taking that text with it; then it is queued again for the new
    /// session (`None` once the process worked, or for other processes).
    pub unconfirmed: Option<Vec<Vec<u8>>>,
}

impl InputQueue {
    /// Notes what went to the process (kept while its resume is unconfirmed).
    pub(super) fn sent(&mut self, bytes: &[u8]) {
        if let Some(sent) = &mut self.unconfirmed
            && !bytes.is_empty()
        {
            sent.push(bytes.to_vec());
        }
    }

    /// Delivers what was kept, the way it was typed: each Enter (outside a bracketed paste)
    /// follows its line only once the TUI has taken the text.
    pub(super) fn flush(&mut self) -> Vec<Effect> {
        let all: Vec<u8> = self.queue.drain(..).flatten().collect();
        self.sent(&all);
        typed_lines(&all)
            .into_iter()
            .map(|(text, enter)| if enter { Effect::TypeLine(text) } else { Effect::Write(text) })
            .collect()
    }

    /// One-shot mode: keys build a line locally; Enter queues it as a prompt. Returns the
    /// echo to show.
    pub(super) fn one_shot_keys(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        let mut echo = Vec::new();
        for b in bytes {
            match b {
                b'\r' | b'\n' => {
                    echo.extend_from_slice(b"\r\n");
                    let prompt = String::from_utf8_lossy(&self.line).trim().to_owned();
                    self.line.clear();
                    if !prompt.is_empty() {
                        self.queue.push_back(prompt.into_bytes());
                    }
                }
                // Backspace: rub out the last character, if any.
                0x7f | 0x08 => echo.extend_from_slice(if self.line.pop().is_some() { b"\x08 \x08" } else { b"" }),
                0x03 => self.line.clear(),
                b if b >= 0x20 || b == b'\t' => {
                    self.line.push(b);
                    echo.push(b);
                }
                _ => {}
            }
        }
        echo
    }

    /// The resume was refused: what the process was given goes to the new session first.
    pub(super) fn requeue_unconfirmed(&mut self) {
        for b in self.unconfirmed.take().unwrap_or_default().into_iter().rev() {
            self.queue.push_front(b);
        }
    }

    pub(super) fn clear(&mut self) {
        self.queue.clear();
        self.line.clear();
    }
}

/// Keys that only interrupt or quit the agent: Ctrl-C and Ctrl-D.
fn only_interrupts(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, 0x03 | 0x04))
}

/// Splits typed bytes into lines: (text, ended by Enter). An Enter inside a bracketed
/// paste (`ESC [200~ … ESC [201~`) is part of the paste, not a submission.
fn typed_lines(bytes: &[u8]) -> Vec<(Vec<u8>, bool)> {
    const PASTE_START: &[u8] = b"\x1b[200~";
    const PASTE_END: &[u8] = b"\x1b[201~";
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut pasting = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(PASTE_START) || rest.starts_with(PASTE_END) {
            pasting = rest.starts_with(PASTE_START);
            line.extend_from_slice(&rest[..PASTE_START.len()]);
            i += PASTE_START.len();
            continue;
        }
        if bytes[i] == b'\r' && !pasting {
            out.push((std::mem::take(&mut line), true));
        } else {
            line.push(bytes[i]);
        }
        i += 1;
    }
    if !line.is_empty() {
        out.push((line, false));
    }
    out
}

impl SessionPolicy {
    pub(super) fn deliver_or_queue(&mut self, bytes: Vec<u8>) -> Delivery {
        if bytes.is_empty() {
            return Delivery::Written;
        }
        if self.mode == Mode::OneShot && matches!(self.state, SupervisionState::Running) {
            return self.one_shot_keys(bytes);
        }
        match self.state {
            SupervisionState::Terminated => return Delivery::Refused,
            SupervisionState::Unhealthy if !matches!(self.proc, Proc::Live { .. }) => return Delivery::Refused,
            // Ctrl-C (or Ctrl-D) at a suspended session interrupts nothing: it does not wake
            // the agent to be handed keys that quit it (an exit then taken for a crash).
            SupervisionState::Suspended if only_interrupts(&bytes) => return Delivery::Written,
            SupervisionState::Suspended => {
                self.input.queue.push_back(bytes);
                if (matches!(self.proc, Proc::None) || self.frozen) && !self.budget_holds() {
                    self.resume_from_suspension();
                }
                // After a SIGCONT resume the queue was flushed at once.
                let flushed = self.input.queue.is_empty() && matches!(self.proc, Proc::Live { .. });
                return if flushed { Delivery::Written } else { Delivery::Queued };
            }
            _ => {}
        }
        let takes_input = match &self.proc {
            Proc::Live { .. } => !self.frozen,
            // The first launch behaves like a terminal: type-ahead goes to the agent.
            Proc::Starting { purpose: Purpose::Initial, pid: Some(_), .. } => true,
            _ => false,
        };
        if takes_input && self.input.queue.is_empty() {
            self.idle.touch(self.now, self.limits.idle_timeout);
            self.input.sent(&bytes);
            self.out.push(Effect::Write(bytes));
            Delivery::Written
        } else {
            self.input.queue.push_back(bytes);
            Delivery::Queued
        }
    }

    pub(super) fn flush_queue(&mut self) {
        let effects = self.input.flush();
        self.out.extend(effects);
    }

    /// One-shot mode: keys build a line locally; Enter runs it as its own process.
    pub(super) fn one_shot_keys(&mut self, bytes: Vec<u8>) -> Delivery {
        let echo = self.input.one_shot_keys(bytes);
        if !echo.is_empty() {
            self.out.push(Effect::Echo(echo));
        }
        if matches!(self.proc, Proc::None) {
            self.next_one_shot();
        }
        Delivery::Queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enter_inside_a_bracketed_paste_is_part_of_the_paste() {
        let lines = typed_lines(b"hi\r\x1b[200~a\rb\x1b[201~\rrest");
        assert_eq!(
            lines,
            vec![(b"hi".to_vec(), true), (b"\x1b[200~a\rb\x1b[201~".to_vec(), true), (b"rest".to_vec(), false)]
        );
    }

    #[test]
    fn one_shot_keys_build_lines_with_backspace_and_ctrl_c() {
        let mut q = InputQueue::default();
        assert_eq!(q.one_shot_keys(b"ab\x7fc".to_vec()), b"ab\x08 \x08c".to_vec());
        q.one_shot_keys(b"\r".to_vec());
        q.one_shot_keys(b"zz\x03  \r".to_vec());
        assert_eq!(q.queue, VecDeque::from([b"ac".to_vec()]), "a cleared or blank line is no prompt");
        assert!(only_interrupts(b"\x03\x04") && !only_interrupts(b"\x03a"));
    }

    #[test]
    fn what_an_unconfirmed_resume_took_is_queued_again_first() {
        let mut q = InputQueue { unconfirmed: Some(Vec::new()), ..InputQueue::default() };
        q.sent(b"one");
        q.sent(b"two");
        q.queue.push_back(b"three".to_vec());
        q.requeue_unconfirmed();
        assert_eq!(q.queue, VecDeque::from([b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]));
    }
}
