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

#[cfg(test)]
mod tests {
    use super::*;

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
