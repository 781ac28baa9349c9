//! Finding transcripts under the config roots and indexing them in parallel (the cold
//! start of SPEC W2).

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::roots;
use crate::store::{IndexedFile, TranscriptLocation};

/// Every session transcript under `root` (`projects/<project>/<id>.jsonl`). Unreadable
/// folders are logged and skipped.
pub fn discover(root: &Path) -> Vec<TranscriptLocation> {
    let mut out = Vec::new();
    let projects = roots::projects_dir(root);
    let rd = match std::fs::read_dir(&projects) {
        Ok(rd) => rd,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %projects.display(), error = %e, "cannot list projects");
            }
            return out;
        }
    };
    for project in rd.filter_map(Result::ok) {
        if project.file_type().is_ok_and(|t| t.is_dir()) {
            discover_project(root, &project.path(), &mut out);
        }
    }
    out
}

/// The session transcripts directly inside one project folder.
pub fn discover_project(root: &Path, dir: &Path, out: &mut Vec<TranscriptLocation>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            tracing::warn!(path = %dir.display(), error = %e, "cannot list project folder");
            return;
        }
    };
    for f in rd.filter_map(Result::ok) {
        if f.file_type().is_ok_and(|t| t.is_file())
            && let Some(loc) = TranscriptLocation::of(root, &f.path())
        {
            out.push(loc);
        }
    }
}

/// Reads every transcript of every root, in parallel, biggest first so the threads
/// finish together.
pub fn index(roots: &[PathBuf]) -> Vec<IndexedFile> {
    let mut locations: Vec<(u64, TranscriptLocation)> = roots
        .iter()
        .flat_map(|r| discover(r))
        .map(|l| (std::fs::metadata(&l.path).map(|m| m.len()).unwrap_or(0), l))
        .collect();
    locations.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    index_locations(locations.into_iter().map(|(_, l)| l).collect())
}

/// Reads the given transcripts in parallel. Files that vanish meanwhile are skipped.
pub fn index_locations(locations: Vec<TranscriptLocation>) -> Vec<IndexedFile> {
    locations
        .into_par_iter()
        .filter_map(|loc| {
            let path = loc.path.clone();
            match IndexedFile::read(loc) {
                Ok(f) => Some(f),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot read transcript");
                    None
                }
            }
        })
        .collect()
}
