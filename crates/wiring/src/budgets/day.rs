//! The local day of the fleet's daily budget, and its end as a deadline on the injected
//! clock: the next local midnight (the time zone's, `TZ` respected) as a monotonic
//! [`Mono`], computed from the wall clock's time to it. The wall clock can step (a suspend,
//! an NTP correction, a hand-set clock): one that moved otherwise than the monotonic clock
//! since the deadline was armed has jumped, and the day is looked at again and re-armed.
//! Without any event, the wall clock is looked at every [`LOOK`] at least, so a jump while
//! nothing happens is seen within it.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone};
use mimesis_core::clock::{Mono, Now, Timestamp};

/// A wall clock further than this from where the monotonic clock says it should be has
/// jumped (NTP's slewing stays well under it between two looks).
const JUMP: Duration = Duration::from_secs(2);
/// The longest wait between two looks at the wall clock.
pub(crate) const LOOK: Duration = Duration::from_secs(15 * 60);

/// The local day and when it ends.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Day {
    pub(crate) date: NaiveDate,
    /// The next local midnight, on the monotonic clock.
    ends: Mono,
    /// Both clocks when the deadline was armed.
    armed: Now,
}

impl Day {
    pub(crate) fn new<Tz: TimeZone>(tz: &Tz, now: Now) -> Day {
        let (date, left) = day_and_rest(tz, now.wall);
        Day { date, ends: now.mono.plus(left), armed: now }
    }

    /// When to look again: the day's end, or [`LOOK`] after the last look.
    pub(crate) fn deadline(&self) -> Mono {
        self.ends.min(self.armed.mono.plus(LOOK))
    }

    /// Looks at the clocks (at the deadline, or at any other moment): the new day when it
    /// changed (also backwards, after a clock set back). Re-armed at the deadline and after
    /// a jump of the wall clock.
    pub(crate) fn check<Tz: TimeZone>(&mut self, tz: &Tz, now: Now) -> Option<NaiveDate> {
        let expected = self.armed.wall_at(now.mono);
        let jumped = now.wall.since(expected).max(expected.since(now.wall)) > JUMP;
        if !jumped && now.mono < self.deadline() {
            return None;
        }
        let before = self.date;
        *self = Day::new(tz, now);
        (self.date != before).then_some(self.date)
    }
}

/// The day `wall` falls on in `tz`, and how long until the next one begins (at least 1 ms).
fn day_and_rest<Tz: TimeZone>(tz: &Tz, wall: Timestamp) -> (NaiveDate, Duration) {
    let Some(utc) = DateTime::from_timestamp_millis(wall.millis()) else { return (NaiveDate::default(), LOOK) };
    let date = utc.with_timezone(tz).date_naive();
    // Where a clock change skips midnight, the day begins at the first hour that exists.
    let next =
        date.succ_opt().and_then(|d| (0..24).find_map(|h| tz.from_local_datetime(&d.and_hms_opt(h, 0, 0)?).earliest()));
    let left =
        next.map_or(LOOK, |n| Duration::from_millis(n.timestamp_millis().saturating_sub(wall.millis()).max(1) as u64));
    (date, left)
}

#[cfg(test)]
mod tests {
    use chrono::FixedOffset;
    use mimesis_core::clock::{Clock, ManualClock};

    use super::*;

    fn at(iso: &str) -> Timestamp {
        Timestamp::parse(iso).unwrap()
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    /// Runs the clock to the day's deadline, as the driver's sleep does.
    fn to_deadline(clock: &ManualClock, day: &Day) {
        clock.advance(day.deadline().since(clock.mono()));
    }

    #[test]
    fn the_day_ends_at_local_midnight_in_the_time_zone() {
        let tokyo = FixedOffset::east_opt(9 * 3600).unwrap();
        let new_york = FixedOffset::west_opt(5 * 3600).unwrap();
        // 23:59:59.999 in Tokyo is 09:59:59.999 in New York.
        let clock = ManualClock::new(at("2026-11-29T14:59:59.999Z"));
        let mut day = Day::new(&tokyo, clock.both());
        let there = Day::new(&new_york, clock.both());
        assert_eq!((day.date, there.date), (date("2026-11-29"), date("2026-11-29")));
        assert_eq!(day.deadline(), clock.mono().plus(Duration::from_millis(1)), "midnight is 1 ms away");
        assert!(day.check(&tokyo, clock.both()).is_none(), "not yet");
        to_deadline(&clock, &day);
        assert_eq!(day.check(&tokyo, clock.both()), Some(date("2026-11-30")));
        assert_eq!(there.clone().check(&new_york, clock.both()), None, "still the morning in New York");
        // Re-armed: the next midnight is a day away, looked at every LOOK meanwhile.
        assert_eq!(day.ends, clock.mono().plus(Duration::from_secs(24 * 3600)));
        assert_eq!(day.deadline(), clock.mono().plus(LOOK));
        let mut looks = 0;
        while day.date == date("2026-11-30") {
            to_deadline(&clock, &day);
            day.check(&tokyo, clock.both());
            looks += 1;
        }
        assert_eq!((day.date, looks), (date("2026-12-01"), 24 * 4), "one day of looks, then the next day");
        assert_eq!(clock.now(), at("2026-11-30T15:00:00.000Z"), "at Tokyo's midnight exactly");
        let clock = ManualClock::new(at("2026-11-29T14:59:59.999Z"));
        let mut there = Day::new(&new_york, clock.both());
        while there.date == date("2026-11-29") {
            to_deadline(&clock, &there);
            there.check(&new_york, clock.both());
        }
        assert_eq!(clock.now(), at("2026-11-30T05:00:00.000Z"), "New York's midnight, 14 hours later");
    }

    #[test]
    fn a_wall_clock_jump_re_arms_the_deadline() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let clock = ManualClock::new(at("2026-11-29T22:00:00Z"));
        let mut day = Day::new(&utc, clock.both());
        // Set forward past midnight (a suspend, a clock set by hand): seen at once, though
        // the monotonic deadline is two hours away.
        clock.set(at("2026-11-30T01:00:00Z"));
        assert_eq!(day.check(&utc, clock.both()), Some(date("2026-11-30")));
        assert_eq!(day.ends, clock.mono().plus(Duration::from_secs(23 * 3600)), "re-armed from the new time");
        // Set back over midnight: the day before again.
        clock.set(at("2026-11-29T23:59:00Z"));
        assert_eq!(day.check(&utc, clock.both()), Some(date("2026-11-29")));
        assert_eq!(day.deadline(), clock.mono().plus(Duration::from_secs(60)));
        // A small drift is no jump.
        clock.set(at("2026-11-29T23:58:59Z"));
        assert_eq!(day.check(&utc, clock.both()), None);
        assert_eq!(day.deadline(), clock.mono().plus(Duration::from_secs(60)), "not re-armed");
        to_deadline(&clock, &day);
        assert_eq!(day.check(&utc, clock.both()), None, "one second short of midnight: re-armed");
        assert_eq!(day.deadline(), clock.mono().plus(Duration::from_secs(1)));
        to_deadline(&clock, &day);
        assert_eq!(day.check(&utc, clock.both()), Some(date("2026-11-30")));
    }
}
