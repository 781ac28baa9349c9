//! The roster and timelines read once, without watching (`mimesis ls`, `mimesis show`):
//! the engine's own reading (index, registry, recorded hook events, markers and status
//! files) with the chain links the fleet database kept. Changes nothing on disk.

use std::io;
use std::path::{Path, PathBuf};

use mimesis_core::chain::Link;
use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::session::TrackedSession;
use mimesis_core::status::Timeouts;
use mimesis_core::supervision::interrupted::Interrupted;
use mimesis_core::supervision::ledger::ProcessLedger;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::timeline::TimelineItem;
use mimesis_fleetdb::Db;
use mimesis_watch::{engine, scan, timeline_view};

/// The chain links the fleet database in `data_dir` kept (none when it cannot be read).
pub(crate) fn stored_links(data_dir: &Path) -> Vec<Link> {
    Db::open_read_only(&data_dir.join(mimesis_fleetdb::FILE_NAME))
        .ok()
        .and_then(|db| db.load_links().ok())
        .unwrap_or_default()
}

/// The supervised sessions a quit or a crash of Mimesis interrupted (issue 37), as the
/// data dir keeps them (its fleet database, and the file its fallback writes), each once.
pub fn interrupted(data_dir: &Path) -> Vec<Interrupted> {
    let mut all = Db::open_read_only(&data_dir.join(mimesis_fleetdb::FILE_NAME))
        .ok()
        .and_then(|db| db.interrupted_sessions().ok())
        .unwrap_or_default();
    for i in mimesis_fleetdb::ledger::FileLedger::new(data_dir).interrupted().unwrap_or_default() {
        if !all.iter().any(|a| a.session_id == i.session_id) {
            all.push(i);
        }
    }
    all
}

/// Every session under `roots` with its status at `now` (superseded ones included). The
/// sessions that a running face supervises (the app, a `mimesis run`, as published in
/// their metrics snapshots) carry its `supervision`.
pub fn roster(roots: &[PathBuf], data_dir: &Path, now: Timestamp) -> Vec<TrackedSession> {
    let mut rows = Vec::new();
    roster_each(roots, data_dir, now, |row| rows.push(row));
    rows
}

/// [`roster`], each row handed to `f` as it is derived, most recently active first (a big
/// roster is written out without ever holding every row).
pub fn roster_each(roots: &[PathBuf], data_dir: &Path, now: Timestamp, f: impl FnMut(TrackedSession)) {
    let supervised = supervised(roots, data_dir);
    let links = stored_links(data_dir);
    engine::roster_once_each(roots, Timeouts::default(), now, Some(data_dir), links, supervised, f);
}

/// The sessions the live supervisors of `data_dir` published, under one of `roots`.
fn supervised(roots: &[PathBuf], data_dir: &Path) -> Vec<(TranscriptLocation, Supervision)> {
    under_roots(
        roots,
        mimesis_supervise::metrics::collect(&mimesis_supervise::metrics::dir(data_dir), false).supervised,
    )
}

/// The published sessions whose transcripts are under one of `roots`, where they are.
pub(crate) fn under_roots(
    roots: &[PathBuf],
    published: Vec<mimesis_supervise::metrics::Published>,
) -> Vec<(TranscriptLocation, Supervision)> {
    let same = |a: &Path, b: &Path| {
        a == b || std::fs::canonicalize(a).ok().is_some_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
    };
    published
        .into_iter()
        .filter_map(|p| {
            let root = roots.iter().find(|r| same(r, &p.config_root))?;
            let location = TranscriptLocation::expected(root, Path::new(&p.supervision.cwd), &p.session_id);
            Some((location, p.supervision))
        })
        .collect()
}

/// The items of the earlier segments of the work chain of the transcript at `path`
/// (oldest first, each closed by its boundary), to show before its own.
pub fn chain_prefix(roots: &[PathBuf], data_dir: &Path, path: &Path, now: Timestamp) -> io::Result<Vec<TimelineItem>> {
    let segments = engine::chain_of(roots, Some(data_dir), stored_links(data_dir), path, now);
    timeline_view::chain_prefix(&segments)
}

/// The timeline of one transcript, with the answers given from Mimesis to its session
/// (the answers log of `data_dir`) placed by time.
pub fn read_timeline(path: &Path, data_dir: Option<&Path>) -> io::Result<Vec<TimelineItem>> {
    let session = path.file_stem().and_then(|s| s.to_str()).and_then(|s| SessionId::parse(s).ok());
    let notes = match (data_dir, session) {
        (Some(d), Some(id)) => timeline_view::answers_of(d, &id),
        _ => Vec::new(),
    };
    timeline_view::read_timeline(path, notes)
}

/// Every session transcript under `root`, without reading any.
pub fn discover(root: &Path) -> Vec<TranscriptLocation> {
    scan::discover(root)
}

/// Brings the terminal of a session running outside Mimesis forward (its tmux pane, kitty
/// window or WezTerm pane, as its hooks or its live registry entry name it). Returns what
/// was focused, or a sentence saying why nothing could be.
pub fn focus_terminal(roots: &[PathBuf], data_dir: &Path, id: &mimesis_core::SessionId) -> Result<String, FocusError> {
    let ctx = mimesis_watch::spool::read_all(data_dir)
        .into_iter()
        .rev()
        .find(|ev| &ev.session_id == id && !ev.terminal.is_empty())
        .map(|ev| ev.terminal);
    let registry_tmux = roots.iter().find_map(|r| {
        mimesis_watch::registry::read_dir(&mimesis_core::layout::sessions_dir(r))
            .into_iter()
            .filter(mimesis_watch::registry::alive)
            .find(|e| &e.session_id == id)
            .and_then(|e| e.tmux)
    });
    let plan = mimesis_core::focus::plan(ctx.as_ref(), registry_tmux.as_deref())?;
    for step in &plan.steps {
        let (program, args) = step.argv.split_first().ok_or(FocusError::Empty)?;
        let mut cmd = std::process::Command::new(program);
        mimesis_os::child_env::restore(&mut cmd);
        let out = cmd.args(args).stdin(std::process::Stdio::null()).output().map_err(|source| FocusError::Run {
            program: program.clone(),
            what: plan.what.clone(),
            source,
        })?;
        if !out.status.success() && !step.optional {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Err(FocusError::Failed { program: program.clone(), what: plan.what.clone(), why });
        }
    }
    Ok(format!("Brought {} forward.", plan.what))
}

/// Why a session's terminal was not brought forward: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum FocusError {
    #[error(transparent)]
    NoPlan(#[from] mimesis_core::focus::NoPlan),
    #[error("nothing to run")]
    Empty,
    #[error("cannot run {program} to bring {what} forward: {source}")]
    Run { program: String, what: String, source: std::io::Error },
    #[error("{program} could not bring {what} forward: {why}")]
    Failed { program: String, what: String, why: String },
}
