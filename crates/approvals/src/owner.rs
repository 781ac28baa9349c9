//! Which face of a data dir serves its permission socket: the one holding an exclusive
//! lock on `approvals.lock` beside it. The holder removes whatever socket a face before it
//! left (a killed face's) and binds; a face that finds the lock taken waits for it in a
//! thread of its own (blocked in the kernel: no timer) and takes over the moment the holder
//! stops or dies. On its way out a face removes the socket if it is still the one it bound.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

/// The lock file beside the socket.
pub const LOCK: &str = "approvals.lock";

/// The held lock: released when dropped (or when the process ends, however it ends).
pub struct Lock {
    _file: File,
}

fn open(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

impl Lock {
    /// The lock if no other face holds it.
    pub fn try_take(path: &Path) -> std::io::Result<Option<Lock>> {
        let f = open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Lock { _file: f })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Waits (blocked) until the lock is ours.
    pub fn wait(path: &Path) -> std::io::Result<Lock> {
        let f = open(path)?;
        f.lock()?;
        Ok(Lock { _file: f })
    }
}

/// The socket this face bound, known by its file's identity, so that it removes only its own.
pub struct Bound {
    path: PathBuf,
    id: (u64, u64),
}

impl Bound {
    /// Binds the socket at `path` (replacing a dead face's) and makes it the owner's only.
    /// (Connecting needs write permission on the socket: under the usual umask nobody else
    /// has it even before the chmod, and every connection's peer uid is checked besides.)
    pub fn bind(path: &Path) -> std::io::Result<(UnixListener, Bound)> {
        match std::fs::remove_file(path) {
            Ok(()) => tracing::info!(socket = %path.display(), "removed the permission socket a stopped Mimesis left"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let m = std::fs::symlink_metadata(path)?;
        Ok((listener, Bound { path: path.to_owned(), id: (m.dev(), m.ino()) }))
    }

    /// Whether the socket at the path is still the one bound here.
    pub fn still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id)
    }

    /// Removes the socket if it is still the one bound here.
    pub fn remove(&self) {
        if self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
