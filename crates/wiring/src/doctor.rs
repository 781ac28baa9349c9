//! `mimesis doctor`: is this installation able to watch Claude Code? Config roots found,
//! hooks installed, the Claude Code version, whether files can be watched, the fleet
//! database, the supervised processes on record and the supervisors publishing metrics.
//! Every check is bounded in time; none changes anything.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Local, TimeZone};
use serde::Serialize;

use mimesis_core::clock::{Clock, SystemClock, Timestamp};
use mimesis_core::hook_event as hooks;
use mimesis_core::ids::SessionId;
use mimesis_core::layout as roots;
use mimesis_core::registry;
use mimesis_core::spend::{plural as count, thousands};
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
    /// The `claude` Mimesis runs: on PATH, else where its installers put it
    /// (`mimesis_os::programs`).
    pub path: Option<PathBuf>,
    /// Whether `path` is on the PATH Mimesis was started with.
    pub on_path: bool,
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
    pub last_event_at: Option<Timestamp>,
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
        self.lines_at(SystemClock.now(), &Local)
    }

    /// [`Self::lines`] with moments said as on the day of `now` in `tz` (tests pick both).
    fn lines_at<Tz: TimeZone>(&self, now: Timestamp, tz: &Tz) -> Vec<String> {
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
            let state = if r.exists {
                format!("{}, {hooks}", count(r.session_count as u64, "session", "sessions"))
            } else {
                "not found".to_owned()
            };
            v.push(format!("config folder {}: {state}", r.path.display()));
        }
        let c = &self.claude_code;
        // A `claude` that is there but did not answer is not "not on PATH": say what happened.
        let mut found = c.version.as_deref().or(c.error.as_deref()).unwrap_or("not found").to_owned();
        // Found where its installer put it, not on the PATH: say where Mimesis runs it from.
        if let Some(path) = c.path.as_ref().filter(|_| !c.on_path) {
            found.push_str(&format!(" at {}, not on PATH", path.display()));
        }
        let seen = match &c.seen_version {
            Some(s) => format!("newest session written by {s}"),
            None => "no session shows its version yet".to_owned(),
        };
        v.push(format!("Claude Code: {found} ({seen})"));
        v.push(format!("file watching: {}", if self.watcher.ok { "ok" } else { "not working" }));
        let db = &self.database;
        let at = db.path.as_ref().map_or("in memory".to_owned(), |p| p.display().to_string());
        v.push(match db.health {
            // Nothing to count yet: "0 sessions, 0 B" would only repeat that.
            mimesis_fleetdb::DbHealth::Missing => format!("database {at}: {}", db.health),
            _ => format!(
                "database {at}: {}, {}, {}, {}",
                db.health,
                count(db.sessions, "session", "sessions"),
                count(db.chain_links, "link in work chains", "links in work chains"),
                size(db.size_bytes)
            ),
        });
        v.push(search_line(&self.search_index, now, tz));
        let s = &self.hook_spool;
        v.push(match s.last_event_at {
            Some(t) => format!(
                "Claude Code hook events: {} recorded, the last at {}",
                thousands(s.events as u64),
                moment(t, now, tz)
            ),
            None => "Claude Code hook events: none recorded yet".to_owned(),
        });
        v.push(supervision_line(&self.supervision));
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
            v.push(
                "no Claude Code found (on PATH or where its installers put it) and no session shows its version"
                    .to_owned(),
            );
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
                "{} started by a Mimesis that is gone {} still on record; \
                 the next start of Mimesis (the app or `mimesis run`) stops any that still run",
                count(left as u64, "supervised process", "supervised processes"),
                if left == 1 { "is" } else { "are" }
            ));
        }
        if let Some(e) = &self.supervision.error {
            v.push(format!("the record of supervised processes cannot be read: {e}"));
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
    let mut claude = claude_located();
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

fn claude_located() -> ClaudeCodeReport {
    use mimesis_os::programs;
    let Some(found) = programs::locate_here(Path::new(programs::CLAUDE)) else { return ClaudeCodeReport::default() };
    let path = found.program.clone();
    let mut report = ClaudeCodeReport { path: Some(path.clone()), on_path: found.on_path, ..Default::default() };
    let mut cmd = Command::new(&path);
    if let Some(p) = found.path_for_child(std::env::var_os("PATH").as_deref()) {
        cmd.env("PATH", p);
    }
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
fn search_line<Tz: TimeZone>(st: &crate::search::IndexStatus, now: Timestamp, tz: &Tz) -> String {
    if !st.exists {
        return "search index: not built yet (the first `mimesis search` or the window builds it)".to_owned();
    }
    if let Some(p) = &st.problem {
        return format!("search index: {p}");
    }
    // The index records when as RFC 3339; a value it cannot parse is shown as it is.
    let when = |at: &str| Timestamp::parse(at).map_or(at.to_owned(), |t| moment(t, now, tz));
    let built = match &st.built {
        Some((why, at)) if why == "first build" => format!("built at {}", when(at)),
        Some((why, at)) => format!("built anew at {} because {why}", when(at)),
        None => "being built".to_owned(),
    };
    format!(
        "search index: {} from {} ({}), {built}",
        count(st.docs, "session text", "session texts"),
        count(st.files, "transcript", "transcripts"),
        size(st.bytes)
    )
}

/// The supervised sessions in one line: how many are on record, whether the Mimesis that runs
/// them still runs, and how many running Mimesis processes report resource use.
fn supervision_line(sup: &SupervisionReport) -> String {
    let mut line = "supervised sessions: ".to_owned();
    if sup.recorded_processes == 0 {
        line.push_str("none yet");
    } else {
        let n = sup.supervisors.len();
        let running = sup.supervisors.iter().filter(|s| s.alive).count();
        let by = match (n, running) {
            (1, 1) => "a Mimesis that is running".to_owned(),
            (1, _) => "a Mimesis that is gone".to_owned(),
            (_, r) if r == n => format!("{n} Mimesis processes, all running"),
            (_, 0) => format!("{n} Mimesis processes, all gone"),
            (_, r) => format!("{n} Mimesis processes, {} of them gone", n - r),
        };
        line.push_str(&format!(
            "{} ({}), run by {by}",
            thousands(sup.recorded_sessions as u64),
            count(sup.recorded_processes as u64, "process", "processes"),
        ));
    }
    let reporting = sup.metrics_publishers.len();
    if reporting > 0 {
        line.push_str(&format!(
            "; {} {}",
            count(reporting as u64, "running Mimesis process", "running Mimesis processes"),
            if reporting == 1 { "reports resource use" } else { "report resource use" }
        ));
    }
    line
}

/// `t` as the window says a moment (`formatMoment` in ui/src/lib/format.ts), in the time zone
/// `tz`: "16:37:39" on the day of `now`, "3 Dec 2026, 16:37" on another day.
fn moment<Tz: TimeZone>(t: Timestamp, now: Timestamp, tz: &Tz) -> String {
    let local = |t: Timestamp| DateTime::from_timestamp_millis(t.millis()).map(|d| d.with_timezone(tz).naive_local());
    match (local(t), local(now)) {
        (Some(d), Some(n)) if d.date() == n.date() => d.format("%H:%M:%S").to_string(),
        (Some(d), _) => d.format("%-d %b %Y, %H:%M").to_string(),
        // Out of chrono's range: no local time to say.
        (None, _) => t.to_iso(),
    }
}

/// A size as the window's doctor writes it: "512 B", "12 KB", "3.4 MB", "1.2 GB".
fn size(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * KB;
    const GB: u64 = 1024 * MB;
    match bytes {
        b if b < KB => format!("{b} B"),
        b if b < MB => format!("{} KB", (b + KB / 2) / KB),
        b if b < GB => format!("{:.1} MB", b as f64 / MB as f64),
        b => format!("{:.1} GB", b as f64 / GB as f64),
    }
}

#[cfg(test)]
mod tests {
    use chrono::FixedOffset;

    use super::*;

    /// 3 Dec 2026, 16:37:39.139 UTC.
    const AT: &str = "2026-12-03T16:37:39.139Z";

    fn ts(iso: &str) -> Timestamp {
        Timestamp::parse(iso).unwrap()
    }

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    fn report() -> DoctorReport {
        let root = PathBuf::from("/home/me/.claude");
        DoctorReport {
            mimesis_version: "0.1.0".to_owned(),
            roots: vec![RootReport {
                path: root.clone(),
                exists: true,
                session_count: 1,
                hooks: HookStatus {
                    root: root.clone(),
                    settings_path: root.join("settings.json"),
                    installed: true,
                    partial: false,
                    error: None,
                    missing_program: None,
                },
            }],
            claude_code: ClaudeCodeReport { version: Some("2.1.197".to_owned()), ..Default::default() },
            watcher: WatcherReport { ok: true, max_user_watches: Some(65536), error: None },
            data_dir: PathBuf::from("/home/me/.local/share/mimesis"),
            data_dir_mode: Some("0700".to_owned()),
            data_dir_open: None,
            database: DbStats {
                path: Some(PathBuf::from("/home/me/.local/share/mimesis/fleet.db")),
                health: mimesis_fleetdb::DbHealth::Ok,
                size_bytes: 12 * 1024,
                sessions: 1,
                chain_links: 0,
                supervised_processes: 0,
                schema_version: 1,
            },
            database_deleted_under: None,
            search_index: crate::search::IndexStatus {
                exists: true,
                files: 12,
                docs: 238,
                bytes: 300_000,
                built: Some(("first build".to_owned(), "2026-12-03T16:33:44.725Z".to_owned())),
                problem: None,
            },
            hook_spool: SpoolReport {
                path: PathBuf::from("/home/me/.local/share/mimesis/hooks"),
                files: 1,
                events: 2,
                last_event_at: Some(ts(AT)),
            },
            supervision: SupervisionReport::default(),
        }
    }

    fn supervisor(pid: u32, alive: bool, processes: usize) -> SupervisorReport {
        SupervisorReport { pid, alive, processes, sessions: Vec::new() }
    }

    fn publisher(pid: u32) -> metrics::Publisher {
        metrics::Publisher {
            pid,
            start_ticks: 1,
            updated_at: ts(AT),
            sessions: 1,
            path: PathBuf::from(format!("/m/{pid}.json")),
        }
    }

    #[test]
    fn the_lines_say_times_sizes_and_counts_in_words() {
        let lines = report().lines_at(ts("2026-12-04T09:00:00Z"), &utc());
        assert_eq!(
            lines,
            [
                "mimesis 0.1.0",
                "config folder /home/me/.claude: 1 session, hooks installed",
                "Claude Code: 2.1.197 (no session shows its version yet)",
                "file watching: ok",
                "database /home/me/.local/share/mimesis/fleet.db: ok, 1 session, 0 links in work chains, 12 KB",
                "search index: 238 session texts from 12 transcripts (293 KB), built at 3 Dec 2026, 16:33",
                "Claude Code hook events: 2 recorded, the last at 3 Dec 2026, 16:37",
                "supervised sessions: none yet",
            ]
        );
        // No timestamp as the JSON writes it reaches the words.
        assert!(lines.iter().all(|l| !l.contains("2026-12-03T")), "{lines:?}");
    }

    #[test]
    fn a_claude_off_the_path_is_said_with_where_it_runs_from() {
        let mut r = report();
        r.claude_code.path = Some("/home/me/.nvm/versions/node/v22.3.0/bin/claude".into());
        let lines = r.lines_at(ts(AT), &utc());
        assert!(
            lines.contains(
                &"Claude Code: 2.1.197 at /home/me/.nvm/versions/node/v22.3.0/bin/claude, not on PATH (no session shows \
                  its version yet)"
                    .to_owned()
            ),
            "{lines:?}"
        );
        r.claude_code.on_path = true;
        assert!(
            r.lines_at(ts(AT), &utc()).contains(&"Claude Code: 2.1.197 (no session shows its version yet)".to_owned())
        );
        r.claude_code = ClaudeCodeReport::default();
        assert!(
            r.lines_at(ts(AT), &utc())
                .contains(&"Claude Code: not found (no session shows its version yet)".to_owned())
        );
        assert!(r.problems().iter().any(|p| p.starts_with("no Claude Code found")), "{:?}", r.problems());
    }

    #[test]
    fn a_moment_is_said_in_local_time_as_the_window_says_it() {
        // The same day: the time alone, to the second.
        assert_eq!(moment(ts(AT), ts("2026-12-03T20:00:00Z"), &utc()), "16:37:39");
        // Another day: the date and the minute.
        assert_eq!(moment(ts(AT), ts("2026-12-04T09:00:00Z"), &utc()), "3 Dec 2026, 16:37");
        // In the time zone given: UTC+9 is already the 4th at 01:37.
        let tokyo = FixedOffset::east_opt(9 * 3600).unwrap();
        assert_eq!(moment(ts(AT), ts("2026-12-04T09:00:00Z"), &tokyo), "01:37:39");
        assert_eq!(moment(ts("2026-09-05T08:04:00Z"), ts(AT), &utc()), "5 Sep 2026, 08:04");
    }

    #[test]
    fn the_search_index_says_why_it_was_built_anew_and_keeps_an_unreadable_time() {
        let mut st = report().search_index;
        st.built = Some(("the index was damaged".to_owned(), "2026-12-03T16:33:44.725Z".to_owned()));
        st.docs = 1;
        st.files = 1;
        st.bytes = 200;
        assert_eq!(
            search_line(&st, ts(AT), &utc()),
            "search index: 1 session text from 1 transcript (200 B), built anew at 16:33:44 because the index was damaged"
        );
        st.built = Some(("first build".to_owned(), "yesterday".to_owned()));
        assert!(search_line(&st, ts(AT), &utc()).ends_with("built at yesterday"));
    }

    #[test]
    fn the_supervised_sessions_are_said_in_plain_words() {
        let mut sup = SupervisionReport::default();
        assert_eq!(supervision_line(&sup), "supervised sessions: none yet");
        sup.metrics_publishers = vec![publisher(7)];
        assert_eq!(
            supervision_line(&sup),
            "supervised sessions: none yet; 1 running Mimesis process reports resource use"
        );
        sup.recorded_processes = 1;
        sup.recorded_sessions = 1;
        sup.supervisors = vec![supervisor(7, true, 1)];
        assert_eq!(
            supervision_line(&sup),
            "supervised sessions: 1 (1 process), run by a Mimesis that is running; \
             1 running Mimesis process reports resource use"
        );
        sup.metrics_publishers.clear();
        sup.supervisors = vec![supervisor(7, false, 1)];
        assert_eq!(supervision_line(&sup), "supervised sessions: 1 (1 process), run by a Mimesis that is gone");
        sup.recorded_processes = 3;
        sup.recorded_sessions = 2;
        sup.supervisors = vec![supervisor(7, false, 1), supervisor(8, true, 2)];
        sup.metrics_publishers = vec![publisher(8), publisher(9)];
        assert_eq!(
            supervision_line(&sup),
            "supervised sessions: 2 (3 processes), run by 2 Mimesis processes, 1 of them gone; \
             2 running Mimesis processes report resource use"
        );
    }

    #[test]
    fn problems_count_in_words() {
        let mut r = report();
        r.supervision.supervisors = vec![supervisor(7, false, 1)];
        r.supervision.error = Some("disk on fire".to_owned());
        assert_eq!(
            r.problems(),
            [
                "1 supervised process started by a Mimesis that is gone is still on record; the next start of \
                 Mimesis (the app or `mimesis run`) stops any that still run",
                "the record of supervised processes cannot be read: disk on fire",
            ]
        );
    }

    #[test]
    fn sizes_and_counts() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1 KB");
        assert_eq!(size(5 * 1024 * 1024 + 400 * 1024), "5.4 MB");
        assert_eq!(size(3 * 1024 * 1024 * 1024), "3.0 GB");
        assert_eq!(count(1, "session", "sessions"), "1 session");
        assert_eq!(count(1240, "session", "sessions"), "1,240 sessions");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
