//! The output monitor (P3): a terminal-screen model (`vt100`) of what the agent drew, and
//! the signals read from it. Each signal needs more than one anchor where the TUI gives
//! them (docs/claude-code-formats.md §6, claude-code-observed.md "The TUI in a PTY"):
//!
//! - permission dialog: a question (`Do you want to proceed?`, `…make this edit to…`,
//!   `…create…`; 2.1.330: `Exit plan mode?`, auto mode's `Auto mode can't check actions…`)
//!   *and* an answer row (`1. Yes`, `No, and tell Claude…`, `Esc to cancel`; 2.1.330: a
//!   bare `❯ No` / `Yes` pair with No preselected, `Enter to stay in auto mode`);
//! - working: a line with `esc to interrupt` (the spinner's hint);
//! - idle prompt: a `❯` input row right under a horizontal rule, or with the
//!   `? for shortcuts` footer, and no spinner or dialog;
//! - turn done: a new `✻ Baked for 3s` line (the working → prompt change is the main cue);
//! - crash: any configured pattern on a row that was not there before;
//! - resume refused: `No conversation found with session ID:`;
//! - harness dead: the TUI is gone and the last line is a bare shell prompt.
//!
//! Activity is sticky: a screen that says nothing definite (a crash dump, a redraw) keeps
//! the last definite activity. Edges fire when a matching row appears, not while it stays.
//! The monitor also answers the terminal queries a TUI sends at start-up (cursor position,
//! device attributes) for when no real terminal is attached to answer them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use regex::Regex;

use mimesis_core::supervision::policy::{Activity, ScreenSignal};

const QUESTIONS: &[&str] = &[
    "Do you want to proceed?",
    "Do you want to make this edit to",
    "Do you want to create",
    "Do you want to allow",
    "Would you like to proceed?",
    "Exit plan mode?",
    "Auto mode can't check actions",
];
const ANSWERS: &[&str] = &["1. Yes", "No, and tell Claude", "Esc to cancel", "Enter to stay in auto mode"];

/// 2.1.330's auto-mode approval answers with two bare rows, `❯ No` (preselected) and `Yes`.
fn bare_yes_no(rows: &[String]) -> bool {
    let bare = |r: &String, word: &str| r.trim().trim_start_matches('❯').trim() == word;
    rows.iter().any(|r| bare(r, "No")) && rows.iter().any(|r| bare(r, "Yes"))
}
const RESUME_REFUSED: &str = "No conversation found with session ID";

/// During a burst of output the screen is read at most this often (reading it costs far
/// more than parsing a chunk); the driver calls [`Monitor::flush`] when output pauses.
pub const READ_EVERY: Duration = Duration::from_millis(25);
/// Bytes of the previous chunk kept, so a crash line split across two reads still matches.
const CARRY: usize = 256;
/// Output waiting to be parsed is parsed once this much waits, even before the screen is
/// read (see [`Monitor::set_answering`]).
const LAZY_MAX: usize = 1024 * 1024;

/// Replies to terminal queries, collected while parsing.
#[derive(Default)]
struct Replies {
    pending: Vec<u8>,
}

impl vt100::Callbacks for Replies {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
        match (i1, c, first) {
            (None, 'n', 6) => {
                let (row, col) = screen.cursor_position();
                self.pending.extend(format!("\x1b[{};{}R", row + 1, col + 1).into_bytes());
            }
            (None, 'n', 5) => self.pending.extend(b"\x1b[0n"),
            (None, 'c', 0) => self.pending.extend(b"\x1b[?62;22c"),
            (Some(b'>'), 'c', 0) => self.pending.extend(b"\x1b[>1;10;0c"),
            _ => {}
        }
    }
}

fn compile(crash_patterns: &[String]) -> Vec<Regex> {
    crash_patterns
        .iter()
        .filter_map(|p| match Regex::new(p) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(pattern = %p, error = %e, "ignoring an invalid crash pattern");
                None
            }
        })
        .collect()
}

/// The patterns as regexes over bytes (the same syntax; one that compiles as text compiles
/// as bytes, and one that would not is skipped as `compile` skips an invalid one).
fn raw(crash: &[Regex]) -> Vec<regex::bytes::Regex> {
    crash.iter().filter_map(|r| regex::bytes::Regex::new(r.as_str()).ok()).collect()
}

/// The terminal model and the output not parsed into it yet.
struct Model {
    parser: vt100::Parser<Replies>,
    /// The last byte parsed ended a line (`\r\n`): the parser is at column 0, in its
    /// ground state.
    at_line_start: bool,
    /// Output fed and not parsed yet (parsed when the screen is read).
    pending: Vec<u8>,
}

/// The screen of one process and what was last read from it.
pub struct Monitor {
    model: RefCell<Model>,
    /// Terminal queries are answered from here (no terminal is attached to answer them):
    /// output is parsed as it comes. Otherwise it is parsed when the screen is read, at
    /// most every [`READ_EVERY`] during a burst, so a flood of plain lines is fast-forwarded
    /// in big pieces rather than parsed a read of the PTY (4 KB) at a time.
    answering: bool,
    crash: Vec<Regex>,
    /// The same patterns over the raw output (`crash_in_stream`): no UTF-8 check of every
    /// byte of a flood first.
    crash_raw: Vec<regex::bytes::Regex>,
    turn_done: Regex,
    shell_prompt: Regex,
    activity: Activity,
    /// Matching rows seen on the previous read, with their counts (edge detection).
    seen_crash: HashMap<String, usize>,
    seen_done: HashMap<String, usize>,
    seen_refused: bool,
    seen_shell: bool,
    /// When the screen was last read, and whether output arrived since.
    last_read: Option<Instant>,
    dirty: bool,
    carry: Vec<u8>,
}

impl Monitor {
    /// `crash_patterns` must be valid (see `Limits::validate`); an invalid one is skipped.
    pub fn new(rows: u16, cols: u16, crash_patterns: &[String]) -> Monitor {
        let crash = compile(crash_patterns);
        let crash_raw = raw(&crash);
        Monitor {
            model: RefCell::new(Model {
                parser: vt100::Parser::new_with_callbacks(nz(rows), nz(cols), 0, Replies::default()),
                at_line_start: false,
                pending: Vec::new(),
            }),
            answering: true,
            crash,
            crash_raw,
            turn_done: Regex::new(r"^\s*\S\s+[A-Z][a-z]+ for (\d+h\s*)?(\d+m\s*)?\d+(\.\d+)?s\b").expect("valid"),
            shell_prompt: Regex::new(r"^(\S*[@:]\S*|bash-[\d.]+|sh-[\d.]+)?[~\w./-]*\s?[$#%]\s?$").expect("valid"),
            activity: Activity::Unknown,
            seen_crash: HashMap::new(),
            seen_done: HashMap::new(),
            seen_refused: false,
            seen_shell: false,
            last_read: None,
            dirty: false,
            carry: Vec::new(),
        }
    }

    /// New crash patterns (the settings changed), for what is read from now on. The
    /// screen and what was already seen on it are kept.
    pub fn set_crash_patterns(&mut self, crash_patterns: &[String]) {
        self.crash = compile(crash_patterns);
        self.crash_raw = raw(&self.crash);
    }

    pub fn resize(&mut self, rows: u16, cols: u16) {
        // What came before was drawn at the old size.
        self.catch_up();
        self.model.get_mut().parser.set_size(nz(rows), nz(cols));
    }

    /// Whether terminal queries are answered from here ([`Monitor::take_replies`]): true
    /// (the default) while no terminal is attached to answer them. While false, output is
    /// parsed only when the screen is read, and the queries in it are not answered.
    pub fn set_answering(&mut self, answering: bool) {
        if answering && !self.answering {
            // The output so far came while a terminal answered its queries.
            self.catch_up();
        }
        self.answering = answering;
    }

    /// Parses the output fed so far.
    fn catch_up(&self) {
        let mut model = self.model.borrow_mut();
        if model.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut model.pending);
        model.parse(&pending);
        if !self.answering {
            model.parser.callbacks_mut().pending.clear();
        }
        // Its room is kept for the next output.
        model.pending = pending;
        model.pending.clear();
    }

    /// The last definite activity.
    pub fn activity(&self) -> Activity {
        self.activity
    }

    /// Answers to terminal queries the agent sent since the last call.
    pub fn take_replies(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.model.get_mut().parser.callbacks_mut().pending)
    }

    /// The visible rows, trailing blanks removed.
    pub fn rows(&self) -> Vec<String> {
        self.catch_up();
        let model = self.model.borrow();
        let screen = model.parser.screen();
        let (_, cols) = screen.size();
        screen.rows(0, cols.get()).map(|r| r.trim_end().to_owned()).collect()
    }

    /// The last non-empty line (for error messages).
    pub fn last_line(&self) -> Option<String> {
        self.rows().into_iter().rev().find(|r| !r.trim().is_empty()).map(|r| r.trim().to_owned())
    }

    /// Feeds output and returns what changed. Within [`READ_EVERY`] of the last read the
    /// screen is only parsed, unless the output itself holds a crash pattern (which might
    /// scroll off before the next read).
    pub fn feed(&mut self, bytes: &[u8], now: Instant) -> Vec<ScreenSignal> {
        let model = self.model.get_mut();
        if self.answering && model.pending.is_empty() {
            model.parse(bytes);
        } else {
            model.pending.extend_from_slice(bytes);
            if self.answering || model.pending.len() >= LAZY_MAX {
                self.catch_up();
            }
        }
        let raw_crash = self.crash_in_stream(bytes);
        if !raw_crash && self.last_read.is_some_and(|t| now.duration_since(t) < READ_EVERY) {
            self.dirty = true;
            return Vec::new();
        }
        self.read_at(now, raw_crash)
    }

    /// Output arrived since the screen was last read.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// Reads the screen if output arrived since the last read.
    pub fn flush(&mut self, now: Instant) -> Vec<ScreenSignal> {
        if self.dirty { self.read_at(now, false) } else { Vec::new() }
    }

    /// A crash pattern in the bytes themselves (with the end of the previous chunk).
    fn crash_in_stream(&mut self, bytes: &[u8]) -> bool {
        if self.crash_raw.is_empty() {
            return false;
        }
        let carried = self.carry.len();
        self.carry.extend_from_slice(bytes);
        // Only matches that end in the new bytes are new.
        let hit = self.crash_raw.iter().any(|p| p.find_iter(&self.carry).any(|m| m.end() > carried));
        let keep = self.carry.len().saturating_sub(CARRY);
        self.carry.drain(..keep);
        hit
    }

    fn read_at(&mut self, now: Instant, raw_crash: bool) -> Vec<ScreenSignal> {
        self.last_read = Some(now);
        self.dirty = false;
        let mut out = self.read();
        if raw_crash && !out.contains(&ScreenSignal::Crash) {
            // Printed and scrolled away within one read: the stream saw it.
            out.push(ScreenSignal::Crash);
        }
        out
    }

    fn read(&mut self) -> Vec<ScreenSignal> {
        let rows = self.rows();
        let mut out = Vec::new();

        let question = rows.iter().any(|r| QUESTIONS.iter().any(|q| r.contains(q)));
        let answer = rows.iter().any(|r| ANSWERS.iter().any(|a| r.contains(a))) || bare_yes_no(&rows);
        let spinner = rows.iter().any(|r| r.to_ascii_lowercase().contains("esc to interrupt"));
        let prompt = (1..rows.len())
            .any(|i| rows[i].trim_start().starts_with('❯') && rows[i - 1].trim_start().starts_with('─'))
            || (rows.iter().any(|r| r.trim_start().starts_with('❯'))
                && rows.iter().any(|r| r.contains("? for shortcuts")));
        let activity = if question && answer {
            Activity::Permission
        } else if spinner {
            Activity::Working
        } else if prompt {
            Activity::Idle
        } else {
            Activity::Unknown
        };
        if activity != Activity::Unknown && activity != self.activity {
            self.activity = activity;
            out.push(ScreenSignal::Activity(activity));
        }

        let crash = count_matching(&rows, |r| self.crash.iter().any(|p| p.is_match(r)));
        if appeared(&crash, &self.seen_crash) {
            out.push(ScreenSignal::Crash);
        }
        self.seen_crash = crash;

        let done = count_matching(&rows, |r| self.turn_done.is_match(r));
        if appeared(&done, &self.seen_done) {
            out.push(ScreenSignal::TurnDone);
        }
        self.seen_done = done;

        let refused = rows.iter().any(|r| r.contains(RESUME_REFUSED));
        if refused && !self.seen_refused {
            out.push(ScreenSignal::ResumeRejected);
        }
        self.seen_refused = refused;

        let tui = question || spinner || rows.iter().any(|r| r.trim_start().starts_with('❯'));
        let last = rows.iter().rev().find(|r| !r.trim().is_empty());
        let shell = !tui && last.is_some_and(|l| self.shell_prompt.is_match(l.trim_start()));
        if shell && !self.seen_shell {
            out.push(ScreenSignal::HarnessDead);
        }
        self.seen_shell = shell;
        out
    }
}

impl Model {
    /// Parses output. A flood of plain lines (a build log, `cat` of a big file) is
    /// fast-forwarded: only its last screenful can be visible afterwards, so the lines
    /// before it are skipped after scrolling the screen clear — the same screen, without
    /// drawing every line (the terminal model parses ~30 MB/s; floods come faster).
    fn parse(&mut self, bytes: &[u8]) {
        let rows = usize::from(self.parser.screen().size().0.get());
        // Finish the line in progress normally; the rest starts at column 0.
        let (head, rest) = if self.at_line_start {
            (&bytes[..0], bytes)
        } else {
            match memchr::memchr(b'\n', bytes) {
                Some(i) => bytes.split_at(i + 1),
                None => (bytes, &bytes[bytes.len()..]),
            }
        };
        self.parser.process(head);
        let at_column_0 = self.at_line_start || head.ends_with(b"\r\n");
        match plain_tail(rest, rows).filter(|_| at_column_0) {
            Some(start) => {
                self.parser.process("\r\n".repeat(rows).as_bytes());
                self.parser.process(&rest[start..]);
            }
            None => self.parser.process(rest),
        }
        if !bytes.is_empty() {
            self.at_line_start = bytes.ends_with(b"\r\n");
        }
    }
}

/// Where the last `rows` lines of `bytes` start, if it is plain text (printable bytes,
/// tabs, `\r\n` line ends and nothing else) with more lines than that; else None. (Every
/// byte of a flood is looked at here, so eight at a time, and the line ends through
/// `memchr`'s vector code: the app is built for size, and at that level the compiler
/// vectorises no loop, so a byte-at-a-time count was the screen reader's largest cost.)
fn plain_tail(bytes: &[u8], rows: usize) -> Option<usize> {
    if other_controls(bytes) {
        return None;
    }
    let mut feeds = 0;
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i == 0 || bytes[i - 1] != b'\r' {
            return None; // a bare line feed keeps its column: not plain
        }
        feeds += 1;
    }
    // Each line feed has its own carriage return before it: as many of each means no other
    // carriage return.
    if memchr::memchr_iter(b'\r', bytes).count() != feeds {
        return None;
    }
    memchr::memrchr_iter(b'\n', bytes).nth(rows).map(|i| i + 1)
}

/// Whether `bytes` holds a control byte other than tab, CR and LF (C0 or DEL).
fn other_controls(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let other = |b: &u8| (*b < 0x20 && !matches!(b, b'\t' | b'\r' | b'\n')) || *b == 0x7f;
    let (words, rest) = bytes.as_chunks::<8>();
    for word in words {
        let w = u64::from_ne_bytes(*word);
        // Some byte below 0x20, or some byte equal to 0x7f (exact "any" tests, no misses);
        // then which bytes, one at a time (a line end in the word, mostly).
        let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let del = w ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del & HIGH;
        if (below | del) != 0 && word.iter().any(other) {
            return true;
        }
    }
    rest.iter().any(other)
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

fn count_matching(rows: &[String], pred: impl Fn(&str) -> bool) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in rows.iter().filter(|r| pred(r)) {
        *m.entry(r.trim().to_owned()).or_insert(0) += 1;
    }
    m
}

/// A matching row that was not there before (or more copies of one).
fn appeared(now: &HashMap<String, usize>, before: &HashMap<String, usize>) -> bool {
    now.iter().any(|(k, n)| before.get(k).is_none_or(|b| n > b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds with the read throttle out of the way.
    trait FeedNow {
        fn feed_now(&mut self, bytes: &[u8]) -> Vec<ScreenSignal>;
    }

    impl FeedNow for Monitor {
        fn feed_now(&mut self, bytes: &[u8]) -> Vec<ScreenSignal> {
            let t = self.last_read.map_or_else(Instant::now, |t| t + READ_EVERY);
            self.feed(bytes, t)
        }
    }

    #[test]
    fn fast_forwarding_a_flood_of_lines_gives_the_same_screen() {
        let mut seed = 7u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..20 {
            let mut fast = Monitor::new(12, 30, &[]);
            let mut full = vt100::Parser::new(nz(12), nz(30), 0);
            let mut stream = Vec::new();
            for _ in 0..(20 + rand(200)) {
                let len = rand(70) as usize;
                let line: String = (0..len)
                    .map(|i| {
                        if i % 17 == 3 {
                            'é'
                        } else if i % 11 == 5 {
                            '\t'
                        } else {
                            (b'a' + (i % 26) as u8) as char
                        }
                    })
                    .collect();
                stream.extend_from_slice(line.as_bytes());
                stream.extend_from_slice(b"\r\n");
            }
            stream.extend_from_slice(b"partial line");
            // Some escape sequences first, so the fast path starts mid-stream.
            let prefix = b"\x1b[2J\x1b[Hheader\x1b[5;5Hmid\r\n";
            let (a, b) =
                (rand(stream.len() as u64 / 2) as usize, stream.len() / 2 + rand(stream.len() as u64 / 2) as usize);
            for part in [&prefix[..], &stream[..a], &stream[a..b], &stream[b..]] {
                fast.model.get_mut().parse(part);
                full.process(part);
            }
            let want: Vec<String> = full.screen().rows(0, 30).collect();
            let fast = fast.model.get_mut();
            let got: Vec<String> = fast.parser.screen().rows(0, 30).collect();
            assert_eq!(got, want, "round {round}");
            assert_eq!(fast.parser.screen().cursor_position(), full.screen().cursor_position());
        }
        assert_eq!(plain_tail(b"a\r\nb\r\nc\r\nd", 2), Some(3));
        assert_eq!(plain_tail(b"a\nb\r\nc\r\nd\r\n", 1), None, "bare line feed");
        assert_eq!(plain_tail(b"a\r\n\x1b[Hb\r\nc\r\n", 1), None, "an escape sequence");
        assert_eq!(plain_tail(b"a\r\nb\r\n", 5), None, "fewer lines than the screen");
        assert_eq!(plain_tail(b"a\r\rb\r\nc\r\nd\r\n", 1), None, "a carriage return of its own");
        assert_eq!(plain_tail(b"a\r\nb\r\nc\r\nd\r", 1), None, "a carriage return at the end");
        assert_eq!(plain_tail(b"\na\r\nb\r\n", 1), None, "a line feed first");
        assert_eq!(plain_tail(b"a\tb\r\n\xc3\xa9\r\nc\r\n", 1), Some(9), "tabs and UTF-8 are plain");
    }

    /// `plain_tail` as it was, a byte at a time.
    fn plain_tail_bytewise(bytes: &[u8], rows: usize) -> Option<usize> {
        let mut newlines = 0;
        let mut start = None;
        for i in (0..bytes.len()).rev() {
            match bytes[i] {
                b'\n' => {
                    if i == 0 || bytes[i - 1] != b'\r' {
                        return None;
                    }
                    newlines += 1;
                    if newlines == rows + 1 && start.is_none() {
                        start = Some(i + 1);
                    }
                }
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {}
                b'\r' => return None,
                b'\t' => {}
                b if b < 0x20 || b == 0x7f => return None,
                _ => {}
            }
        }
        start
    }

    #[test]
    fn every_byte_anywhere_in_a_word_is_told_apart() {
        for b in 0..=255u8 {
            let other = (b < 0x20 && !matches!(b, b'\t' | b'\r' | b'\n')) || b == 0x7f;
            for at in 0..19 {
                // Neighbours that could hide a byte from a word-at-a-time test: borrows
                // from the bytes around it.
                for fill in [b'a', 0x20, 0x21, 0x7e, 0x80, 0xff, b'\n'] {
                    let mut bytes = vec![fill; 19];
                    bytes[at] = b;
                    assert_eq!(super::other_controls(&bytes), other, "byte {b:#x} at {at} among {fill:#x}");
                }
            }
        }
    }

    #[test]
    fn plain_tail_says_what_a_byte_at_a_time_said() {
        let alphabet: &[&[u8]] = &[
            b"x",
            b"yz",
            b"\r\n",
            b"\r\n",
            b"\r\n",
            b"\t",
            b"\r",
            b"\n",
            b"\x1b[1m",
            b"\x7f",
            b"\xc3\xa9",
            b"\x00",
            b"\x1f",
            b" ",
            b"\x7e",
            b"\x80",
            b"\xff",
        ];
        let mut seed = 11u64;
        let mut plain = 0;
        for case in 0..20_000 {
            let mut bytes = Vec::new();
            let len = case % 60;
            for _ in 0..len {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Mostly text and line ends, so that many cases are plain.
                let pick = (seed >> 33) as usize % if case % 3 == 0 { alphabet.len() } else { 5 };
                bytes.extend_from_slice(alphabet[pick]);
            }
            let rows = case % 7;
            let want = plain_tail_bytewise(&bytes, rows);
            plain += usize::from(want.is_some());
            assert_eq!(plain_tail(&bytes, rows), want, "{:?} rows {rows}", String::from_utf8_lossy(&bytes));
        }
        assert!(plain > 1_000, "plain cases were tried: {plain}");
    }

    #[test]
    fn a_burst_is_read_at_most_every_25_ms_and_flushed_after() {
        let mut m = mon();
        let t0 = Instant::now();
        assert_eq!(m.feed(PROMPT.as_bytes(), t0), [ScreenSignal::Activity(Activity::Idle)]);
        let working = "\x1b[2J\x1b[H✻ Working (esc to interrupt)\r\n";
        assert!(m.feed(working.as_bytes(), t0 + Duration::from_millis(5)).is_empty());
        assert!(m.dirty());
        assert_eq!(m.flush(t0 + Duration::from_millis(30)), [ScreenSignal::Activity(Activity::Working)]);
        assert!(!m.dirty());
        // A crash line that scrolls off within the same burst is still caught.
        let mut dump = String::from("RangeError: Maximum call stack size exceeded\r\n");
        for i in 0..60 {
            dump.push_str(&format!("line {i}\r\n"));
        }
        assert_eq!(m.feed(dump.as_bytes(), t0 + Duration::from_millis(31)), [ScreenSignal::Crash]);
        // Split across two reads.
        assert!(m.feed(b"RangeError: Maximum call st", t0 + Duration::from_millis(32)).is_empty());
        assert_eq!(m.feed(b"ack size exceeded\r\n", t0 + Duration::from_millis(33)), [ScreenSignal::Crash]);
    }

    #[test]
    fn bytes_that_are_not_utf8_move_no_crash_line_into_the_next_read() {
        // (Matched over the text with them replaced, a line before them seemed to end in the
        // next read's bytes, and crashed again.)
        let mut m = mon();
        let t0 = Instant::now();
        let step = |i: u64| t0 + READ_EVERY * 2 * u32::try_from(i).unwrap();
        assert_eq!(
            m.feed(b"\xff\xfe\xfd\xfcRangeError: Maximum call stack size exceeded\r\n", step(1)),
            [ScreenSignal::Crash]
        );
        assert!(!m.feed(b"ok\r\n", step(2)).contains(&ScreenSignal::Crash));
        assert!(!m.feed(b"\xff more\r\n", step(3)).contains(&ScreenSignal::Crash));
    }

    fn mon() -> Monitor {
        Monitor::new(40, 120, &[mimesis_core::supervision::limits::DEFAULT_CRASH_PATTERN.to_owned()])
    }

    const PROMPT: &str =
        "\x1b[2J\x1b[H╭───╮\r\n│ Welcome │\r\n\r\n────────────────\r\n❯ \r\n────────────────\r\n  ? for shortcuts\r\n";

    #[test]
    fn reads_the_idle_prompt_the_spinner_and_the_dialog() {
        let mut m = mon();
        assert_eq!(m.feed_now(PROMPT.as_bytes()), [ScreenSignal::Activity(Activity::Idle)]);
        assert!(m.feed_now(b"").is_empty(), "no change, no signal");
        let working = "\x1b[2J\x1b[H> fix it\r\n\r\n\x1b[38;5;174m✻\x1b[0m Thinking… (3s · esc to interrupt)\r\n";
        assert_eq!(m.feed_now(working.as_bytes()), [ScreenSignal::Activity(Activity::Working)]);
        let dialog = "\x1b[2J\x1b[H Bash command\r\n   echo hi > out.txt\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. Yes, and always allow\r\n   3. No\r\n";
        assert_eq!(m.feed_now(dialog.as_bytes()), [ScreenSignal::Activity(Activity::Permission)]);
        let done = "\x1b[2J\x1b[H⏺ Done.\r\n\r\n✻ Baked for 0s\r\n\r\n────────────────\r\n❯ \r\n────────────────\r\n";
        assert_eq!(m.feed_now(done.as_bytes()), [ScreenSignal::Activity(Activity::Idle), ScreenSignal::TurnDone]);
    }

    #[test]
    fn reads_the_dialogs_of_2_1_330() {
        let screens = [
            // Default mode: four numbered answers.
            "\x1b[2J\x1b[H Bash command\r\n   echo hi\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. Yes, and always allow access to this command\r\n   3. Yes, and switch to auto mode\r\n   4. No\r\n",
            // Auto mode through a gateway: its own dialog first…
            "\x1b[2J\x1b[H Auto mode can't check actions in this session\r\n Your API endpoint is not Anthropic's.\r\n Enter to stay in auto mode · shift+Tab to leave\r\n",
            // …then, per call, No preselected.
            "\x1b[2J\x1b[H Bash command\r\n   echo hi\r\n Auto mode can't check this action, so this one needs your approval\r\n Do you want to proceed?\r\n ❯ No\r\n   Yes\r\n",
            // Plan mode.
            "\x1b[2J\x1b[H Here is the plan: 1. read 2. fix\r\n Exit plan mode?\r\n ❯ 1. Yes, and switch to default\r\n   2. No\r\n",
        ];
        for screen in screens {
            let mut m = mon();
            m.feed_now(PROMPT.as_bytes());
            assert_eq!(m.feed_now(screen.as_bytes()), [ScreenSignal::Activity(Activity::Permission)], "{screen}");
        }
        // A reply that merely says yes or no, with the prompt below, is no dialog.
        let mut m = mon();
        m.feed_now(PROMPT.as_bytes());
        assert!(m.feed_now("⏺ No\r\n⏺ Yes\r\n".as_bytes()).is_empty());
    }

    #[test]
    fn one_anchor_alone_is_not_a_dialog() {
        let mut m = mon();
        m.feed_now(PROMPT.as_bytes());
        // The assistant quoting the question in its answer, with the prompt below.
        let quote = "⏺ The CLI asks \"Do you want to proceed?\" before Bash runs.\r\n";
        assert!(m.feed_now(quote.as_bytes()).is_empty());
        assert_eq!(m.activity(), Activity::Idle);
    }

    #[test]
    fn a_crash_dump_is_an_edge_and_activity_is_sticky() {
        let mut m = mon();
        m.feed_now(b"\x1b[2J\x1b[H\xe2\x9c\xbb Working (esc to interrupt)\r\n");
        let dump = "\x1b[2J\x1b[Hfunction(A,B){return A.x(B)}...\r\nException in PromiseRejectCallback:\r\nRangeError: Maximum call stack size exceeded\r\n";
        assert_eq!(m.feed_now(dump.as_bytes()), [ScreenSignal::Crash]);
        assert_eq!(m.activity(), Activity::Working, "a dump says nothing about activity");
        assert!(m.feed_now(b"more output\r\n").is_empty(), "the same dump still on screen is no new crash");
        m.feed_now(b"\x1b[2J\x1b[H");
        assert_eq!(m.feed_now(dump.as_bytes()), [ScreenSignal::Crash], "a second dump is");
    }

    #[test]
    fn configured_patterns_replace_the_default() {
        let mut m = Monitor::new(24, 80, &["FATAL ERROR: .* heap out of memory".to_owned()]);
        assert!(m.feed_now(b"RangeError: Maximum call stack size exceeded\r\n").is_empty());
        assert_eq!(m.feed_now(b"FATAL ERROR: Reached heap limit heap out of memory\r\n"), [ScreenSignal::Crash]);
    }

    #[test]
    fn resume_refusal_and_a_bare_shell() {
        let mut m = mon();
        assert_eq!(m.feed_now(b"No conversation found with session ID: 3f1c\r\n"), [ScreenSignal::ResumeRejected]);
        let mut m = mon();
        m.feed_now(PROMPT.as_bytes());
        assert!(m.feed_now(b"\x1b[2J\x1b[Hsome output\r\n").is_empty());
        assert_eq!(m.feed_now(b"me@host:~/proj$ "), [ScreenSignal::HarnessDead]);
        assert!(m.feed_now(b"").is_empty());
    }

    #[test]
    fn answers_cursor_position_queries() {
        let mut m = mon();
        m.feed_now(b"ab\x1b[6n");
        assert_eq!(m.take_replies(), b"\x1b[1;3R");
        assert!(m.take_replies().is_empty());
    }

    #[test]
    fn with_a_terminal_attached_output_is_parsed_when_the_screen_is_read() {
        let mut m = mon();
        m.set_answering(false);
        let t0 = Instant::now();
        assert_eq!(m.feed(PROMPT.as_bytes(), t0), [ScreenSignal::Activity(Activity::Idle)]);
        // A flood in reads of a PTY, within one read of the screen: kept, not parsed yet.
        let line = format!("{}\r\n", "x".repeat(99));
        for i in 0..200 {
            let chunk = if i == 100 { "\x1b[6n".to_owned() } else { line.repeat(40) };
            assert!(m.feed(chunk.as_bytes(), t0 + Duration::from_millis(1)).is_empty());
        }
        assert!(m.model.get_mut().pending.len() > 100 * 4000, "parsed only when read");
        assert!(m.take_replies().is_empty(), "the attached terminal answers the query");
        // Then a dialog: the screen read after the burst shows it, as if parsed byte by byte.
        let dialog = "Do you want to proceed?\r\n❯ 1. Yes\r\n  2. No\r\n";
        assert!(m.feed(dialog.as_bytes(), t0 + Duration::from_millis(2)).is_empty());
        assert_eq!(m.flush(t0 + Duration::from_millis(30)), [ScreenSignal::Activity(Activity::Permission)]);
        assert!(m.model.get_mut().pending.is_empty());
        assert_eq!(m.rows().iter().rev().find(|r| !r.is_empty()).map(String::as_str), Some("  2. No"));
        assert!(m.take_replies().is_empty(), "nor is it answered later");
        // The terminal detached: queries are answered again, at once.
        m.feed(b"x".repeat(10).as_slice(), t0 + Duration::from_millis(31));
        m.set_answering(true);
        m.feed(b"\x1b[6n", t0 + Duration::from_millis(32));
        assert_eq!(m.take_replies(), b"\x1b[40;11R");
    }
}
