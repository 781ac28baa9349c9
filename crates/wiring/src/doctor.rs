//! `mimesis doctor`: is this installation able to watch Claude Code? Config roots found,
//! hooks installed, the Claude Code version, whether files can be watched, the fleet
//! database, the supervised processes on record and the supervisors publishing metrics.
//! Every check is bounded in time; none changes anything.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use mimesis_core::hook_event as hooks;
use mimesis_core::ids::SessionId;
use mimesis_core::layout as roots;
use mimesis_core::registry;
use mimesis_core::supervision::ledger::{self, ProcessLedger};
use mimesis_fleetdb::ledger::FileLedger;
use mimesis_fleetdb::{Db, DbStats};
use mimesis_hooks::install::{self, HookStatus};
use mimesis_supervise::metrics;
use mimesis_watch::{scan, spool};

/// `claude --version` is given this long.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RootReport {
    pub path: PathBuf,
    pub exists: bool,
    pub session_count: usize,
    pub hooks: HookStatus,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeCodeReport {
    /// The `claude` found on PATH.
    pub path: Option<PathBuf>,
    /// What `claude --version` printed.
    pub version: Option<String>,
    /// The version the newest session was written by (registry or transcript).
    pub seen_version: Option<String>,
    pub error: Option<String>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct WatcherReport {
    pub ok: bool,
    /// `/proc/sys/fs/inotify/max_user_watches`.
    pub max_user_watches: Option<u64>,
    pub error: Option<String>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SpoolReport {
    pub path: PathBuf,
    pub files: usize,
    pub events: usize,
    pub last_event_at: Option<mimesis_core::clock::Timestamp>,
}

/// One Mimesis process with supervised processes on record.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SupervisorReport {
    pub pid: u32,
    /// Still running; else the next start of a supervisor cleans up after it (P11).
    pub alive: bool,
    pub processes: usize,
    pub sessions: Vec<SessionId>,
}

/// Supervised sessions: what the ledger records and who publishes metrics.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct SupervisionReport {
    /// Agent processes recorded, over every supervisor (database and fallback files).
    pub recorded_processes: usize,
    /// Distinct sessions those processes run.
    pub recorded_sessions: usize,
    pub supervisors: Vec<SupervisorReport>,
    /// Running supervisors publishing metrics (`mimesis metrics` adds them up).
    pub metrics_publishers: Vec<metrics::Publisher>,
    /// Snapshots left by supervisors that are gone (removed by `mimesis metrics`).
    pub stale_metrics: usize,
    pub error: Option<String>,
}

/// The whole report (`mimesis doctor --json`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    pub mimesis_version: String,
    pub roots: Vec<RootReport>,
    pub claude_code: ClaudeCodeReport,
    pub watcher: WatcherReport,
    pub data_dir: PathBuf,
    /// The data dir's mode in octal (`"0700"`), `None` when it does not exist yet.
    pub data_dir_mode: Option<String>,
    /// Why other users can read the data dir ("… is readable by other users (mode 0755);
    /// run chmod 700 …"), or `None`. Mimesis makes its own files 0600 and folders 0700,
    /// but never changes the mode of a data dir it did not make.
    pub data_dir_open: Option<String>,
    pub database: DbStats,
    /// A running process that still has the database file open after it was deleted.
    pub database_deleted_under: Option<u32>,
    /// The search index (issue 35): said in `lines` and `problems`, not part of the JSON.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub search_index: crate::search::IndexStatus,
    pub hook_spool: SpoolReport,
    pub supervision: SupervisionReport,
}

impl DoctorReport {
    /// What was found, one line per part, in words (`mimesis doctor`, the window).
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        v.push(format!("mimesis {}", self.mimesis_version));
        for r in &self.roots {
            let hooks = if r.hooks.installed {
                "hooks installed"
            } else if r.hooks.partial {
                "hooks partly installed"
            } else {
                "hooks not installed"
            };
            let hooks = match &r.hooks.missing_program {
                Some(p) => format!("{hooks}, running {} which is not there", p.display()),
                None => hooks.to_owned(),
            };
            let state = if r.exists { format!("{} sessions, {hooks}", r.session_count) } else { "missing".to_owned() };
            v.push(format!("config folder {}: {state}", r.path.display()));
        }
        let c = &self.claude_code;
        v.push(format!(
            "Claude Code: {} (newest session written by {})",
            c.version.as_deref().unwrap_or("not on PATH"),
            c.seen_version.as_deref().unwrap_or("none")
        ));
        v.push(format!("file watching: {}", if self.watcher.ok { "ok" } else { "FAILING" }));
        let db = &self.database;
        v.push(format!(
            "database {}: {}, {} sessions, {} chain links, {} KB",
            db.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            db.health,
            db.sessions,
            db.chain_links,
            db.size_bytes / 1024
        ));
        v.push(search_line(&self.search_index));
        let last =
            self.hook_spool.last_event_at.map_or("none yet".to_owned(), |t| format!("the last at {}", t.to_iso()));
        v.push(format!("hook events recorded: {} ({last})", self.hook_spool.events));
        let sup = &self.supervision;
        let running = sup.supervisors.iter().filter(|s| s.alive).count();
        v.push(format!(
            "supervised: {} processes of {} sessions on record ({} supervisors, {running} running); \
             {} publishing metrics",
            sup.recorded_processes,
            sup.recorded_sessions,
            sup.supervisors.len(),
            sup.metrics_publishers.len()
        ));
        v
    }

    /// Problems a person should act on, in words.
    pub fn problems(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(open) = &self.data_dir_open {
            v.push(open.clone());
        }
        if !self.roots.iter().any(|r| r.exists) {
            v.push("no Claude Code config folder exists yet (run claude once, or pass --config-dir)".to_owned());
        }
        for r in &self.roots {
            if let Some(e) = &r.hooks.error {
                v.push(e.clone());
            } else if let Some(program) = &r.hooks.missing_program {
                // Removing Mimesis leaves the user's settings.json as it was: the hooks are
                // theirs to uninstall.
                v.push(format!(
                    "hooks in {} run {}, which is not installed; run `mimesis hooks uninstall` or reinstall Mimesis",
                    r.hooks.settings_path.display(),
                    program.display()
                ));
            } else if r.exists && !r.hooks.installed {
                v.push(format!(
                    "hooks are {} in {} (run `mimesis hooks install` for exact statuses and work chains)",
                    if r.hooks.partial { "partly installed" } else { "not installed" },
                    r.hooks.settings_path.display()
                ));
            }
        }
        if self.claude_code.version.is_none() && self.claude_code.seen_version.is_none() {
            v.push("no Claude Code found on PATH and no session shows its version".to_owned());
        }
        if !self.watcher.ok {
            v.push(format!(
                "files cannot be watched ({}); changes are found by rescanning",
                self.watcher.error.as_deref().unwrap_or("unknown error")
            ));
        }
        if !matches!(self.database.health, mimesis_fleetdb::DbHealth::Ok | mimesis_fleetdb::DbHealth::Missing) {
            v.push(format!("the fleet database {}", self.database.health));
        }
        if let Some(p) = &self.search_index.problem {
            v.push(format!("the search index {p}"));
        }
        if let Some(pid) = self.database_deleted_under {
            v.push(format!(
                "the fleet database was deleted while Mimesis (process {pid}) runs: it goes on with the deleted \
                 file and loses what it learned when it quits; restart it to make a new one"
            ));
        }
        let left: usize = self.supervision.supervisors.iter().filter(|s| !s.alive).map(|s| s.processes).sum();
        if left > 0 {
            v.push(format!(
                "{left} supervised processes of a Mimesis that is gone are on record; \
                 the next start of Mimesis (app or `mimesis run`) stops those still running"
            ));
        }
        if let Some(e) = &self.supervision.error {
            v.push(format!("the ledger of supervised processes cannot be read: {e}"));
        }
        v
    }
}

/// Runs every check. `db` is the engine's database when one runs; otherwise the file in
/// `data_dir` is opened.
pub fn run(roots: &[PathBuf], data_dir: &Path, db: Option<&Db>) -> DoctorReport {
    let roots_report: Vec<RootReport> = roots
        .iter()
        .map(|r| RootReport {
            path: r.clone(),
            exists: r.is_dir(),
            session_count: scan::discover(r).len(),
            hooks: install::status(r),
        })
        .collect();
    let mut claude = claude_on_path();
    claude.seen_version = seen_version(roots);
    let database = match db {
        Some(db) => db.stats(),
        None => Db::inspect(&data_dir.join(mimesis_fleetdb::FILE_NAME)),
    };
    let db_path = data_dir.join(mimesis_fleetdb::FILE_NAME);
    let database_deleted_under = match database.health {
        mimesis_fleetdb::DbHealth::Missing => deleted_file_holder(&db_path),
        _ => None,
    };
    let events = spool::read_all(data_dir);
    let supervision = supervision_check(data_dir, db);
    DoctorReport {
        mimesis_version: env!("CARGO_PKG_VERSION").to_owned(),
        roots: roots_report,
        claude_code: claude,
        watcher: watcher_check(roots),
        data_dir: data_dir.to_owned(),
        data_dir_mode: mimesis_os::private::mode_of(data_dir).map(|m| format!("{m:04o}")),
        data_dir_open: mimesis_os::private::open_to_others(data_dir),
        database,
        database_deleted_under,
        search_index: crate::search::status(data_dir),
        hook_spool: SpoolReport {
            path: hooks::spool_dir(data_dir),
            files: spool::spool_files(data_dir).len(),
            events: events.len(),
            last_event_at: events.iter().map(|e| e.at).max(),
        },
        supervision,
    }
}

/// A process of this user that holds `path` open although it was deleted (the kernel
/// shows such a descriptor's target as `<path> (deleted)`).
fn deleted_file_holder(path: &Path) -> Option<u32> {
    let wanted = format!("{} (deleted)", path.display());
    let me = std::process::id();
    for p in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        for fd in fds.filter_map(Result::ok) {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str().to_string_lossy() == wanted) {
                return Some(pid);
            }
        }
    }
    None
}

/// The ledger (database and fallback files, read only) and the metrics publishers.
fn supervision_check(data_dir: &Path, db: Option<&Db>) -> SupervisionReport {
    let mut report = SupervisionReport::default();
    let path = data_dir.join(mimesis_fleetdb::FILE_NAME);
    let opened = match db {
        Some(_) => None,
        None if path.exists() => Some(Db::open_read_only(&path)),
        None => None,
    };
    let from_db = match (db, &opened) {
        (Some(db), _) | (None, Some(Ok(db))) => db.load(),
        (None, Some(Err(e))) => Err(std::io::Error::other(e.to_string())),
        (None, None) => Ok(Vec::new()),
    };
    let mut all = from_db.unwrap_or_else(|e| {
        report.error = Some(e.to_string());
        Vec::new()
    });
    match FileLedger::new(data_dir).load() {
        Ok(files) => ledger::merge(&mut all, files),
        Err(e) => report.error = Some(e.to_string()),
    }
    let mut sessions = std::collections::HashSet::new();
    for (owner, records) in &all {
        report.recorded_processes += records.len();
        sessions.extend(records.iter().map(|r| r.session_id.clone()));
        let mut ids: Vec<SessionId> = records.iter().map(|r| r.session_id.clone()).collect();
        ids.sort();
        ids.dedup();
        report.supervisors.push(SupervisorReport {
            pid: owner.pid,
            alive: mimesis_os::owner::alive(owner),
            processes: records.len(),
            sessions: ids,
        });
    }
    report.recorded_sessions = sessions.len();
    let published = metrics::collect(&metrics::dir(data_dir), false);
    report.metrics_publishers = published.live;
    report.stale_metrics = published.stale.len();
    report
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn claude_on_path() -> ClaudeCodeReport {
    let Some(path) = find_on_path("claude") else { return ClaudeCodeReport::default() };
    let mut report = ClaudeCodeReport { path: Some(path.clone()), ..Default::default() };
    let mut cmd = Command::new(&path);
    mimesis_os::child_env::restore(&mut cmd);
    let child = cmd
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            report.error = Some(format!("cannot run {}: {e}", path.display()));
            return report;
        }
    };
    let deadline = Instant::now() + VERSION_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                // Our own child: stop it rather than wait longer.
                let _ = child.kill();
                let _ = child.wait();
                report.error =
                    Some(format!("`{} --version` did not answer within {VERSION_TIMEOUT:?}", path.display()));
                return report;
            }
        }
    }
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.by_ref().take(4096).read_to_string(&mut out);
    }
    report.version = out.split_whitespace().next().map(str::to_owned);
    report
}

/// The version the newest session shows: a live registry entry, else the last record of
/// the most recently written transcript.
fn seen_version(roots: &[PathBuf]) -> Option<String> {
    for r in roots {
        let dir = roots::sessions_dir(r);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.filter_map(Result::ok) {
            if registry::pid_of_file(&e.path()).is_none() {
                continue;
            }
            if let Ok(bytes) = mimesis_os::files::read_bounded(&e.path(), 1 << 20)
                && let Ok(v) = mimesis_core::json::from_slice::<serde_json::Value>(&bytes)
                && let Some(ver) = v.get("version").and_then(|v| v.as_str())
            {
                return Some(ver.to_owned());
            }
        }
    }
    let newest = roots
        .iter()
        .flat_map(|r| scan::discover(r))
        .filter_map(|l| Some((std::fs::metadata(&l.path).ok()?.modified().ok()?, l.path)))
        .max()?;
    // Only the end of the file: a transcript can be hundreds of MB.
    let mut file = mimesis_os::files::open_regular(&newest.1, mimesis_os::files::Links::Follow).ok()?;
    let len = file.metadata().ok()?.len();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(len.saturating_sub(64 * 1024))).ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 64 * 1024), &mut bytes).ok()?;
    bytes
        .split(|&b| b == b'\n')
        .rev()
        .filter_map(|l| mimesis_core::json::from_slice::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("version").and_then(|v| v.as_str()).map(str::to_owned))
}

fn watcher_check(roots: &[PathBuf]) -> WatcherReport {
    let max_user_watches =
        std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok().and_then(|s| s.trim().parse().ok());
    match mimesis_watch::watcher::probe(roots) {
        Ok(()) => WatcherReport { ok: true, max_user_watches, error: None },
        Err(e) => WatcherReport { ok: false, max_user_watches, error: Some(e.to_string()) },
    }
}

/// The search index in one line: its size, and why it was last built from nothing.
fn search_line(st: &crate::search::IndexStatus) -> String {
    if !st.exists {
        return "search index: not built yet (the first `mimesis search` or the window builds it)".to_owned();
    }
    if let Some(p) = &st.problem {
        return format!("search index: {p}");
    }
    let built = match &st.built {
        Some((why, at)) if why == "first build" => format!("built {at}"),
        Some((why, at)) => format!("built anew {at} because {why}"),
        None => "being built".to_owned(),
    };
    format!("search index: {} transcripts, {} texts, {} MB, {built}", st.files, st.docs, st.bytes / 1_000_000)
}
