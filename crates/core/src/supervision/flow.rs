//! Flow control of terminal output to a slow reader (the webview's xterm.js), sans IO.
//!
//! The desktop shell forwards a supervised session's output to the page and the page acks
//! what its terminal has parsed. This decides, from bytes sent and acked alone, whether live
//! output may go now, must be held back, or whether the terminal is due a resync (reset plus
//! the session's scrollback), so a flood never piles up in the page.

/// What clears an xterm before the scrollback is sent again after the output fell behind.
/// Safe wherever the previous bytes stopped: ESC ends any escape sequence or string in
/// progress in xterm's parser (VT500 table), and a UTF-8 character cut short is dropped
/// by its decoder when a byte that cannot continue it comes.
pub const RESET: &[u8] = b"\x1bc";
/// Flow control (see [`Flow`]): at most this much sent and not yet parsed by the page's
/// xterm. It bounds what a keystroke's echo waits behind, and what crosses to the page only
/// to be scrolled away unseen (4 MB before: a 64 MB flood cost the web process ~13 % more
/// CPU and the app ~10 % more, at the same MB/s).
pub const HIGH_WATER: u64 = 1024 * 1024;
/// When the page has caught up to this, a paused forwarder resyncs.
pub const LOW_WATER: u64 = 256 * 1024;

/// Lines the page's terminal keeps: its scrollback (`scrollback` in the UI's
/// `TerminalPane.svelte`) and a screen of at most 500 rows.
pub const TERMINAL_LINES: usize = 3_000 + 500;

/// The most a resync sends after its [`RESET`]: so a resync at the low-water mark never
/// takes the page over the high one.
pub const RESYNC_MAX: usize = (HIGH_WATER - LOW_WATER) as usize - RESET.len();
const _: () = assert!(RESET.len() as u64 + RESYNC_MAX as u64 + LOW_WATER <= HIGH_WATER);

/// The end of `scrollback` that the page's terminal can still show: from the start of the
/// last [`TERMINAL_LINES`] lines (all of it when it has fewer), and at most [`RESYNC_MAX`]
/// bytes (from the first line that starts in them). The rest would be parsed and scrolled
/// out of the terminal unseen — with 100-column lines, most of a 2 MB scrollback. (A line
/// that wraps takes more rows, so this is never less than fits, unless lines average more
/// than `RESYNC_MAX / TERMINAL_LINES` bytes.)
pub fn visible_tail(scrollback: &[u8]) -> &[u8] {
    let floor = scrollback.len().saturating_sub(RESYNC_MAX);
    let window = &scrollback[floor..];
    let mut lines = 0;
    for (i, b) in window.iter().enumerate().rev() {
        if *b == b'\n' {
            lines += 1;
            if lines > TERMINAL_LINES {
                return &window[i + 1..];
            }
        }
    }
    if floor == 0 {
        return scrollback;
    }
    // Cut by size: from a line's start, so no escape sequence is cut in two.
    window.iter().position(|b| *b == b'\n').map_or(window, |i| &window[i + 1..])
}

/// Flow control of one attachment, sans IO: the bytes sent on its channel and those the
/// page's xterm has parsed (its acks). While more than [`HIGH_WATER`] would be in flight,
/// live output is not sent (it stays in the session's scrollback; the xterm would have
/// scrolled most of it away unseen); once the page is down to [`LOW_WATER`], the terminal
/// is reset and gets the scrollback as it is then, and live output goes on from there.
/// So a flood never piles up in the page, and the terminal shows the latest output.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Flow {
    sent: u64,
    acked: u64,
    paused: bool,
}

impl Flow {
    /// Sent and not yet parsed.
    pub fn in_flight(&self) -> u64 {
        self.sent - self.acked
    }

    /// Live output of `len` bytes is ready: true if it may be sent now (and is counted as
    /// sent); false if it is held back (dropped here; paused until a resync, which
    /// [`Flow::hold`] says may be due at once).
    pub fn offer(&mut self, len: usize) -> bool {
        if !self.paused && self.in_flight() + len as u64 <= HIGH_WATER {
            self.sent += len as u64;
            return true;
        }
        self.paused = true;
        false
    }

    /// Output was lost on the way (the stream lagged) or held back ([`Flow::offer`]):
    /// paused until a resync, which is due now (true) if the page has room for it. (Then no
    /// ack may come to say so: a page that has parsed all it got sends none.)
    pub fn hold(&mut self) -> bool {
        self.paused = true;
        self.in_flight() <= LOW_WATER
    }

    /// The page has parsed `parsed` bytes in all. True when a resync is due now.
    pub fn ack(&mut self, parsed: u64) -> bool {
        // Never more than was sent (a confused page must not open the gate wide).
        self.acked = self.acked.max(parsed.min(self.sent));
        self.paused && self.in_flight() <= LOW_WATER
    }

    /// A resync (or the first scrollback) of `len` bytes was sent: live output goes on.
    pub fn resynced(&mut self, len: usize) {
        self.sent += len as u64;
        self.paused = false;
    }
}

impl Flow {
    /// Live output is held back until the next resync.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Bytes sent in all.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_resync_sends_only_the_lines_the_terminal_keeps() {
        let line = [b'x'; 99];
        let mut back = Vec::new();
        for _ in 0..(TERMINAL_LINES + 100) {
            back.extend_from_slice(&line);
            back.extend_from_slice(b"\r\n");
        }
        let tail = super::visible_tail(&back);
        assert_eq!(tail.len(), TERMINAL_LINES * 101, "from the start of a line, the last lines only");
        assert!(tail.starts_with(&line) && tail.ends_with(b"\r\n"));
        let short = b"partial line\r\nand the prompt";
        assert_eq!(super::visible_tail(short), short, "fewer lines: all of it");
        assert_eq!(super::visible_tail(b""), b"");
    }

    #[test]
    fn a_resync_fits_between_the_marks_however_long_the_lines() {
        let line = [b'x'; 999];
        let mut back = Vec::new();
        for _ in 0..2_000 {
            back.extend_from_slice(&line);
            back.extend_from_slice(b"\r\n");
        }
        let tail = super::visible_tail(&back);
        assert!(tail.len() <= RESYNC_MAX && tail.len() > RESYNC_MAX - 1001, "{}", tail.len());
        assert!(tail.starts_with(&line) && tail.ends_with(b"\r\n"), "from a line's start");
        let unbroken = vec![b'y'; 3 * RESYNC_MAX];
        assert_eq!(super::visible_tail(&unbroken).len(), RESYNC_MAX, "no line end: the last bytes");
    }

    use super::*;

    const MB: usize = 1024 * 1024;
    /// The desktop shell's biggest message.
    const MESSAGE_MAX: usize = 256 * 1024;

    #[test]
    fn output_flows_while_the_page_keeps_up() {
        let mut f = Flow::default();
        f.resynced(RESYNC_MAX); // the first scrollback
        for _ in 0..100 {
            assert!(!f.ack(f.sent() - 200_000));
            assert!(f.offer(MESSAGE_MAX));
        }
        assert!(!f.paused());
    }

    #[test]
    fn a_flood_pauses_at_the_high_water_mark_and_resyncs_once_at_the_low() {
        let mut f = Flow::default();
        let mut offered = 0;
        while f.offer(MESSAGE_MAX) {
            offered += 1;
        }
        assert_eq!(offered, HIGH_WATER as usize / MESSAGE_MAX);
        assert!(f.paused());
        assert_eq!(f.in_flight(), HIGH_WATER);
        // Small output is held too while paused (no interleaving with the coming resync).
        assert!(!f.offer(1));
        assert_eq!(f.in_flight(), HIGH_WATER);
        // Acks above the low-water mark: still paused.
        assert!(!f.ack(HIGH_WATER - LOW_WATER - 1));
        assert!(f.paused());
        // Caught up: one resync, then live output flows again.
        assert!(f.ack(HIGH_WATER - LOW_WATER));
        f.resynced(RESYNC_MAX + RESET.len());
        assert!(!f.paused());
        assert!(f.in_flight() <= HIGH_WATER, "a resync never takes the page over the mark");
        assert!(!f.ack(f.sent()), "no resync due while output flows");
        assert!(f.offer(10));
    }

    #[test]
    fn the_page_never_holds_more_than_the_high_water_mark() {
        // Any interleaving of offers, acks and resyncs (of at most the scrollback).
        let mut f = Flow::default();
        let mut parsed = 0u64;
        let mut seed = 7u64;
        for step in 0..100_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (seed >> 33) as usize;
            match r % 3 {
                0 | 1 if !f.paused() => {
                    f.offer(r % MESSAGE_MAX + 1);
                }
                _ => {
                    parsed = (parsed + (r % MB) as u64).min(f.sent());
                    if f.ack(parsed) {
                        f.resynced(r % RESYNC_MAX + RESET.len());
                    }
                }
            }
            assert!(f.in_flight() <= HIGH_WATER, "step {step}: {f:?}");
        }
    }

    #[test]
    fn acks_are_monotonic_and_capped_at_what_was_sent() {
        let mut f = Flow::default();
        assert!(f.offer(1000));
        f.ack(5000);
        assert_eq!(f.in_flight(), 0);
        f.ack(10);
        assert_eq!(f.in_flight(), 0, "an older ack does not count twice");
        assert!(f.offer(HIGH_WATER as usize));
        assert!(!f.offer(1));
        assert!(f.ack(u64::MAX));
    }

    #[test]
    fn output_bigger_than_the_mark_with_nothing_in_flight_resyncs_at_once() {
        // The PTY's output can come in one piece of more than the high-water mark.
        let mut f = Flow::default();
        assert!(f.offer(9));
        assert!(!f.ack(9));
        assert!(!f.offer(HIGH_WATER as usize + 1), "never fits");
        assert!(f.hold(), "the page has parsed everything: no ack will come, so resync now");
        f.resynced(RESYNC_MAX);
        assert!(!f.paused());
    }

    #[test]
    fn a_lagged_stream_resyncs_at_once_only_when_the_page_has_room() {
        let mut f = Flow::default();
        assert!(f.offer(100));
        assert!(f.hold(), "little in flight: resync now");
        f.resynced(RESYNC_MAX);
        assert!(f.offer(200_000));
        assert!(!f.hold(), "near the high-water mark: wait");
        assert!(!f.offer(1), "nothing live before the resync");
        assert!(f.ack(f.sent()));
    }
}
