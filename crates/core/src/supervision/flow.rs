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
/// Live output sent since the last resync and not yet parsed: more than this, and the output
/// is a flood ([`Flow`]). (The page parsed a whole [`HIGH_WATER`] of it at a flood's start
/// before: about half of what it parsed of a 64 MB flood, its longest tasks.) One of the
/// desktop shell's largest messages (256 KB) still goes live.
pub const FLOOD_AT: u64 = 256 * 1024;

/// Lines the page's terminal keeps: its scrollback (`scrollback` in the UI's
/// `TerminalPane.svelte`) and a screen of at most 500 rows.
pub const TERMINAL_LINES: usize = 3_000 + 500;

/// The most a resync sends after its [`RESET`]: so a resync at the low-water mark never
/// takes the page over the high one.
pub const RESYNC_MAX: usize = (HIGH_WATER - LOW_WATER) as usize - RESET.len();
const _: () = assert!(RESET.len() as u64 + RESYNC_MAX as u64 + LOW_WATER <= HIGH_WATER);

/// While output keeps coming faster than the page parses it (a flood), a resync shows the
/// terminal's last screen: as many lines as it has rows (a line that wraps takes more), and
/// at most this many (see [`TERMINAL_LINES`]), not the scrollback.
pub const FLOOD_LINES: usize = 500;
/// …and at most this many bytes of them.
pub const FLOOD_MAX: usize = 64 * 1024;

/// The end of `scrollback` that the page's terminal can still show: from the start of the
/// last [`TERMINAL_LINES`] lines (all of it when it has fewer), and at most [`RESYNC_MAX`]
/// bytes (from the first line that starts in them). The rest would be parsed and scrolled
/// out of the terminal unseen — with 100-column lines, most of a 2 MB scrollback. (A line
/// that wraps takes more rows, so this is never less than fits, unless lines average more
/// than `RESYNC_MAX / TERMINAL_LINES` bytes.)
pub fn visible_tail(scrollback: &[u8]) -> &[u8] {
    last_lines(scrollback, TERMINAL_LINES, RESYNC_MAX)
}

/// What a resync of this kind sends of `scrollback` after its [`RESET`], to a terminal of
/// `rows` rows.
pub fn resync_tail(scrollback: &[u8], kind: Resync, rows: u16) -> &[u8] {
    match kind {
        Resync::Full => visible_tail(scrollback),
        Resync::Screen => last_lines(scrollback, usize::from(rows).clamp(1, FLOOD_LINES), FLOOD_MAX),
    }
}

/// How much of the end of a scrollback [`resync_tail`] of this kind looks at: given only
/// that much of it, it sends the same bytes (one more than its window, so that it sees
/// whether its window starts the scrollback). A resync copies no more than this.
pub fn resync_reach(kind: Resync) -> usize {
    match kind {
        Resync::Full => RESYNC_MAX + 1,
        Resync::Screen => FLOOD_MAX + 1,
    }
}

/// The start of the last `lines` lines of `scrollback` (all of it when it has fewer), at
/// most `max` bytes of them (from the first line that starts in them).
fn last_lines(scrollback: &[u8], lines: usize, max: usize) -> &[u8] {
    let floor = scrollback.len().saturating_sub(max);
    let window = &scrollback[floor..];
    let mut seen = 0;
    for (i, b) in window.iter().enumerate().rev() {
        if *b == b'\n' {
            seen += 1;
            if seen > lines {
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

/// What a resync shows after its [`RESET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// The lines the page's terminal keeps ([`visible_tail`]).
    Full,
    /// During a flood, the last screen's worth (its rows, at most [`FLOOD_LINES`]).
    Screen,
}

/// Flow control of one attachment, sans IO: the bytes sent on its channel and those the
/// page's xterm has parsed (its acks). While more than [`FLOOD_AT`] of live output (or
/// [`HIGH_WATER`] in all) would be in flight, live output is not sent (it stays in the
/// session's scrollback; the xterm would have scrolled most of it away unseen): the output
/// is a flood until it stops ([`Flow::settled`]). During a flood no live output goes, and
/// each time the page has parsed all it got, a resync shows it the last screen
/// ([`Resync::Screen`], at most [`FLOOD_MAX`] bytes) as it is then (the desktop shell sends
/// one at most every 100 ms). When the flood stops and the page is down to [`LOW_WATER`],
/// the terminal is reset and gets the scrollback as it is then ([`Resync::Full`]), and live
/// output goes on from there. So a flood never piles up in the page, the page parses a
/// screen at a time, and the terminal shows the latest output.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Flow {
    sent: u64,
    acked: u64,
    paused: bool,
    flooding: bool,
    /// `sent` as the last resync (or the first scrollback) left it: live output starts there.
    resync_end: u64,
}

impl Flow {
    /// Sent and not yet parsed.
    pub fn in_flight(&self) -> u64 {
        self.sent - self.acked
    }

    /// Live output sent and not yet parsed (what a resync sent is not counted).
    fn live_in_flight(&self) -> u64 {
        self.sent - self.acked.max(self.resync_end)
    }

    /// Live output of `len` bytes is ready: true if it may be sent now (and is counted as
    /// sent); false if it is held back (dropped here; paused until a resync, which
    /// [`Flow::hold`] says may be due at once): more than [`FLOOD_AT`] of live output or
    /// [`HIGH_WATER`] in all would be in flight.
    pub fn offer(&mut self, len: usize) -> bool {
        let len = len as u64;
        if !self.paused
            && !self.flooding
            && self.live_in_flight() + len <= FLOOD_AT
            && self.in_flight() + len <= HIGH_WATER
        {
            self.sent += len;
            return true;
        }
        self.paused = true;
        self.flooding = true;
        false
    }

    /// Output was lost on the way (the stream lagged) or held back ([`Flow::offer`]):
    /// paused until a resync, which is due now (true) if the page has room for it. (Then no
    /// ack may come to say so: a page that has parsed all it got sends none.)
    pub fn hold(&mut self) -> bool {
        self.paused = true;
        self.flooding = true;
        self.due()
    }

    /// The page has parsed `parsed` bytes in all. True when a resync is due now.
    pub fn ack(&mut self, parsed: u64) -> bool {
        // Never more than was sent (a confused page must not open the gate wide).
        self.acked = self.acked.max(parsed.min(self.sent));
        self.due()
    }

    /// Paused, and the page is down to the low-water mark (during a flood: has parsed all).
    fn due(&self) -> bool {
        self.paused && self.in_flight() <= if self.flooding { 0 } else { LOW_WATER }
    }

    /// What the next resync shows.
    pub fn resync(&self) -> Resync {
        if self.flooding { Resync::Screen } else { Resync::Full }
    }

    /// A resync (or the first scrollback) of `len` bytes was sent: live output goes on
    /// (during a flood, only as far as [`Flow::offer`], which holds it for the next resync).
    pub fn resynced(&mut self, len: usize) {
        self.sent += len as u64;
        self.resync_end = self.sent;
        self.paused = false;
    }

    /// No output has come for a while. If it was a flood, the page is due the full
    /// scrollback: paused for that resync, which is due now (true) if the page has room.
    pub fn settled(&mut self) -> bool {
        if !self.flooding {
            return false;
        }
        self.flooding = false;
        self.paused = true;
        self.due()
    }
}

impl Flow {
    /// Live output is held back until the next resync.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Output has fallen behind and not stopped since.
    pub fn flooding(&self) -> bool {
        self.flooding
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
        let back = [&line[..], b"\r\n"].concat().repeat(TERMINAL_LINES + 100);
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

    #[test]
    fn a_resync_given_only_its_reach_sends_what_it_sends_given_the_whole_scrollback() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for line_len in [0usize, 10, 99, 999, 70_000] {
            for total in
                [0usize, 5_000, FLOOD_MAX - 1, FLOOD_MAX, FLOOD_MAX + 1, FLOOD_MAX + 2, RESYNC_MAX + 1, 2 * 1024 * 1024]
            {
                let mut back = Vec::with_capacity(total);
                while back.len() < total {
                    back.extend(std::iter::repeat_n(b'z', line_len.min(total - back.len())));
                    if back.len() < total {
                        back.push(b'\n');
                    }
                }
                cases.push(back);
            }
        }
        for back in &cases {
            for kind in [Resync::Full, Resync::Screen] {
                for rows in [1u16, 24, 500, 1000] {
                    let reach = &back[back.len().saturating_sub(super::resync_reach(kind))..];
                    assert_eq!(
                        super::resync_tail(reach, kind, rows),
                        super::resync_tail(back, kind, rows),
                        "{kind:?}, {rows} rows, {} bytes",
                        back.len()
                    );
                }
            }
        }
    }

    use super::*;

    const MB: usize = 1024 * 1024;
    /// The desktop shell's biggest message.
    const MESSAGE_MAX: usize = 256 * 1024;

    #[test]
    fn output_flows_while_the_page_keeps_up() {
        let mut f = Flow::default();
        f.resynced(RESYNC_MAX); // the first scrollback, not yet parsed: not live output
        for _ in 0..100 {
            assert!(f.offer(MESSAGE_MAX / 2));
            assert!(!f.ack(f.sent() - MESSAGE_MAX as u64 / 2));
        }
        assert!(!f.paused() && !f.flooding());
        // A message as big as the shell sends still goes live with nothing else in flight.
        assert!(!f.ack(f.sent()));
        assert!(f.offer(MESSAGE_MAX));
    }

    #[test]
    fn a_flood_is_held_past_its_first_live_output_then_shown_a_screen_at_a_time_until_it_stops() {
        let mut f = Flow::default();
        let mut offered = 0;
        while f.offer(MESSAGE_MAX) {
            offered += 1;
        }
        assert_eq!(offered, FLOOD_AT as usize / MESSAGE_MAX);
        assert!(f.paused() && f.flooding());
        assert_eq!(f.in_flight(), FLOOD_AT);
        // Small output is held too while paused (no interleaving with the coming resync).
        assert!(!f.offer(1));
        assert_eq!(f.in_flight(), FLOOD_AT);
        // During the flood a resync waits until the page has parsed all it got.
        assert!(!f.ack(FLOOD_AT - 1));
        assert!(f.ack(FLOOD_AT));
        assert_eq!(f.resync(), Resync::Screen);
        f.resynced(FLOOD_MAX);
        // Live output is still held while the flood lasts, for the next screen.
        for round in 0..3 {
            assert!(!f.paused());
            assert!(!f.offer(10), "round {round}");
            assert!(!f.hold(), "a screen in flight: wait for its ack");
            assert!(f.ack(f.sent()));
            assert_eq!(f.resync(), Resync::Screen);
            f.resynced(FLOOD_MAX);
        }
        // The flood stops: the full scrollback, at once when the page has room.
        assert!(f.settled(), "a screen in flight leaves room for the scrollback");
        assert!(f.paused() && !f.flooding());
        assert_eq!(f.resync(), Resync::Full);
        f.resynced(RESYNC_MAX + RESET.len());
        assert!(f.in_flight() <= HIGH_WATER);
        // Then live output flows again though the scrollback is not parsed yet (it is not
        // live output), and nothing more is due.
        assert!(f.offer(MESSAGE_MAX / 4));
        assert!(!f.settled(), "no flood, nothing owed");
        assert!(!f.ack(f.sent()));
    }

    #[test]
    fn live_output_never_takes_the_page_over_the_high_water_mark() {
        // A full resync not yet parsed leaves room for less live output than FLOOD_AT.
        let mut f = Flow::default();
        f.resynced(RESYNC_MAX + RESET.len());
        while f.offer(MESSAGE_MAX / 4) {}
        assert!(f.flooding() && f.in_flight() <= HIGH_WATER);
        assert!(f.in_flight() > HIGH_WATER - MESSAGE_MAX as u64 / 4, "{}", f.in_flight());
    }

    #[test]
    fn a_flood_that_stops_while_the_page_is_behind_gets_the_scrollback_once_it_has_room() {
        let mut f = Flow::default();
        f.resynced(RESYNC_MAX + RESET.len());
        while f.offer(MESSAGE_MAX) {}
        assert!(!f.settled(), "the page is most of a megabyte behind");
        assert!(f.paused() && !f.flooding());
        assert!(!f.ack(f.sent() - LOW_WATER - 1));
        assert!(f.ack(f.sent() - LOW_WATER), "at the low-water mark, as before any flood");
        assert_eq!(f.resync(), Resync::Full);
        f.resynced(RESYNC_MAX + RESET.len());
        assert!(f.in_flight() <= HIGH_WATER);
    }

    #[test]
    fn the_page_never_holds_more_than_the_high_water_mark_nor_more_live_output_than_a_flood() {
        // Any interleaving of offers, acks, stops and resyncs (of at most what each may send).
        let mut f = Flow::default();
        let mut parsed = 0u64;
        let mut seed = 7u64;
        let mut screens = 0;
        for step in 0..100_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (seed >> 33) as usize;
            let due = match r % 5 {
                0 | 1 if !f.paused() => {
                    f.offer(r % MESSAGE_MAX + 1);
                    false
                }
                2 if !f.paused() => f.hold(),
                3 => f.settled(),
                _ => {
                    parsed = (parsed + (r % MB) as u64).min(f.sent());
                    f.ack(parsed)
                }
            };
            if due {
                let most = match f.resync() {
                    Resync::Screen => {
                        screens += 1;
                        FLOOD_MAX
                    }
                    Resync::Full => RESYNC_MAX,
                };
                f.resynced(r % most + RESET.len());
            }
            assert!(f.in_flight() <= HIGH_WATER, "step {step}: {f:?}");
            // Nor more live output than makes a flood: a keystroke's echo waits behind no more.
            assert!(f.live_in_flight() <= FLOOD_AT, "step {step}: {f:?}");
        }
        assert!(screens > 100, "floods were seen: {screens}");
    }

    #[test]
    fn resyncs_show_the_scrollback_or_during_a_flood_a_screen() {
        let line = [b'z'; 99];
        let back = [&line[..], b"\r\n"].concat().repeat(TERMINAL_LINES + 100);
        assert_eq!(resync_tail(&back, Resync::Full, 40), visible_tail(&back));
        // A screen: as many lines as the terminal has rows, from a line's start.
        let screen = resync_tail(&back, Resync::Screen, 40);
        assert_eq!(screen.len(), 40 * 101);
        assert!(screen.starts_with(&line) && back.ends_with(screen));
        // Never more than FLOOD_LINES, never less than a line.
        assert_eq!(resync_tail(&back, Resync::Screen, 2_000).len(), FLOOD_LINES * 101);
        assert_eq!(resync_tail(&back, Resync::Screen, 0).len(), 101);
        // Long lines: at most FLOOD_MAX, from a line's start.
        let long: Vec<u8> = [&[b'w'; 9_998][..], b"\r\n"].concat().repeat(200);
        let screen = resync_tail(&long, Resync::Screen, 40);
        assert!(screen.len() <= FLOOD_MAX && screen.len() > FLOOD_MAX - 10_000, "{}", screen.len());
        assert!(screen.starts_with(b"www"));
        assert_eq!(resync_tail(b"$ ", Resync::Screen, 40), b"$ ");
    }

    #[test]
    fn acks_are_monotonic_and_capped_at_what_was_sent() {
        let mut f = Flow::default();
        assert!(f.offer(1000));
        f.ack(5000);
        assert_eq!(f.in_flight(), 0);
        f.ack(10);
        assert_eq!(f.in_flight(), 0, "an older ack does not count twice");
        assert!(f.offer(FLOOD_AT as usize));
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
    fn a_lagged_stream_is_a_flood_whose_screen_waits_for_the_page_to_parse_what_it_has() {
        let mut f = Flow::default();
        assert!(f.offer(100));
        assert!(!f.hold(), "100 bytes not parsed yet: their ack will come");
        assert!(!f.offer(1), "nothing live before the resync");
        assert!(f.ack(100));
        assert_eq!(f.resync(), Resync::Screen);
        f.resynced(FLOOD_MAX);
        assert!(!f.offer(200_000), "the flood goes on");
        let mut g = Flow::default();
        assert!(g.hold(), "nothing in flight: no ack will come, so resync now");
    }
}
