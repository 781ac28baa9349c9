//! Time, injected: wall-clock [`Timestamp`]s and monotonic [`Mono`] instants, read from
//! one [`Clock`].
//!
//! Two kinds of time, for two jobs. Transcript timestamps are wall-clock UTC, so the
//! roster's state machine compares them with a wall-clock `now`, and what is displayed or
//! stored is wall time. Deadlines that Mimesis sets itself (a 4-hour limit, the grace
//! before SIGKILL, an idle timeout) run on monotonic time, which a clock step (NTP, a
//! manual change) does not move and a suspended laptop does not advance. Tests drive a
//! [`ManualClock`], which moves both together, or only the wall clock to model a step;
//! nothing in the policy code reads the system time directly.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC. Serialized as ISO-8601 with milliseconds.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    pub fn from_system_time(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp(d.as_millis() as i64),
            Err(e) => Timestamp(-(e.duration().as_millis() as i64)),
        }
    }

    /// `self + d`, saturating.
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_add(d.as_millis() as i64))
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// Parses an ISO-8601 / RFC 3339 timestamp. The common `YYYY-MM-DDTHH:MM:SS[.fff]Z`
    /// form written by Claude Code takes a fast path; other offsets and precisions fall
    /// back to a full parser. Returns `None` for anything that is not a timestamp.
    pub fn parse(s: &str) -> Option<Timestamp> {
        fast_parse(s.as_bytes())
            .or_else(|| chrono::DateTime::parse_from_rfc3339(s).ok().map(|dt| Timestamp(dt.timestamp_millis())))
    }

    /// ISO-8601 UTC with milliseconds: `2026-11-01T12:00:00.000Z`.
    pub fn to_iso(self) -> String {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", sod / 3600, (sod / 60) % 60, sod % 60)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_iso())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&s).ok_or_else(|| serde::de::Error::custom("not an ISO-8601 timestamp"))
    }
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

fn fast_parse(b: &[u8]) -> Option<Timestamp> {
    // 2026-11-01T12:34:56Z or 2026-11-01T12:34:56.789Z (any number of fraction digits)
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if *b.last()? != b'Z' {
        return None;
    }
    let y = digits(&b[0..4])?;
    let mo = digits(&b[5..7])?;
    let d = digits(&b[8..10])?;
    let h = digits(&b[11..13])?;
    let mi = digits(&b[14..16])?;
    let s = digits(&b[17..19])?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let rest = &b[19..b.len() - 1];
    let ms = match rest {
        [] => 0,
        [b'.', frac @ ..] if !frac.is_empty() => {
            let take = &frac[..frac.len().min(3)];
            let mut v = digits(take)?;
            // The remaining digits must still be digits (checked, not summed: a long
            // fraction from a hostile file would overflow).
            if !frac.iter().all(u8::is_ascii_digit) {
                return None;
            }
            for _ in take.len()..3 {
                v *= 10;
            }
            v
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(Timestamp((days * 86_400 + h * 3600 + mi * 60 + s) * 1000 + ms))
}

// Howard Hinnant's civil-date algorithms (public domain).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A monotonic instant: milliseconds since an arbitrary origin (this process's first
/// look at the clock). Only differences between two `Mono`s mean anything.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Mono(u64);

impl Mono {
    pub const fn from_millis(ms: u64) -> Self {
        Mono(ms)
    }

    pub const fn millis(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating.
    pub fn plus(self, d: Duration) -> Self {
        Mono(self.0.saturating_add(d.as_millis().min(u128::from(u64::MAX)) as u64))
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn since(self, earlier: Mono) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// Both clocks read at one moment.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Now {
    pub wall: Timestamp,
    pub mono: Mono,
}

impl Now {
    /// The wall-clock time at which the monotonic clock reads `at`, as seen from this
    /// moment (for showing a deadline).
    pub fn wall_at(&self, at: Mono) -> Timestamp {
        if at >= self.mono {
            self.wall.plus(at.since(self.mono))
        } else {
            Timestamp::from_millis(self.wall.millis().saturating_sub(self.mono.since(at).as_millis() as i64))
        }
    }
}

/// The source of "now" for every timeout of Mimesis.
pub trait Clock: Send + Sync + 'static {
    /// Wall-clock time: for comparing with transcripts, displaying and storing.
    fn now(&self) -> Timestamp;
    /// Monotonic time: for deadlines.
    fn mono(&self) -> Mono;
    fn both(&self) -> Now {
        Now { wall: self.now(), mono: self.mono() }
    }
}

/// The real clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }

    fn mono(&self) -> Mono {
        Mono(origin().elapsed().as_millis() as u64)
    }
}

/// A clock that only moves when told to: tests set a 4-hour limit and jump past it.
#[derive(Debug, Default)]
pub struct ManualClock {
    wall: AtomicI64,
    mono: AtomicU64,
}

impl ManualClock {
    pub fn new(at: Timestamp) -> Self {
        ManualClock { wall: AtomicI64::new(at.millis()), mono: AtomicU64::new(0) }
    }

    /// Sets the wall clock only, as a clock step does: deadlines on the monotonic clock stay.
    pub fn set(&self, at: Timestamp) {
        self.wall.store(at.millis(), Ordering::SeqCst);
    }

    /// Time passes: both clocks move.
    pub fn advance(&self, d: Duration) {
        let ms = d.as_millis() as i64;
        self.wall.fetch_add(ms, Ordering::SeqCst);
        self.mono.fetch_add(ms as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.wall.load(Ordering::SeqCst))
    }

    fn mono(&self) -> Mono {
        Mono(self.mono.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claude_code_timestamps() {
        let t = Timestamp::parse("2026-11-01T12:34:56.789Z").unwrap();
        assert_eq!(t.to_iso(), "2026-11-01T12:34:56.789Z");
        assert_eq!(Timestamp::parse("1970-01-01T00:00:00Z").unwrap().millis(), 0);
        assert_eq!(Timestamp::parse("1970-01-01T00:00:01.5Z").unwrap().millis(), 1500);
        assert_eq!(Timestamp::parse("1970-01-01T00:00:01.123456Z").unwrap().millis(), 1123);
    }

    #[test]
    fn parses_offsets_through_the_slow_path() {
        let t = Timestamp::parse("2026-11-01T14:34:56.789+02:00").unwrap();
        assert_eq!(t.to_iso(), "2026-11-01T12:34:56.789Z");
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-11-01T00:00:00.Z", "2026-11-01 00:00:00"] {
            assert!(Timestamp::parse(s).is_none(), "{s}");
        }
    }

    #[test]
    fn round_trips_across_eras() {
        for ms in [-86_400_000_123i64, 0, 951_782_400_000, 4_102_444_800_999] {
            let t = Timestamp::from_millis(ms);
            assert_eq!(Timestamp::parse(&t.to_iso()), Some(t));
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::from_millis(1000));
        assert_eq!(c.now().millis(), 1000);
        c.advance(Duration::from_secs(4 * 3600));
        assert_eq!(c.now().millis(), 1000 + 4 * 3600 * 1000);
        assert_eq!(c.mono(), Mono::from_millis(4 * 3600 * 1000));
    }

    #[test]
    fn a_wall_clock_step_leaves_monotonic_time_alone() {
        let c = ManualClock::new(Timestamp::from_millis(1000));
        c.advance(Duration::from_secs(10));
        let before = c.both();
        c.set(Timestamp::from_millis(1000 + 86_400_000));
        assert_eq!(c.mono(), before.mono);
        let now = c.both();
        assert_eq!(now.wall_at(now.mono.plus(Duration::from_secs(5))).millis(), 1000 + 86_400_000 + 5000);
    }

    #[test]
    fn a_long_fraction_is_read_not_overflowed() {
        let t = Timestamp::parse("2026-11-24T00:00:00.12345678901234567890123456789Z").unwrap();
        assert_eq!(t, Timestamp::parse("2026-11-24T00:00:00.123Z").unwrap());
        assert!(Timestamp::parse("2026-11-24T00:00:00.12x4Z").is_none());
    }
}
