//! Reading a whole file through a memory map: the bytes are looked at where the page cache
//! holds them, not copied out by `read(2)` first (the copy was the biggest part of a first
//! index's CPU: 1.36 GB of transcripts).
//!
//! A mapped file that shrinks while it is read would end the process (`SIGBUS` on the
//! pages past its new end). Here such a fault is caught: the page is replaced by zeros, the
//! read goes on, and its result is thrown away ([`read_mapped`] answers `None`): the caller
//! reads the file again the usual way. Any other `SIGBUS` goes to the handler that was there
//! before (Rust's own, or the default: the process ends as it would have).

use std::cell::Cell;
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// The mapping this thread is reading (start, end), and whether a page of it was lost.
    static GUARDED: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    static LOST: Cell<bool> = const { Cell::new(false) };
}

/// The `SIGBUS` handler before ours, to pass on faults that are not ours.
static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();
/// The page size, read before the handler may need it (`sysconf` is no call for a handler).
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// Hands the `len` first bytes of `file` to `f`, mapped. `None`: the file shrank while `f`
/// read it (what `f` saw past the new end were zeros): read it again another way.
///
/// The bytes can change under `f` if someone writes into the middle of the file meanwhile
/// (as with `read(2)` racing a writer): `f` must copy what it parses, and only look at the
/// mapped bytes (search them, compare them).
pub fn read_mapped<R>(file: &File, len: usize, f: impl FnOnce(&[u8]) -> R) -> io::Result<Option<R>> {
    if len == 0 {
        return Ok(Some(f(&[])));
    }
    if PREVIOUS.get_or_init(install).is_none() {
        return Err(io::Error::other("no SIGBUS handler"));
    }
    // SAFETY: a fresh private read-only mapping of an open file; unmapped below, after `f`.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let start = ptr as usize;
    GUARDED.set((start, start + len));
    LOST.set(false);
    // SAFETY: `len` bytes are mapped at `ptr` until the munmap below; a page the file no
    // longer has is replaced by zeros by the handler instead of faulting.
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    let result = f(bytes);
    GUARDED.set((0, 0));
    let lost = LOST.replace(false);
    // SAFETY: the mapping made above; `bytes` is not used past here.
    unsafe { libc::munmap(ptr, len) };
    Ok((!lost).then_some(result))
}

fn install() -> Option<libc::sigaction> {
    // SAFETY: plain sysconf and sigaction calls; the handler only makes async-signal-safe
    // calls.
    unsafe {
        PAGE.store(libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize, Ordering::Relaxed);
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_sigbus as *const () as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
        libc::sigemptyset(&mut new.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(libc::SIGBUS, &new, &mut old) == 0).then_some(old)
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (start, end) = GUARDED.get();
    if addr >= start && addr < end {
        // SAFETY: the page lies inside our own mapping: a page of zeros takes its place
        // (mmap is async-signal-safe), and the faulting read is retried on it.
        let page = PAGE.load(Ordering::Relaxed);
        let at = addr & !(page - 1);
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
        let zeros = unsafe { libc::mmap(at as *mut libc::c_void, page, libc::PROT_READ, flags, -1, 0) };
        if zeros != libc::MAP_FAILED {
            LOST.set(true);
            return;
        }
    }
    // Not ours: as if we had never been here.
    match PREVIOUS.get().copied().flatten() {
        Some(prev) if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN => {
            if prev.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler, called as it was installed.
                let h: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(prev.sa_sigaction) };
                h(sig, info, ctx);
            } else {
                // SAFETY: as above, a plain handler.
                let h: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev.sa_sigaction) };
                h(sig);
            }
        }
        _ => {
            // The default: back to it, and the fault happens again, unhandled.
            // SAFETY: resetting a signal's disposition.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_is_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"one\ntwo\n").unwrap();
        let f = File::open(&p).unwrap();
        assert_eq!(read_mapped(&f, 8, |b| b.to_vec()).unwrap(), Some(b"one\ntwo\n".to_vec()));
        assert_eq!(read_mapped(&f, 0, |b| b.len()).unwrap(), Some(0));
    }

    #[test]
    fn a_file_that_shrinks_while_mapped_is_said_so_and_nothing_faults() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let page = 4096 * 4;
        let mut w = File::create(&p).unwrap();
        w.write_all(&vec![b'x'; page * 4]).unwrap();
        drop(w);
        let f = File::open(&p).unwrap();
        let got = read_mapped(&f, page * 4, |b| {
            assert_eq!(b[0], b'x');
            // Someone cuts the file short while it is read.
            std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(page as u64).unwrap();
            // Past the new end: zeros, not a SIGBUS.
            b.iter().rev().take(page).filter(|&&c| c == 0).count()
        })
        .unwrap();
        assert_eq!(got, None, "the read is refused");
        // The next read of the same file is whole again.
        assert_eq!(read_mapped(&f, page, |b| b.iter().all(|&c| c == b'x')).unwrap(), Some(true));
    }
}
