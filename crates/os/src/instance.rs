//! One desktop app per data directory, known before anything else starts: an exclusive
//! `flock` on a file in it, held for the process's life (the kernel lets go of it when the
//! process ends, however it ends) and not passed to the programs the app starts (the file
//! is opened close-on-exec).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file's name in the data directory.
pub const LOCK_FILE: &str = "desktop.lock";

/// Takes the data directory's lock when no other process holds it: `Ok(Some(lock))`, to keep
/// while the app runs; `Ok(None)` when another process holds it.
pub fn try_lock(data_dir: &Path) -> io::Result<Option<File>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(data_dir.join(LOCK_FILE))?;
    loop {
        // SAFETY: a valid descriptor owned by `file`; flock changes no memory.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(file));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(None),
            _ => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_free_again_once_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = try_lock(dir.path()).unwrap().expect("free");
        // (flock locks belong to the open file: a second open is a second holder.)
        assert!(try_lock(dir.path()).unwrap().is_none(), "held");
        drop(first);
        assert!(try_lock(dir.path()).unwrap().is_some(), "free again");
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        assert!(try_lock(&dir.path().join("missing")).is_err());
    }
}
