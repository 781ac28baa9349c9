//! Files and folders Mimesis keeps for itself — the fleet database and its SQLite
//! companions, the hook spool and log, the ledger and metrics files, the lock, the window's
//! place, demo sessions, an events file it creates — readable by this user alone, whatever
//! the umask: a file is made 0600 and a folder 0700 when Mimesis creates it, and a file it
//! made earlier with looser bits (an older Mimesis, a umask of 022) is tightened when it is
//! opened again. Never for the user's own files or Claude Code's (settings.json keeps the
//! mode it has).
//!
//! Why each writer asks for its mode rather than the process setting `umask(077)` at
//! start: the umask is inherited by every program Mimesis starts (the agent and the tools
//! it runs, ssh, the browser), so the files Claude Code writes into a project would be
//! private too; and a pseudo-terminal's child cannot be given another one back before it
//! runs. SQLite creates the database file with 0644 less the umask, but its `-wal`,
//! `-shm` and `-journal` files with the database file's own mode (`robust_open` in
//! SQLite's unix VFS): so [`sqlite_file`] creates the database file 0600 before SQLite
//! opens it, and the companions follow it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A private file's mode.
pub const FILE_MODE: u32 = 0o600;
/// A private folder's mode.
pub const DIR_MODE: u32 = 0o700;
/// The bits that let group or others in.
const OTHERS: u32 = 0o077;

/// Creates `dir` and its missing parents, each 0700. One that exists is left as it is (the
/// data dir may be one the user made: `mimesis doctor` says when others can read it).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// [`create_dir_all`], and `dir` itself tightened to 0700 when it exists with looser bits:
/// for a folder of Mimesis's own inside the data dir (`spool`, `metrics`, `supervised`,
/// `demo`), never for the data dir itself.
pub fn own_dir(dir: &Path) -> io::Result<()> {
    create_dir_all(dir)?;
    tighten(dir)
}

/// Options that create a file 0600 (the mode only applies when the file is created).
pub fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// Opens `path` to append to, creating it 0600; an existing one others can read is
/// tightened.
pub fn append(path: &Path) -> io::Result<File> {
    let f = options().create(true).append(true).open(path)?;
    tighten_open(&f)?;
    Ok(f)
}

/// Replaces `path`'s content with `bytes` in place, creating it 0600 (tightening an
/// existing one).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = options().create(true).write(true).truncate(true).open(path)?;
    tighten_open(&f)?;
    f.write_all(bytes)
}

/// Replaces `path` with a file of `bytes`, atomically: written 0600 to `<path>.tmp` beside
/// it, then renamed over it, so a reader (or a crash mid-write) never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_of(path);
    let result = write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The temporary file [`write_atomic`] writes first: `window.json` → `window.json.tmp`.
pub fn tmp_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Removes the group and other bits of `path` (a file or folder Mimesis made), if it has
/// any. A missing path is fine.
pub fn tighten(path: &Path) -> io::Result<()> {
    let mode = match std::fs::metadata(path) {
        Ok(m) => m.permissions().mode(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if mode & OTHERS == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7700))
}

/// [`tighten`] on an open file.
fn tighten_open(f: &File) -> io::Result<()> {
    let mode = f.metadata()?.permissions().mode();
    if mode & OTHERS == 0 {
        return Ok(());
    }
    f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7700))
}

/// The files SQLite keeps beside a database.
pub const SQLITE_COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Readies the SQLite database at `path` to be opened: its folder made (0700) if missing,
/// the file created empty and 0600 if missing (SQLite takes an empty file for a new
/// database, and makes its `-wal`, `-shm` and `-journal` with the database file's mode),
/// and an existing file and companions tightened (a database an older Mimesis made 0644).
pub fn sqlite_file(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir_all(dir)?;
    }
    match options().create(true).write(true).truncate(false).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(f) => tighten_open(&f)?,
        // A symlink the user made to keep the database elsewhere, or a read-only file
        // (which SQLite reports in its own words): left as they are.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EACCES | libc::EROFS)) => {}
        Err(e) => return Err(e),
    }
    for side in SQLITE_COMPANIONS {
        let mut p = path.as_os_str().to_owned();
        p.push(side);
        tighten(Path::new(&p))?;
    }
    Ok(())
}

/// Why `dir` (the data dir) lets other users in, as a sentence for `mimesis doctor`; `None`
/// when only its owner may read or enter it (or it does not exist).
pub fn open_to_others(dir: &Path) -> Option<String> {
    let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o7777;
    if mode & OTHERS == 0 {
        return None;
    }
    let how = if mode & 0o044 != 0 { "readable by" } else { "open to" };
    Some(format!("{} is {how} other users (mode {mode:04o}); run chmod 700 {}", dir.display(), dir.display()))
}

/// The mode bits of `path` (`0o700`), if it exists.
pub fn mode_of(path: &Path) -> Option<u32> {
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every test runs under a umask that would make files 0644 and folders 0755.
    fn loose_umask() -> impl Drop {
        struct Restore(libc::mode_t);
        impl Drop for Restore {
            fn drop(&mut self) {
                // SAFETY: umask has no preconditions.
                unsafe { libc::umask(self.0) };
            }
        }
        // SAFETY: umask has no preconditions. (Tests in this crate create files only
        // through this module or with explicit modes, so a parallel test is unaffected.)
        Restore(unsafe { libc::umask(0o022) })
    }

    #[test]
    fn what_mimesis_creates_is_its_users_alone_whatever_the_umask() {
        let _u = loose_umask();
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b");
        create_dir_all(&deep).unwrap();
        assert_eq!(mode_of(&d.path().join("a")), Some(0o700));
        assert_eq!(mode_of(&deep), Some(0o700));
        append(&deep.join("log")).unwrap().write_all(b"x").unwrap();
        write(&deep.join("w"), b"x").unwrap();
        write_atomic(&deep.join("atomic.json"), b"{}").unwrap();
        for f in ["log", "w", "atomic.json"] {
            assert_eq!(mode_of(&deep.join(f)), Some(0o600), "{f}");
        }
        assert!(!tmp_of(&deep.join("atomic.json")).exists());
        // A second call on an existing folder is fine.
        create_dir_all(&deep).unwrap();
    }

    #[test]
    fn files_made_loose_earlier_are_tightened_and_a_users_folder_is_not() {
        let _u = loose_umask();
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let own = data.join("metrics");
        std::fs::create_dir(&own).unwrap();
        let file = data.join("events.jsonl");
        std::fs::write(&file, b"old\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        append(&file).unwrap();
        assert_eq!(mode_of(&file), Some(0o600));
        create_dir_all(&data).unwrap();
        assert_eq!(mode_of(&data), Some(0o755), "the data dir is the user's: doctor warns instead");
        assert!(open_to_others(&data).unwrap().contains("is readable by other users (mode 0755); run chmod 700"));
        own_dir(&own).unwrap();
        assert_eq!(mode_of(&own), Some(0o700), "a folder of Mimesis's own is tightened");
        // A read-only file stays read-only: only group and other bits go.
        let ro = data.join("ro");
        std::fs::write(&ro, b"").unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        tighten(&ro).unwrap();
        assert_eq!(mode_of(&ro), Some(0o400));
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(open_to_others(&data), None);
    }

    #[test]
    fn a_sqlite_file_is_created_private_and_its_companions_tightened() {
        let _u = loose_umask();
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("new/fleet.db");
        sqlite_file(&db).unwrap();
        assert_eq!(mode_of(&db), Some(0o600));
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "an empty file: SQLite makes the database in it");
        assert_eq!(mode_of(db.parent().unwrap()), Some(0o700));
        let wal = d.path().join("new/fleet.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        sqlite_file(&db).unwrap();
        assert_eq!((mode_of(&db), mode_of(&wal)), (Some(0o600), Some(0o600)));
    }
}
