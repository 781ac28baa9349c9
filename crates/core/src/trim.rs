//! When a process gives memory back after use ([`Retrim`]): the desktop app and WebKit's
//! processes (crates/webkit-trim) trim their launch's pages once, then again after each
//! spell of use (`mimesis_os::trim` runs the thread that asks this).

use std::time::Duration;

/// When to trim again: the process has been used since its last trim, and the last period
/// was quiet (a quarter of a percent of a core or less, the most a window at rest may use:
/// issue 37 §5 asks at most 0.2 %). Used is either of: busy periods adding up to
/// [`Retrim::WORKED`] of CPU (the page drew, ran code it had not run since, loaded a part:
/// its heap grew), or [`Retrim::REGROWN_KB`] more pages of files resident than just after the
/// last trim (code that ran again came back from the page cache: drawing Settings brings
/// 58 MB back for 70–140 ms of the web process's CPU here). CPU times, not wall time: a
/// sleeping process spends none, and a busy one is left alone until it is done. A window's
/// own wake-ups at rest (a relative time redrawn, a collection, a session waiting for
/// approval: 25–90 ms a minute here, touching a few MB of code) are quiet periods, which
/// never add up to a trim.
///
/// But the code such a wake-up runs comes back after every trim: a page that redraws "2 min
/// ago" each minute brought 35 MB of WebKit's code back and spent 150–250 ms instead of its
/// usual few tens, which is use by both measures, so it was trimmed again a minute or two
/// later, and so on for as long as the window rested (seen: four trims in four minutes).
/// So trims are rate-limited: at least [`Retrim::gap`] apart, a period at first, twice as
/// long each time a trim follows the last one within twice the gap (the pages came back at
/// once: they are the process's resting work), up to [`Retrim::LONGEST_GAP`]; a trim after
/// a longer rest starts again from the period. And the pages that come back in a quiet
/// period right after a trim (after use, not the launch's) are the resting work's own (a row
/// that started waiting for approval reads "1 min ago", "2 min ago"…: 33 MB of the web
/// process's code back within the minute, for 30–40 ms of CPU): they count as its floor, not
/// as use, so they stay while they are used every minute instead of being trimmed and read
/// back every few minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retrim {
    /// The time between looks.
    period: Duration,
    /// The least time from one trim to the next, and the time since the last (in looks).
    gap: Duration,
    since: Duration,
    /// CPU time of the busy periods since the last trim.
    worked: Duration,
    /// The process's CPU time at the last look.
    at_look: Duration,
    /// Its resident pages of files just after the last trim, in kB (unknown: unreadable),
    /// and whether the next look, if quiet, raises that floor by what came back meanwhile
    /// (after a trim again, not after the launch's: the start-up's own stragglers are use).
    floor_kb: Option<u64>,
    learn: bool,
}

impl Retrim {
    /// Work since the last trim that brings pages back.
    pub const WORKED: Duration = Duration::from_millis(200);
    /// Pages of files back since the last trim that are worth a trim by themselves, in kB.
    pub const REGROWN_KB: u64 = 16 * 1024;

    /// The longest the least time between two trims grows to.
    pub const LONGEST_GAP: Duration = Duration::from_secs(3600);

    /// Looks every `period`; just trimmed, at `cpu`, with `file_kb` of pages of files.
    pub fn new(period: Duration, cpu: Duration, file_kb: Option<u64>) -> Retrim {
        Retrim {
            period,
            gap: period,
            since: Duration::ZERO,
            worked: Duration::ZERO,
            at_look: cpu,
            floor_kb: file_kb,
            learn: false,
        }
    }

    /// The least time between the last trim and the next.
    pub fn gap(&self) -> Duration {
        self.gap
    }

    /// Trimmed again, at `cpu`, leaving `file_kb`.
    pub fn trimmed(&mut self, cpu: Duration, file_kb: Option<u64>) {
        self.gap = if self.since <= self.gap.saturating_mul(2) {
            self.gap.saturating_mul(2).min(Self::LONGEST_GAP).max(self.period)
        } else {
            self.period
        };
        self.since = Duration::ZERO;
        self.worked = Duration::ZERO;
        self.at_look = cpu;
        self.floor_kb = file_kb;
        self.learn = true;
    }

    /// A look one period after the last, at `cpu` with `file_kb` of pages of files resident:
    /// whether to trim now.
    pub fn look(&mut self, cpu: Duration, file_kb: Option<u64>) -> bool {
        let learn = std::mem::take(&mut self.learn);
        self.since = self.since.saturating_add(self.period);
        let period = cpu.saturating_sub(self.at_look);
        self.at_look = cpu;
        // Quiet: a quarter of a percent of a core.
        if period > self.period / 400 {
            self.worked += period;
            return false;
        }
        // The first period after a trim was quiet: what came back meanwhile is the resting
        // work's.
        if learn && let (Some(floor), Some(kb)) = (self.floor_kb, file_kb) {
            self.floor_kb = Some(floor.max(kb));
        }
        let regrown = matches!((self.floor_kb.and_then(|f| f.checked_add(Self::REGROWN_KB)), file_kb), (Some(bar), Some(kb)) if kb >= bar);
        (self.worked >= Self::WORKED || regrown) && self.since >= self.gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_trims_again_once_a_spell_of_use_is_over_never_during_it_nor_while_idle() {
        let ms = Duration::from_millis;
        let minute = Duration::from_secs(60);
        let kb = Some(8_000);
        let mut r = Retrim::new(minute, ms(900), kb);
        // At rest after the launch's trim: a window's own wake-ups (up to 150 ms a minute,
        // 0.25 % of a core, and a few MB of code back) are quiet, however long it rests.
        let rest: Vec<bool> = (1..=600).map(|i| r.look(ms(900 + i * 90), Some(8_000 + i * 10))).collect();
        assert!(rest.iter().all(|t| !t), "10 hours at 90 ms a minute");
        let at = 900 + 600 * 90;
        // Used: not while the minutes are busy, then once, when one is quiet.
        assert!(!r.look(ms(at + 500), kb), "busy");
        assert!(!r.look(ms(at + 1_100), kb), "still busy");
        assert!(r.look(ms(at + 1_200), kb), "quiet after 1.1 s of work");
        // The trim's own CPU is not work: at rest after it, nothing more.
        r.trimmed(ms(at + 1_230), kb);
        assert!((1..=10).all(|i| !r.look(ms(at + 1_230 + i * 100), kb)), "at rest again");
        // Short spells of use add up; the trim waits for a quiet minute.
        let mut r = Retrim::new(minute, ms(0), kb);
        assert_eq!([160, 170, 330, 340].map(|cpu| r.look(ms(cpu), kb)), [false, false, false, true]);
        // A shorter period (the tests') is quiet in proportion: 5 ms in 2 s.
        let mut r = Retrim::new(Duration::from_secs(2), ms(0), kb);
        assert_eq!([300, 304, 310].map(|cpu| r.look(ms(cpu), kb)), [false, true, false]);
        // A clock that goes back (never, but) is no work and no trim.
        let mut r = Retrim::new(minute, ms(500), kb);
        assert!(!r.look(ms(100), kb));
    }

    #[test]
    fn a_page_that_redraws_every_minute_is_not_trimmed_every_minute() {
        let ms = Duration::from_millis;
        let minute = Duration::from_secs(60);
        // A window at rest whose page redraws a relative time each minute: 60 ms of CPU with
        // its code resident; after a trim, 250 ms and 35 MB of code back from the page cache.
        let (mut cpu, mut kb, mut fresh) = (ms(0), 8_000u64, true);
        let mut r = Retrim::new(minute, cpu, Some(kb));
        let mut trims = Vec::new();
        for look in 1..=240u64 {
            cpu += if std::mem::take(&mut fresh) { ms(250) } else { ms(60) };
            kb = 43_000;
            if r.look(cpu, Some(kb)) {
                kb = 8_000;
                cpu += ms(40);
                r.trimmed(cpu, Some(kb));
                fresh = true;
                trims.push(look);
            }
        }
        // Each gap at least twice the one before, up to an hour, then an hour apart: 8 trims
        // in 4 hours rather than one every other minute.
        let gaps: Vec<u64> = trims.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(trims.len() <= 9, "{} trims in 4 hours, minutes apart: {gaps:?}", trims.len());
        assert!(gaps.windows(2).all(|g| g[1] >= (g[0] * 2).min(60)), "{gaps:?}");
        assert_eq!(r.gap(), Retrim::LONGEST_GAP);
        // The redraws stop (the session's time reads hours now): the work since the last
        // trim is trimmed once the gap allows, then nothing for two hours. Then a real spell
        // of use is trimmed at its end, and the gap is a period again.
        let mut looks = 0;
        while !r.look(cpu, Some(kb)) {
            looks += 1;
            assert!(looks <= 60, "the trim due within the gap");
        }
        r.trimmed(cpu, Some(8_000));
        for _ in 0..120 {
            cpu += ms(20);
            assert!(!r.look(cpu, Some(8_000)), "nothing came back");
        }
        assert!(!r.look(cpu + ms(900), Some(70_000)), "busy");
        assert!(r.look(cpu + ms(960), Some(70_000)), "its end");
        r.trimmed(cpu + ms(1_000), Some(8_000));
        assert_eq!(r.gap(), minute, "after a long rest, the period again");
    }

    #[test]
    fn what_comes_back_in_the_quiet_minute_after_a_trim_stays_while_it_is_used() {
        let ms = Duration::from_millis;
        let minute = Duration::from_secs(60);
        // A row that waits for approval, redrawn each minute: 35 ms of CPU with its code
        // resident, 40 ms and 33 MB of code back from the page cache after a trim.
        let (mut cpu, mut kb) = (ms(0), 8_000u64);
        let mut r = Retrim::new(minute, cpu, Some(kb));
        // The change that made it wait: 700 ms of work, then quiet: trimmed once.
        cpu += ms(700);
        kb = 60_000;
        assert!(!r.look(cpu, Some(kb)), "busy");
        cpu += ms(35);
        assert!(r.look(cpu, Some(kb)), "quiet after the change");
        cpu += ms(20);
        kb = 8_000;
        r.trimmed(cpu, Some(kb));
        // Its first redraw reads the code back; every later one finds it there: no trim in
        // four hours, however much came back.
        cpu += ms(40);
        kb = 41_000;
        let trims = (1..=240).filter(|_| {
            let t = r.look(cpu, Some(kb));
            cpu += ms(35);
            t
        });
        assert_eq!(trims.count(), 0);
        // More than that back afterwards (Settings drawn) is use again.
        assert!(r.look(cpu, Some(41_000 + Retrim::REGROWN_KB)), "Settings' pages go");
        // A first period after a trim that was busy sets no floor.
        r.trimmed(cpu, Some(8_000));
        cpu += ms(180);
        assert!(!r.look(cpu, Some(60_000)), "busy, less than WORKED");
        assert!(r.look(cpu + ms(10), Some(60_000)), "its pages are use");
        // Nor does the first quiet period after the launch's trim: what the start-up brought
        // back after it (the app's engine finishing its first index) goes at the next trim.
        let mut r = Retrim::new(minute, ms(0), Some(8_000));
        assert!(r.look(ms(100), Some(40_000)), "the start-up's stragglers");
    }

    #[test]
    fn pages_that_came_back_are_use_of_their_own_however_little_the_work() {
        let ms = Duration::from_millis;
        let minute = Duration::from_secs(60);
        // Settings drawn on a fast machine: 180 ms of CPU, 60 MB of code back.
        let mut r = Retrim::new(minute, ms(900), Some(7_700));
        assert!(!r.look(ms(1_080), Some(68_000)), "busy while it draws");
        assert!(r.look(ms(1_090), Some(68_000)), "quiet after it: the pages go");
        r.trimmed(ms(1_090), Some(7_800));
        assert!(!r.look(ms(1_100), Some(7_800)), "nothing came back since");
        // Less than REGROWN_KB back and little work: left alone.
        assert!(!r.look(ms(1_150), Some(7_800 + Retrim::REGROWN_KB - 1)));
        assert!(!r.look(ms(1_160), Some(7_800 + Retrim::REGROWN_KB - 1)));
        assert!(r.look(ms(1_170), Some(7_800 + Retrim::REGROWN_KB)), "REGROWN_KB back");
        // Pages unreadable (at the trim or now): the work alone decides.
        let mut r = Retrim::new(minute, ms(0), None);
        assert!(!r.look(ms(10), Some(500_000)));
        let mut r = Retrim::new(minute, ms(0), Some(1));
        assert!(!r.look(ms(10), None));
        let mut r = Retrim::new(minute, ms(0), Some(u64::MAX));
        assert!(!r.look(ms(10), Some(u64::MAX)), "no overflow");
    }
}
