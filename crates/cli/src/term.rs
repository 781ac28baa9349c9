//! Where text meets a terminal: every byte the CLI writes on stdout or stderr for a person
//! goes through a [`Term`], and every JSON document through [`json`]. Sessions, timelines,
//! hosts and their errors come from transcripts, hooks and other machines, all untrusted:
//! an escape sequence in any of their fields could write the clipboard (OSC 52), retitle
//! the window, clear the screen or make a line read backwards. Filtering here, on the way
//! out, rather than field by field, means a field cannot be forgotten.
//!
//! [`Term`] replaces every control character but newline and tab (C0, DEL, C1 such as
//! U+009B, the 8-bit CSI), every bidirectional control, the line and paragraph separators
//! and every byte that is not UTF-8 with U+FFFD. Colour and weight are ours alone: they go
//! out through [`Term::paint`], whose codes are `'static`, never through the text.
//! [`json`] writes JSON whose strings escape what serde_json leaves raw (DEL, C1, bidi
//! controls, U+2028/9): the same value, safe to print.
//!
//! `mimesis run` is the one exception: its terminal is the agent's, passed through as is.

use std::io::{self, IsTerminal, Write};

/// A text writer for a terminal (or a pipe, or a file: the same filter).
pub struct Term<W: Write> {
    out: W,
    color: bool,
    width: usize,
    /// The start of a UTF-8 sequence cut between two writes.
    held: Vec<u8>,
}

const REPLACEMENT: &str = "\u{fffd}";

/// Characters that never reach a terminal as they are.
fn unsafe_char(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidi_Control, and the separators some terminals take as line breaks.
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        '\u{2028}' | '\u{2029}' => true,
        _ => false,
    }
}

impl Term<io::BufWriter<io::StdoutLock<'static>>> {
    /// Standard output, coloured only for a person at a terminal who did not ask for
    /// `NO_COLOR`.
    pub fn stdout() -> Self {
        let tty = io::stdout().is_terminal();
        let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Term::new(io::BufWriter::new(io::stdout().lock()), color, terminal_width().unwrap_or(120).clamp(60, 240))
    }
}

impl Term<io::Stderr> {
    /// Standard error: plain (sentences and logs), never coloured.
    pub fn stderr() -> Self {
        Term::new(io::stderr(), false, 120)
    }
}

impl<W: Write> Term<W> {
    pub fn new(out: W, color: bool, width: usize) -> Self {
        Term { out, color, width, held: Vec::new() }
    }

    /// Columns to lay a table out in.
    pub fn width(&self) -> usize {
        self.width
    }

    /// `text` (filtered like any other) in a colour or weight, when colour is on. The code
    /// is an SGR parameter list of ours (`"1;33"`), never text from anywhere else.
    pub fn paint(&mut self, code: &'static str, text: &str) -> io::Result<()> {
        if !self.color {
            return self.write_all(text.as_bytes());
        }
        debug_assert!(code.bytes().all(|b| b.is_ascii_digit() || b == b';'));
        self.out.write_all(b"\x1b[")?;
        self.out.write_all(code.as_bytes())?;
        self.out.write_all(b"m")?;
        self.write_all(text.as_bytes())?;
        self.out.write_all(b"\x1b[0m")
    }

    /// Replaces the terminal's current line with `text` (filtered): a progress line. The
    /// carriage return and the erase are ours, like colour.
    pub fn rewrite_line(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(b"\r")?;
        self.write_all(text.as_bytes())?;
        self.out.write_all(b"\x1b[K")?;
        self.out.flush()
    }

    /// Erases the terminal's current line (a progress line that is done).
    pub fn clear_line(&mut self) -> io::Result<()> {
        self.out.write_all(b"\r\x1b[2K")?;
        self.out.flush()
    }

    pub fn dim(&mut self, text: &str) -> io::Result<()> {
        self.paint("2", text)
    }

    pub fn bold(&mut self, text: &str) -> io::Result<()> {
        self.paint("1", text)
    }

    /// Writes the valid UTF-8 `s`, its unsafe characters replaced.
    fn filtered(&mut self, s: &str) -> io::Result<()> {
        let mut clean_from = 0;
        for (i, c) in s.char_indices() {
            if unsafe_char(c) {
                self.out.write_all(&s.as_bytes()[clean_from..i])?;
                self.out.write_all(REPLACEMENT.as_bytes())?;
                clean_from = i + c.len_utf8();
            }
        }
        self.out.write_all(&s.as_bytes()[clean_from..])
    }

    fn filter_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            self.filtered(chunk.valid())?;
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            // A sequence cut at the end of this write waits for the rest.
            let cut = chunks.peek().is_none() && std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
            if cut {
                self.held.extend_from_slice(invalid);
            } else {
                self.out.write_all(REPLACEMENT.as_bytes())?;
            }
        }
        Ok(())
    }
}

impl<W: Write> Write for Term<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.held.is_empty() {
            self.filter_bytes(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.held);
            joined.extend_from_slice(buf);
            self.filter_bytes(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Drop for Term<W> {
    fn drop(&mut self) {
        if !self.held.is_empty() {
            let _ = self.out.write_all(REPLACEMENT.as_bytes());
        }
        let _ = self.out.flush();
    }
}

/// Standard output is a terminal (a person reads it).
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// Standard error is a terminal (progress lines are worth drawing).
pub fn stderr_is_terminal() -> bool {
    io::stderr().is_terminal()
}

/// A sentence on stderr, through the filter (`mimesis: <what happened>`).
pub fn say(line: std::fmt::Arguments<'_>) {
    let mut err = Term::stderr();
    let _ = writeln!(err, "{line}");
}

/// serde_json's compact form, with DEL, C1 controls, bidi controls and U+2028/9 inside
/// strings written as `\uXXXX` (serde_json escapes only C0, `"` and `\`).
struct TerminalSafe;

impl serde_json::ser::Formatter for TerminalSafe {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, out: &mut W, fragment: &str) -> io::Result<()> {
        let mut clean_from = 0;
        for (i, c) in fragment.char_indices() {
            if unsafe_char(c) {
                out.write_all(&fragment.as_bytes()[clean_from..i])?;
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}")?;
                }
                clean_from = i + c.len_utf8();
            }
        }
        out.write_all(&fragment.as_bytes()[clean_from..])
    }
}

/// `value` as one JSON document (no newline), safe to print on a terminal.
pub fn json(out: &mut impl Write, value: &(impl serde::Serialize + ?Sized)) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, TerminalSafe);
    value.serialize(&mut ser).map_err(io::Error::from)
}

/// [`json`], then a newline.
pub fn json_line(out: &mut impl Write, value: &(impl serde::Serialize + ?Sized)) -> io::Result<()> {
    json(out, value)?;
    out.write_all(b"\n")
}

fn terminal_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(c);
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct; a zeroed one is a valid value to pass.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What an attacker would put in any field: a clipboard write (OSC 52), a title change
    /// (OSC 0 and 2), a screen clear, the 8-bit CSI (U+009B), DEL, a carriage return and
    /// every bidi override.
    pub const HOSTILE: &str = "a\x1b]52;c;cm0gLXJmIH4=\x07b\x1b]0;pwned\x07c\x1b]2;pwned\x1b\\d\x1b[2J\u{9b}31me\x7f\r\
                               f\u{202e}g\u{2066}h\u{200f}i\u{2029}j";

    /// Output that no terminal can take as anything but text (our own SGR colours aside,
    /// when `sgr_allowed`).
    pub fn assert_terminal_safe(out: &[u8], sgr_allowed: bool) {
        let text = std::str::from_utf8(out).expect("UTF-8 out");
        let mut rest = text;
        if sgr_allowed {
            // Drop our own `ESC [ digits/; m`, then nothing else may remain.
            let mut kept = String::new();
            while let Some(i) = rest.find('\x1b') {
                kept.push_str(&rest[..i]);
                let after = &rest[i + 1..];
                let end = after.find('m').expect("an SGR ends with m");
                let params = after[..end].strip_prefix('[').expect("only CSI");
                assert!(params.bytes().all(|b| b.is_ascii_digit() || b == b';'), "not an SGR: {:?}", &after[..=end]);
                rest = &after[end + 1..];
            }
            kept.push_str(rest);
            return assert_terminal_safe(kept.as_bytes(), false);
        }
        for c in rest.chars() {
            assert!(!unsafe_char(c), "{c:?} reached the terminal in {text:?}");
        }
    }

    /// The one place: no other module of the CLI writes to stdout or stderr, or makes JSON
    /// for them, on its own (`mimesis run`'s agent terminal aside).
    #[test]
    fn every_output_of_the_cli_goes_through_here() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let forbidden = ["println!", "print!(", "io::stdout()", "io::stderr()", "serde_json::to_writer", "dbg!("];
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".rs") || name == "term.rs" {
                continue;
            }
            // `mimesis run` hands the agent's own screen to the terminal as it is; its own
            // words go through here like everyone else's.
            let forbidden: &[&str] = if name == "run.rs" { &["println!", "print!(", "dbg!("] } else { &forbidden };
            for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                let line = line.replace("tokio::io::stdout()", "");
                if forbidden.iter().any(|f| line.contains(f)) {
                    found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "output that bypasses crate::term:\n{}", found.join("\n"));
    }

    #[test]
    fn escapes_controls_and_bidi_never_pass() {
        let mut t = Term::new(Vec::new(), false, 80);
        write!(t, "{HOSTILE}").unwrap();
        let out = std::mem::take(&mut t.out);
        assert_terminal_safe(&out, false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\u{fffd}]52;c;cm0gLXJmIH4=\u{fffd}b\u{fffd}]0;pwned\u{fffd}c\u{fffd}]2;pwned\u{fffd}\\d\u{fffd}[2J\
             \u{fffd}31me\u{fffd}\u{fffd}f\u{fffd}g\u{fffd}h\u{fffd}i\u{fffd}j"
        );
    }

    #[test]
    fn text_newlines_tabs_and_every_script_pass_unchanged() {
        let mut t = Term::new(Vec::new(), false, 80);
        let s = "fix the parser\n\tnaïve façade 日本語 👨\u{200d}👩\u{200d}👧 →\n";
        t.write_all(s.as_bytes()).unwrap();
        assert_eq!(std::mem::take(&mut t.out), s.as_bytes());
    }

    #[test]
    fn raw_bytes_are_text_or_a_replacement_even_cut_between_writes() {
        let mut t = Term::new(Vec::new(), false, 80);
        // A lone 0x9b byte (CSI on an 8-bit terminal), then "é" and a C1 CSI cut in two.
        t.write_all(b"x\x9by").unwrap();
        t.write_all(&[0xc3]).unwrap();
        t.write_all(&[0xa9, 0xc2]).unwrap();
        t.write_all(&[0x9b, b'z']).unwrap();
        assert_eq!(String::from_utf8(std::mem::take(&mut t.out)).unwrap(), "x\u{fffd}yé\u{fffd}z");
        t.write_all(&[0xe2, 0x80]).unwrap();
        drop(t);
    }

    #[test]
    fn colour_is_ours_and_only_ours() {
        let mut t = Term::new(Vec::new(), true, 80);
        t.paint("1;33", HOSTILE).unwrap();
        write!(t, " {HOSTILE}").unwrap();
        let out = std::mem::take(&mut t.out);
        assert!(out.starts_with(b"\x1b[1;33ma"), "{:?}", String::from_utf8_lossy(&out));
        assert_terminal_safe(&out, true);
        let mut plain = Term::new(Vec::new(), false, 80);
        plain.paint("1;33", "x").unwrap();
        assert_eq!(plain.out, b"x");
    }

    /// The standing fuzz guard's terminal target (`MIMESIS_FUZZ_SECS`, default 3 s;
    /// `MIMESIS_FUZZ_SEED`): random bytes, written in random pieces, come out as UTF-8
    /// with nothing a terminal acts on; random strings come out as JSON with nothing raw
    /// that reads back as the same strings.
    #[test]
    fn nothing_written_through_here_reaches_a_terminal_raw() {
        let secs = std::env::var("MIMESIS_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0f64);
        let mut x: u64 = std::env::var("MIMESIS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x7e57_c0de);
        let mut next = move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let pieces: [&[u8]; 8] =
            [HOSTILE.as_bytes(), b"\x1b", b"\xc2\x9b", b"\x9b", "\u{202e}".as_bytes(), "é".as_bytes(), b"\n", b"\t"];
        let started = std::time::Instant::now();
        let mut runs = 0u64;
        while started.elapsed().as_secs_f64() < secs {
            let mut input = Vec::new();
            for _ in 0..next() % 16 {
                match next() % 3 {
                    0 => input.extend_from_slice(pieces[(next() % 8) as usize]),
                    _ => input.extend((0..next() % 8).map(|_| next() as u8)),
                }
            }
            let mut t = Term::new(Vec::new(), false, 80);
            let mut at = 0;
            while at < input.len() {
                let n = 1 + (next() as usize) % (input.len() - at);
                t.write_all(&input[at..at + n]).unwrap();
                at += n;
            }
            t.held.clear();
            assert_terminal_safe(&t.out, false);
            let text = String::from_utf8_lossy(&input).into_owned();
            let mut out = Vec::new();
            json(&mut out, &text).unwrap();
            assert_terminal_safe(&out, false);
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), text);
            runs += 1;
        }
        eprintln!("terminal: {runs} inputs in {:.1} s", started.elapsed().as_secs_f64());
        assert!(runs > 100, "the fuzz loop ran");
    }

    #[test]
    fn json_escapes_what_serde_leaves_raw_and_keeps_the_value() {
        let mut v = serde_json::json!({"model": HOSTILE});
        v[HOSTILE] = serde_json::json!([HOSTILE, "plain é 日本"]);
        let mut out = Vec::new();
        json(&mut out, &v).unwrap();
        assert_terminal_safe(&out, false);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("\\u007f"), "{text}");
        assert!(text.contains("plain é 日本"), "only what must be escaped is: {text}");
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&out).unwrap(), v, "the same value");
    }
}
