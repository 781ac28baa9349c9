//! What `mimesis run` says of its supervision when the agent draws on the same terminal
//! (issue 33): never a line in the middle of the agent's screen. While an agent process
//! runs, each sentence goes into the terminal's title (OSC 0, "mimesis: …"), written
//! between two pieces of the agent's output, never inside one of its escape sequences or
//! characters. A sentence said while no agent process runs (it exited, it is suspended,
//! the session is over) is also printed as a line of Mimesis's own.

use std::io::Write;

use crate::term::Term;

/// A title is cut to this many characters.
const TITLE_CHARS: usize = 160;

/// The OSC 0 sequence that sets the terminal's title to `mimesis: <msg>`, the sentence on
/// one line and filtered like any text Mimesis prints.
pub fn title(msg: &str) -> Vec<u8> {
    let one_line: String = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = one_line.chars().take(TITLE_CHARS).collect();
    if one_line.chars().count() > TITLE_CHARS {
        cut.push('…');
    }
    let mut out = b"\x1b]0;mimesis: ".to_vec();
    {
        let mut clean = Term::new(&mut out, false, TITLE_CHARS);
        let _ = clean.write_all(cut.as_bytes());
    }
    out.push(0x07);
    out
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Ground,
    Esc,
    Csi,
    Osc,
    OscEsc,
    /// DCS, SOS, PM, APC: a string up to ST.
    Str,
    StrEsc,
}

/// Follows a terminal byte stream far enough to tell whether it stands between escape
/// sequences and characters, where bytes of Mimesis's own may go in.
#[derive(Debug, Default)]
pub struct Boundary {
    state: State,
    /// Continuation bytes still to come of a UTF-8 character.
    utf8_left: u8,
}

impl Boundary {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// Between two sequences and two characters.
    pub fn clear(&self) -> bool {
        self.state == State::Ground && self.utf8_left == 0
    }

    fn byte(&mut self, b: u8) {
        const ESC: u8 = 0x1b;
        const BEL: u8 = 0x07;
        self.state = match self.state {
            State::Ground => {
                if b == ESC {
                    self.utf8_left = 0;
                    State::Esc
                } else {
                    self.utf8_left = match b {
                        0x80..=0xbf => self.utf8_left.saturating_sub(1),
                        0xc0..=0xdf => 1,
                        0xe0..=0xef => 2,
                        0xf0..=0xf7 => 3,
                        _ => 0,
                    };
                    State::Ground
                }
            }
            State::Esc => match b {
                b'[' => State::Csi,
                b']' => State::Osc,
                b'P' | b'X' | b'^' | b'_' => State::Str,
                // Intermediates (`ESC ( B`): the final byte is still to come.
                0x20..=0x2f => State::Esc,
                ESC => State::Esc,
                _ => State::Ground,
            },
            State::Csi => match b {
                0x40..=0x7e => State::Ground,
                ESC => State::Esc,
                _ => State::Csi,
            },
            State::Osc => match b {
                BEL => State::Ground,
                ESC => State::OscEsc,
                _ => State::Osc,
            },
            State::OscEsc => match b {
                b'\\' => State::Ground,
                _ => State::Osc,
            },
            State::Str => match b {
                ESC => State::StrEsc,
                BEL => State::Ground,
                _ => State::Str,
            },
            State::StrEsc => match b {
                b'\\' => State::Ground,
                _ => State::Str,
            },
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_filtered_line() {
        let t = title("Session will end\nin 5 minutes. \x1b]52;c;x\x07");
        assert_eq!(
            String::from_utf8(t).unwrap(),
            "\x1b]0;mimesis: Session will end in 5 minutes. \u{fffd}]52;c;x\u{fffd}\x07"
        );
        let long = title(&"a".repeat(500));
        assert!(String::from_utf8(long).unwrap().ends_with("aaa…\x07"));
    }

    #[test]
    fn only_between_sequences_and_characters() {
        let mut b = Boundary::default();
        assert!(b.clear());
        for (piece, clear) in [
            (&b"\x1b[38;2;1"[..], false),
            (b"5;3m", true),
            (b"\x1b]0;\xe2\x9c\xb3 Claude", false),
            (b" Code\x07", true),
            (b"\xe2\x94", false),
            (b"\x80", true),
            (b"\x1b(", false),
            (b"B", true),
            (b"\x1bP+q\x1b", false),
            (b"\\", true),
            (b"\x1b]8;;http://x\x1b\\link", true),
        ] {
            b.feed(piece);
            assert_eq!(b.clear(), clear, "after {piece:?}");
        }
    }
}
