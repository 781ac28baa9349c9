//! Where Claude Code keeps things inside a config root (docs/claude-code-formats.md §1):
//! `<root>/projects/<encoded cwd>/<session id>.jsonl` for transcripts and
//! `<root>/sessions/<pid>.json` for the live registry. Pure path arithmetic: nothing here
//! looks at the disk, and no path is built from an unchecked id.

use std::path::{Path, PathBuf};

use crate::ids::SessionId;

/// The folder of a root that holds its projects.
pub fn projects_dir(root: &Path) -> PathBuf {
    root.join("projects")
}

/// The name of a cwd's folder under `projects/`: every character that is not ASCII
/// alphanumeric becomes `-` (`/home/me/.agents` -> `-home-me--agents`). Lossy: never decode it.
pub fn project_dir_name(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The folder of a root that holds the live process registry.
pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join("sessions")
}

/// The background service's job folders (2.1.332): `<root>/jobs/<job id>/state.json`.
pub fn jobs_dir(root: &Path) -> PathBuf {
    root.join("jobs")
}

/// A job's state file. The id is validated: no path is built from unchecked text.
pub fn job_state_file(root: &Path, job: &crate::ids::JobId) -> PathBuf {
    jobs_dir(root).join(job.as_str()).join("state.json")
}

/// The background service's folder: `<root>/daemon/roster.json`.
pub fn daemon_dir(root: &Path) -> PathBuf {
    root.join("daemon")
}

/// The roster of the service's running sessions.
pub fn roster_file(root: &Path) -> PathBuf {
    daemon_dir(root).join("roster.json")
}

/// The service's status file, there while it runs.
pub fn daemon_status_file(root: &Path) -> PathBuf {
    root.join("daemon.status.json")
}

/// Where a transcript file sits: `<root>/projects/<project>/<id>.jsonl`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TranscriptLocation {
    pub root: PathBuf,
    pub project_id: String,
    pub session_id: SessionId,
    pub path: PathBuf,
}

impl TranscriptLocation {
    /// Where Claude Code will write the transcript of session `id` started in `cwd`
    /// (docs/claude-code-formats.md §1). Cwds over 200 characters get a hashed folder
    /// name from the CLI, which this does not reproduce: the store then follows the real
    /// file when it appears.
    pub fn expected(root: &Path, cwd: &Path, id: &SessionId) -> TranscriptLocation {
        let project_id = project_dir_name(cwd);
        let path = projects_dir(root).join(&project_id).join(format!("{id}.jsonl"));
        TranscriptLocation { root: root.to_owned(), project_id, session_id: id.clone(), path }
    }

    /// Recognises a session transcript path under `root`. Sub-agent files
    /// (`agent-*.jsonl`, anything deeper than the project folder) and names that are not
    /// valid session ids are not sessions.
    pub fn of(root: &Path, path: &Path) -> Option<TranscriptLocation> {
        let rel = path.strip_prefix(projects_dir(root)).ok()?;
        let mut parts = rel.components();
        let project = parts.next()?.as_os_str().to_str()?;
        let file = parts.next()?.as_os_str().to_str()?;
        if parts.next().is_some() {
            return None;
        }
        let stem = file.strip_suffix(".jsonl")?;
        if stem.starts_with("agent-") {
            return None;
        }
        let session_id = SessionId::parse(stem).ok()?;
        Some(TranscriptLocation {
            root: root.to_owned(),
            project_id: project.to_owned(),
            session_id,
            path: path.to_owned(),
        })
    }
}

/// A cwd from an untrusted place (a transcript, a hook payload), usable as a folder path:
/// absolute, at most 4096 bytes, no `.` or `..` parts, no NUL. Lexical only: whether the
/// folder exists is for the caller to see.
pub fn checked_cwd(cwd: &str) -> Result<PathBuf, CwdError> {
    let p = Path::new(cwd);
    if cwd.is_empty() || cwd.len() > 4096 || cwd.contains('\0') || !p.is_absolute() {
        return Err(CwdError::NotAbsolute(cwd.to_owned()));
    }
    if p.components().any(|c| matches!(c, std::path::Component::ParentDir | std::path::Component::CurDir)) {
        return Err(CwdError::DotParts(cwd.to_owned()));
    }
    Ok(p.to_owned())
}

/// Why an untrusted cwd is not usable as a folder path (each variant holds the cwd given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CwdError {
    #[error("cwd {0:?} is not an absolute path")]
    NotAbsolute(String),
    #[error("cwd {0:?} has '.' or '..' parts")]
    DotParts(String),
}
