//! A shared library the desktop app puts in `LD_PRELOAD` for WebKit's web and network
//! processes (src-tauri/src/toolkit.rs), to do in them what the app does to itself once its
//! launch is over (`release_when_sent` in src-tauri/src/commands.rs): give the allocator's
//! free heap back (`malloc_trim`) and drop the pages of clean read-only file mappings
//! (`mimesis_os::procs::trim_clean_file_pages`). Those are the code and constants of WebKit,
//! JavaScriptCore, Mesa's LLVM and the rest that only the launch ran: clean copies of their
//! files that these processes alone hold, which the kernel may take back at any time and
//! which come back from the page cache at their next touch. With 2,000 sessions after 60 s
//! idle, the window's memory goes from 235 to 126 MB (README, "Benchmark"). The app cannot drop them from outside: `process_madvise` needs
//! `CAP_SYS_NICE`.
//!
//! Its constructor does nothing in any other program (every program the app starts without
//! restoring the user's environment loads it). In those two it starts one thread, which
//! sleeps ([`DEFAULT_AFTER`] after the process's start, or `$MIMESIS_WEBKIT_TRIM_AFTER_MS`)
//! and trims. Use brings pages back (a session that starts waiting for approval took the
//! window from 147 to 211 MB, 60 s idle after it), so the thread then looks once a
//! [`DEFAULT_EVERY`] (or `$MIMESIS_WEBKIT_TRIM_EVERY_MS`) at the process's CPU time and its
//! pages of files, and trims again when the process has been used since its last trim (it
//! worked, or pages came back) and has been quiet for that period ([`Retrim`]): once per spell of use, never while in use, and a process that stays idle is
//! not trimmed again. Anything that fails leaves the process as it was.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

/// When the trim runs after the process's start: the window's launch, a first one with
/// 2,000 sessions included, is over by then (its complete roster at 1–2 s here), and the
/// page is idle.
pub const DEFAULT_AFTER: Duration = Duration::from_secs(12);

/// The variable that sets that delay, in milliseconds (tests shorten it).
pub const AFTER_VAR: &str = "MIMESIS_WEBKIT_TRIM_AFTER_MS";

/// How often the thread looks whether to trim again after the first ([`Retrim`]): one
/// wake-up a minute, a few microseconds of CPU.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);

/// The variable that sets that period, in milliseconds (tests shorten it).
pub const EVERY_VAR: &str = "MIMESIS_WEBKIT_TRIM_EVERY_MS";

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

/// Whether a process running `exe` (its `/proc/self/exe`) is one of WebKit's that trims.
fn trims(exe: &Path) -> bool {
    exe.file_name().is_some_and(|name| name == "WebKitWebProcess" || name == "WebKitNetworkProcess")
}

/// The delay `$MIMESIS_WEBKIT_TRIM_AFTER_MS` asks for, else [`DEFAULT_AFTER`].
fn after(value: Option<&OsStr>) -> Duration {
    millis(value).unwrap_or(DEFAULT_AFTER)
}

/// The period `$MIMESIS_WEBKIT_TRIM_EVERY_MS` asks for (at least a millisecond), else
/// [`DEFAULT_EVERY`].
fn every(value: Option<&OsStr>) -> Duration {
    millis(value).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_EVERY)
}

fn millis(value: Option<&OsStr>) -> Option<Duration> {
    value.and_then(OsStr::to_str).and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_millis)
}

/// The thread's name says how many trims it has done (`mimesis-trim 2`; `mimesis-trim` before
/// the first), for whoever looks at the process from outside (tests/webview_trim.rs).
fn said(done: u32) {
    let _ = std::fs::write("/proc/thread-self/comm", format!("mimesis-trim {done}"));
}

/// This process's CPU time (user and system, all threads), or nothing if unreadable.
fn cpu_time() -> Option<Duration> {
    mimesis_os::procs::own_cpu_time()
}

/// This process's resident pages of files, in kB, or nothing if unreadable.
fn file_kb() -> Option<u64> {
    mimesis_os::procs::own_file_pages_kb()
}

fn trim() {
    mimesis_os::procs::release_free_memory();
    mimesis_os::procs::trim_clean_file_pages(mimesis_os::procs::Mapped::AllFiles);
}

/// Runs when the loader loads this library, before the program's `main`. Never panics:
/// a failure to read the executable's name or to start the thread is the end of it.
extern "C" fn at_load() {
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else { return };
    if !trims(&exe) {
        return;
    }
    let after = after(std::env::var_os(AFTER_VAR).as_deref());
    let every = every(std::env::var_os(EVERY_VAR).as_deref());
    // (Its stack is mapped on demand: reading smaps and the trim touch a few pages of it.)
    let _ = std::thread::Builder::new().name("mimesis-trim".into()).stack_size(256 * 1024).spawn(move || {
        std::thread::sleep(after);
        trim();
        let mut done = 1;
        said(done);
        // (A process whose CPU time cannot be read is trimmed once.)
        let Some(cpu) = cpu_time() else { return };
        let mut retrim = Retrim::new(every, cpu, file_kb());
        loop {
            std::thread::sleep(every);
            let Some(cpu) = cpu_time() else { return };
            if retrim.look(cpu, file_kb()) {
                trim();
                done += 1;
                said(done);
                let Some(cpu) = cpu_time() else { return };
                retrim.trimmed(cpu, file_kb());
            }
        }
    });
}

/// The constructor: the loader runs each function of `.init_array` when it loads the library.
#[used]
#[unsafe(link_section = ".init_array")]
static AT_LOAD: extern "C" fn() = at_load;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_webkits_web_and_network_processes_trim() {
        assert!(trims(Path::new("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebProcess")));
        assert!(trims(Path::new("/usr/libexec/webkit2gtk-4.1/WebKitNetworkProcess")));
        for other in [
            "/usr/bin/mimesis-desktop",
            "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebDriver",
            "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitGPUProcess",
            "/usr/bin/bash",
            "/opt/WebKitWebProcess/bash",
            "/usr/bin/WebKitWebProcess2",
            "",
        ] {
            assert!(!trims(Path::new(other)), "{other}");
        }
        // This test's own program: the constructor ran here and started nothing.
        assert!(!trims(&std::fs::read_link("/proc/self/exe").unwrap()));
    }

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

    #[test]
    fn the_period_is_the_variables_milliseconds_or_the_default() {
        assert_eq!(every(None), DEFAULT_EVERY);
        assert_eq!(every(Some(OsStr::new("1500"))), Duration::from_millis(1500));
        for bad in ["0", "", "-1", "often"] {
            assert_eq!(every(Some(OsStr::new(bad))), DEFAULT_EVERY, "{bad:?}");
        }
    }

    #[test]
    fn the_delay_is_the_variables_milliseconds_or_the_default() {
        assert_eq!(after(None), DEFAULT_AFTER);
        assert_eq!(after(Some(OsStr::new("1000"))), Duration::from_secs(1));
        assert_eq!(after(Some(OsStr::new(" 250\n"))), Duration::from_millis(250));
        assert_eq!(after(Some(OsStr::new("0"))), Duration::ZERO);
        for bad in ["", "-5", "1.5", "soon", "99999999999999999999999"] {
            assert_eq!(after(Some(OsStr::new(bad))), DEFAULT_AFTER, "{bad:?}");
        }
    }
}
