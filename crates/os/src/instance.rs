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
    let file =
        crate::private::options().read(true).write(true).create(true).truncate(false).open(data_dir.join(LOCK_FILE))?;
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

/// [`try_lock`] until `within` has passed: for an app that may be leaving (it handed its
/// window over to this one). `Ok(None)` when it is still held then.
pub fn lock_within(data_dir: &Path, within: std::time::Duration) -> io::Result<Option<File>> {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(lock) = try_lock(data_dir)? {
            return Ok(Some(lock));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_free_again_once_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = try_lock(dir.path()).unwrap().expect("free");
        assert_eq!(crate::private::mode_of(&dir.path().join(LOCK_FILE)), Some(0o600), "the user's alone");
        // (flock locks belong to the open file: a second open is a second holder.)
        assert!(try_lock(dir.path()).unwrap().is_none(), "held");
        drop(first);
        assert!(try_lock(dir.path()).unwrap().is_some(), "free again");
    }

    #[test]
    fn waiting_for_a_held_lock_gives_up_at_the_deadline_and_takes_a_free_one() {
        let dir = tempfile::tempdir().unwrap();
        let held = try_lock(dir.path()).unwrap().expect("free");
        assert!(lock_within(dir.path(), std::time::Duration::ZERO).unwrap().is_none());
        drop(held);
        assert!(lock_within(dir.path(), std::time::Duration::ZERO).unwrap().is_some());
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        assert!(try_lock(&dir.path().join("missing")).is_err());
    }
}
