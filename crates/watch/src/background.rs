//! Claude Code's background service on disk (2.1.332): `<root>/jobs/<id>/state.json` and
//! `<root>/daemon/roster.json`, read and checked against the process table. What they mean
//! is `mimesis_core::job` and `mimesis_core::daemon`; the store merges them into rows.
//!
//! Folders are named only from validated job ids; files are opened as regular files of a
//! bounded size (never a FIFO, never through a symlink). A worker counts while its PTY host
//! is the very process the roster names (PID and start time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use mimesis_core::daemon::{self, Worker};
use mimesis_core::ids::JobId;
use mimesis_core::job::{self, JobState};
use mimesis_core::layout;
use mimesis_os::procs;

use crate::store::BackgroundFiles;

/// Job folders read per root; more are not looked at (the service keeps one per session
/// until `claude rm`).
pub const MAX_JOBS: usize = 4096;

/// A file's modification time, size and inode: a rewrite (in place or by rename) changes one.
type Stamp = (Option<SystemTime>, u64, u64);

/// Reads the background files of roots, re-parsing a job file only when its size or
/// modification time changed.
#[derive(Default)]
pub struct BackgroundReader {
    parsed: HashMap<PathBuf, (Stamp, Option<JobState>)>,
}

impl BackgroundReader {
    /// What `root`'s background files say now.
    pub fn read(&mut self, root: &Path) -> BackgroundFiles {
        let mut jobs = Vec::new();
        let mut seen = Vec::new();
        if let Ok(rd) = std::fs::read_dir(layout::jobs_dir(root)) {
            for e in rd.filter_map(Result::ok) {
                if jobs.len() >= MAX_JOBS {
                    break;
                }
                let Some(id) = e.file_name().to_str().and_then(|n| JobId::parse(n).ok()) else { continue };
                // A real folder only: a link could lead the reader anywhere.
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let path = layout::job_state_file(root, &id);
                seen.push(path.clone());
                if let Some(state) = self.state(&path) {
                    jobs.push((id, state));
                }
            }
        }
        jobs.sort_by(|a, b| a.0.cmp(&b.0));
        self.parsed.retain(|p, _| !p.starts_with(root) || seen.contains(p));
        BackgroundFiles { jobs, workers: running_workers(root) }
    }

    fn state(&mut self, path: &Path) -> Option<JobState> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let stamp = (meta.modified().ok(), meta.len(), std::os::unix::fs::MetadataExt::ino(&meta));
        if let Some((s, st)) = self.parsed.get(path)
            && *s == stamp
        {
            return st.clone();
        }
        let st = mimesis_os::files::read_bounded(path, job::MAX_STATE_BYTES).ok().and_then(|b| job::parse_state(&b));
        self.parsed.insert(path.to_owned(), (stamp, st.clone()));
        st
    }
}

/// The roster's workers whose PTY host runs (the roster stays behind, with its last
/// workers, when the service is killed).
pub fn running_workers(root: &Path) -> Vec<Worker> {
    let Ok(bytes) = mimesis_os::files::read_bounded(&layout::roster_file(root), daemon::MAX_ROSTER_BYTES) else {
        return Vec::new();
    };
    let Some(roster) = daemon::parse_roster(&bytes) else { return Vec::new() };
    roster.workers.into_iter().filter(|w| same_process(w.pid, w.proc_start.as_deref())).collect()
}

/// Is `pid` running, and started at `start` (`/proc` start ticks) when that is given?
pub fn same_process(pid: u32, start: Option<&str>) -> bool {
    if !procs::alive(pid) {
        return false;
    }
    match start.and_then(|s| s.parse::<u64>().ok()) {
        Some(ticks) => procs::start_ticks(pid) == Some(ticks),
        None => true,
    }
}

/// What a root's job files and roster say, read once (for `mimesis ls` and the verbs).
pub fn read_once(root: &Path) -> BackgroundFiles {
    BackgroundReader::default().read(root)
}

/// The job of a validated id in `root`, if its folder holds a readable state file.
pub fn job_state(root: &Path, id: &JobId) -> Option<JobState> {
    let bytes = mimesis_os::files::read_bounded(&layout::job_state_file(root, id), job::MAX_STATE_BYTES).ok()?;
    job::parse_state(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, s: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, s).unwrap();
    }

    #[test]
    fn reads_valid_job_folders_and_live_workers_only() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let sid = "aa2e1246-11cc-48b1-aa61-76af4aa5d5aa";
        write(
            &root.join("jobs/aa2e1246/state.json"),
            &format!(r#"{{"state":"done","tempo":"idle","sessionId":"{sid}"}}"#),
        );
        write(&root.join("jobs/not-a-job/state.json"), r#"{"state":"done"}"#);
        write(&root.join("jobs/bb2e1246/state.json"), "{torn");
        std::os::unix::fs::symlink("/etc/hostname", root.join("jobs/cc2e1246")).unwrap();
        let me = std::process::id();
        let ticks = procs::start_ticks(me).unwrap();
        write(
            &root.join("daemon/roster.json"),
            &format!(
                r#"{{"workers":{{"aa2e1246":{{"pid":{me},"procStart":"{ticks}","sessionId":"{sid}","attempt":1}},
                "dd2e1246":{{"pid":{me},"procStart":"1","sessionId":"dd2e1246-x"}}}}}}"#
            ),
        );
        let files = read_once(root);
        let jobs: Vec<&str> = files.jobs.iter().map(|(j, _)| j.as_str()).collect();
        assert_eq!(jobs, ["aa2e1246"]);
        let workers: Vec<&str> = files.workers.iter().map(|w| w.job.as_str()).collect();
        assert_eq!(workers, ["aa2e1246"], "a worker whose start time differs is not running");
    }

    #[test]
    fn a_job_file_is_parsed_again_only_when_it_changed() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("jobs/aa2e1246/state.json");
        write(&path, r#"{"state":"working"}"#);
        let mut r = BackgroundReader::default();
        assert_eq!(r.read(d.path()).jobs[0].1.state.as_deref(), Some("working"));
        write(&path, r#"{"state":"done"}"#);
        assert_eq!(r.read(d.path()).jobs[0].1.state.as_deref(), Some("done"));
        std::fs::remove_dir_all(d.path().join("jobs/aa2e1246")).unwrap();
        assert!(r.read(d.path()).jobs.is_empty());
        assert!(r.parsed.is_empty());
    }
}
