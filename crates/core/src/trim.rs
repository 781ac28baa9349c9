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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retrim {
    /// The most CPU time a quiet period takes.
    quiet: Duration,
    /// CPU time of the busy periods since the last trim.
    worked: Duration,
    /// The process's CPU time at the last look.
    at_look: Duration,
    /// Its resident pages of files just after the last trim, in kB (unknown: unreadable).
    floor_kb: Option<u64>,
}

impl Retrim {
    /// Work since the last trim that brings pages back.
    pub const WORKED: Duration = Duration::from_millis(200);
    /// Pages of files back since the last trim that are worth a trim by themselves, in kB.
    pub const REGROWN_KB: u64 = 16 * 1024;

    /// Looks every `period`; just trimmed, at `cpu`, with `file_kb` of pages of files.
    pub fn new(period: Duration, cpu: Duration, file_kb: Option<u64>) -> Retrim {
        Retrim { quiet: period / 400, worked: Duration::ZERO, at_look: cpu, floor_kb: file_kb }
    }

    /// Trimmed again, at `cpu`, leaving `file_kb`.
    pub fn trimmed(&mut self, cpu: Duration, file_kb: Option<u64>) {
        self.worked = Duration::ZERO;
        self.at_look = cpu;
        self.floor_kb = file_kb;
    }

    /// A look one period after the last, at `cpu` with `file_kb` of pages of files resident:
    /// whether to trim now.
    pub fn look(&mut self, cpu: Duration, file_kb: Option<u64>) -> bool {
        let period = cpu.saturating_sub(self.at_look);
        self.at_look = cpu;
        if period > self.quiet {
            self.worked += period;
            return false;
        }
        let regrown = matches!((self.floor_kb.and_then(|f| f.checked_add(Self::REGROWN_KB)), file_kb), (Some(bar), Some(kb)) if kb >= bar);
        self.worked >= Self::WORKED || regrown
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
    fn pages_that_came_back_are_use_of_their_own_however_little_the_work() {
        let ms = Duration::from_millis;
        let minute = Duration::from_secs(60);
        // Settings drawn on a fast machine: 180 ms of CPU, 60 MB of code back.
        let mut r = Retrim::new(minute, ms(900), Some(7_700));
        assert!(!r.look(ms(1_080), Some(68_000)), "busy while it draws");
        assert!(r.look(ms(1_090), Some(68_000)), "quiet after it: the pages go");
        r.trimmed(ms(1_090), Some(7_800));
        assert!(!r.look(ms(1_100), Some(7_900)), "nothing came back since");
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
