//! Opening files that someone else controls (transcripts, markers, status files, the
//! registry, settings): only regular files are ever read. A FIFO, socket or device named
//! like a transcript must never block a reader in `open(2)` or `read(2)`, so every open
//! here is non-blocking and the type is checked on the open descriptor (no window between
//! a check and the open).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether the last component of a path may be a symlink.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Links {
    Follow,
    Refuse,
}

/// Opens `path` for reading if it is a regular file. A FIFO, socket, device or folder is
/// refused with `InvalidInput` before anything reads from it; with [`Links::Refuse`] a
/// symlink is refused too. A symlink loop is an error (`ELOOP`), never a hang.
pub fn open_regular(path: &Path, links: Links) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let f = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(f)
}

/// Reads a regular file of at most `max` bytes, never following a symlink.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_regular(path, max, Links::Refuse)
}

/// Reads a regular file of at most `max` bytes; `links` says whether the last component
/// may be a symlink (a settings file kept by a dotfile manager is one).
pub fn read_regular(path: &Path, max: u64, links: Links) -> io::Result<Vec<u8>> {
    let f = open_regular(path, links)?;
    let len = f.metadata()?.len();
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{len} bytes, more than the {max} allowed")));
    }
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("more than the {max} bytes allowed")));
    }
    Ok(buf)
}

/// A regular file mapped into memory, read-only: its bytes without copying them.
///
/// A mapping of a file that another process truncates meanwhile faults (`SIGBUS`) on
/// the bytes that are gone; only a short-lived reader that has made that fault say so
/// ([`say_on_bus_error`]) maps files.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned; `&[u8]` views of it are shared as any slice.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps the regular file `path` (a FIFO or device is refused, as by [`open_regular`]);
    /// `None` when it is empty.
    pub fn open(path: &Path) -> io::Result<Option<Mapped>> {
        use std::os::fd::AsRawFd;
        let f = open_regular(path, Links::Follow)?;
        let len = usize::try_from(f.metadata()?.len()).map_err(|_| io::Error::from(io::ErrorKind::FileTooLarge))?;
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: a fresh read-only shared mapping of an open regular file, of its length;
        // the descriptor may close after mmap returns.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Some(Mapped { ptr, len }))
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }

    /// Lets go of the pages before `upto` (they stay in the page cache): a long file read
    /// from start to end holds only what is being read, not all it has read.
    pub fn release_before(&self, upto: usize) {
        let page = page_size();
        let end = upto.min(self.len) / page * page;
        if end > 0 {
            // SAFETY: a page-aligned range inside the mapping, which is read-only: dropping
            // its pages loses nothing; a later read maps them again.
            unsafe { libc::madvise(self.ptr, end, libc::MADV_DONTNEED) };
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `open`, once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

static BUS_ERROR_SENTENCE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// Makes a `SIGBUS` (a mapped file cut short by another process while it was read: see
/// [`Mapped`]) end the process with `sentence` on stderr and exit status 1, instead of a
/// core dump. For short-lived processes only: it ends the process.
pub fn say_on_bus_error(sentence: &str) {
    let _ = BUS_ERROR_SENTENCE.set(format!("{sentence}\n").into_bytes());
    extern "C" fn on_bus(_: libc::c_int) {
        if let Some(s) = BUS_ERROR_SENTENCE.get() {
            // SAFETY: write(2) and _exit(2) are async-signal-safe; `s` is never freed.
            unsafe { libc::write(libc::STDERR_FILENO, s.as_ptr().cast(), s.len()) };
        }
        // SAFETY: as above.
        unsafe { libc::_exit(1) };
    }
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe { libc::signal(libc::SIGBUS, on_bus as extern "C" fn(libc::c_int) as libc::sighandler_t) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_as_its_bytes_and_lets_go_of_what_was_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let bytes: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let m = Mapped::open(&p).unwrap().unwrap();
        assert_eq!(m.bytes(), &bytes[..]);
        m.release_before(2 * 1024 * 1024 + 17);
        assert_eq!(m.bytes(), &bytes[..], "released pages read again from the file");
        std::fs::write(d.path().join("empty.jsonl"), b"").unwrap();
        assert!(Mapped::open(&d.path().join("empty.jsonl")).unwrap().is_none());
        let fifo = d.path().join("fifo.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(Mapped::open(&fifo).err().map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
    }

    #[test]
    fn only_regular_files_open_and_nothing_blocks() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("a.jsonl");
        std::fs::write(&file, b"{}\n").unwrap();
        assert!(open_regular(&file, Links::Follow).is_ok());
        let fifo = d.path().join("b.jsonl");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = open_regular(&fifo, Links::Follow).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "a FIFO with no writer is refused, not waited on");
        assert!(open_regular(d.path(), Links::Follow).is_err(), "a folder");
        let link = d.path().join("c.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&link, Links::Follow).is_ok());
        assert!(open_regular(&link, Links::Refuse).is_err());
        let (l1, l2) = (d.path().join("l1"), d.path().join("l2"));
        std::os::unix::fs::symlink(&l2, &l1).unwrap();
        std::os::unix::fs::symlink(&l1, &l2).unwrap();
        assert!(open_regular(&l1, Links::Follow).is_err(), "a symlink loop is an error");
    }

    #[test]
    fn bounded_reads_refuse_big_files() {
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; 5000]).unwrap();
        assert!(read_bounded(&big, 4096).is_err());
        let small = d.path().join("small");
        std::fs::write(&small, b"ok").unwrap();
        assert_eq!(read_bounded(&small, 4096).unwrap(), b"ok");
    }
}

/// Why `path` cannot be a session's folder, in a sentence; `None` when it can (an absolute
/// path to an existing folder this user can enter).
pub fn folder_problem(path: &str) -> Option<String> {
    let p = Path::new(path.trim());
    if path.trim().is_empty() {
        return Some("Choose a folder.".into());
    }
    if !p.is_absolute() {
        return Some("Give the whole path, starting with /.".into());
    }
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => match std::fs::read_dir(p) {
            Ok(_) => None,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Some("You may not open this folder.".into()),
            Err(e) => Some(format!("This folder cannot be read: {e}.")),
        },
        Ok(_) => Some("This is a file, not a folder.".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some("This folder does not exist.".into()),
        Err(e) => Some(format!("This folder cannot be read: {e}.")),
    }
}

#[cfg(test)]
mod folder_tests {
    use super::folder_problem;

    #[test]
    fn a_session_folder_must_be_an_existing_absolute_folder() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_str().unwrap();
        assert_eq!(folder_problem(dir), None);
        assert_eq!(folder_problem(&format!("{dir}/nope")).as_deref(), Some("This folder does not exist."));
        std::fs::write(d.path().join("f"), "x").unwrap();
        assert_eq!(folder_problem(&format!("{dir}/f")).as_deref(), Some("This is a file, not a folder."));
        assert_eq!(folder_problem("relative/path").as_deref(), Some("Give the whole path, starting with /."));
        assert_eq!(folder_problem("  ").as_deref(), Some("Choose a folder."));
    }
}
