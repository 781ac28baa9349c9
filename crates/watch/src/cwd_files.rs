//! Reading the files Mimesis cares about in a session's working folder,
//! `<cwd>/.claude/`: compaction markers and status files. Bounded, regular files only,
//! never through a symlink; what they mean is `mimesis_core::cwd_files`.

use std::path::Path;

use mimesis_core::cwd_files::Rejected;

/// Reads a regular file of at most `max` bytes, never following a symlink.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, Rejected> {
    mimesis_os::files::read_bounded(path, max).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => Rejected(e.to_string()),
        _ => Rejected(format!("cannot open: {e}")),
    })
}
