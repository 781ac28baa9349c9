//! The trim's thread, in the desktop app and in WebKit's processes (crates/webkit-trim): it
//! gives back the allocator's free heap (`malloc_trim`) and the pages of clean read-only file
//! mappings ([`procs::trim_clean_file_pages`]) once, then looks once a period at the
//! process's CPU time and its pages of files and trims again when
//! [`mimesis_core::trim::Retrim`] says so: once per spell of use, never during it.
//!
//! Its name says how many trims it has done (`mimesis-trim 2`; `mimesis-trim` before the
//! first), for whoever looks at the process from outside (tests/webview_trim.rs, the window
//! benchmark). A plain thread with the operating system's sleep: it runs in WebKit's
//! processes too, which have no runtime of ours; what it decides is the pure [`Retrim`]'s,
//! tested on CPU times.

use std::ffi::OsStr;
use std::time::Duration;

use mimesis_core::trim::Retrim;

use crate::procs;

/// How often the thread looks whether to trim again after the first ([`Retrim`]): one
/// wake-up a minute, a few microseconds of CPU.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);

/// The variable that sets that period, in milliseconds (tests shorten it), for every trim's
/// thread: the app's and its WebKit processes'.
pub const EVERY_VAR: &str = "MIMESIS_WEBKIT_TRIM_EVERY_MS";

/// The period `$MIMESIS_WEBKIT_TRIM_EVERY_MS` asks for (at least a millisecond), else
/// [`DEFAULT_EVERY`].
pub fn every(value: Option<&OsStr>) -> Duration {
    millis(value).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_EVERY)
}

/// A whole number of milliseconds, if `value` is one.
pub fn millis(value: Option<&OsStr>) -> Option<Duration> {
    value.and_then(OsStr::to_str).and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_millis)
}

/// Starts the thread: after `after` it trims, then looks every `every`. Nothing is started
/// if the thread cannot be; a process whose CPU time cannot be read is trimmed once.
pub fn start(after: Duration, every: Duration) {
    // (Its stack is mapped on demand: reading smaps and the trim touch a few pages of it.)
    let _ = std::thread::Builder::new().name("mimesis-trim".into()).stack_size(256 * 1024).spawn(move || {
        std::thread::sleep(after);
        trim();
        let mut done = 1;
        said(done);
        let Some(cpu) = procs::own_cpu_time() else { return };
        let mut retrim = Retrim::new(every, cpu, procs::own_file_pages_kb());
        loop {
            std::thread::sleep(every);
            let Some(cpu) = procs::own_cpu_time() else { return };
            if retrim.look(cpu, procs::own_file_pages_kb()) {
                trim();
                done += 1;
                said(done);
                let Some(cpu) = procs::own_cpu_time() else { return };
                retrim.trimmed(cpu, procs::own_file_pages_kb());
            }
        }
    });
}

fn trim() {
    procs::release_free_memory();
    procs::trim_clean_file_pages(procs::Mapped::AllFiles);
}

fn said(done: u32) {
    let _ = std::fs::write("/proc/thread-self/comm", format!("mimesis-trim {done}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_the_variables_milliseconds_or_the_default() {
        assert_eq!(every(None), DEFAULT_EVERY);
        assert_eq!(every(Some(OsStr::new("1500"))), Duration::from_millis(1500));
        for bad in ["0", "", "-1", "often"] {
            assert_eq!(every(Some(OsStr::new(bad))), DEFAULT_EVERY, "{bad:?}");
        }
    }
}
