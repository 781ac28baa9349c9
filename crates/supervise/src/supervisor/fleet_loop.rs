//! The fleet task of the supervisor: the fleet-wide rules on a timer (the live-session cap,
//! the disk, orphans), the metrics snapshot, and the recorder that keeps the process ledger,
//! the events and the metrics on disk off the sessions' path.

use super::*;

/// Metrics are published this long after a change (a burst of changes, one write). Not
/// a supervision timer: it only spaces out writes, like the monitor's screen reads.
const METRICS_SETTLE: Duration = Duration::from_millis(250);

/// What the fleet task does with the metrics snapshot at a look.
#[derive(Debug, PartialEq)]
struct MetricsPlan<I> {
    /// Write it (it changed, or it was never written, or not for [`metrics::REFRESH`]).
    write: bool,
    /// When to look again (a change announced sooner is looked at sooner).
    next: I,
}

/// The metrics snapshot at `now`, `last` the one written (and when). Unchanged, it is not
/// written again before [`metrics::REFRESH`]. Only a process's memory changes unannounced
/// (the resources view samples it): while one runs, the next look is a
/// [`metrics::HEARTBEAT`] away; without, every change is a message, and an idle app does
/// not wake for this.
fn metrics_plan<I, S>(last: Option<(I, &S)>, state: &S, running: bool, now: I) -> MetricsPlan<I>
where
    I: Copy + PartialOrd + std::ops::Add<Duration, Output = I>,
    S: PartialEq,
{
    let write = !last.is_some_and(|(at, s)| s == state && now < at + metrics::REFRESH);
    MetricsPlan { write, next: now + if running { metrics::HEARTBEAT } else { metrics::REFRESH } }
}

/// The fleet task: the cap, disk and orphan checks, the ledger and the metrics.
pub(super) async fn fleet_task(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<FleetMsg>) {
    let mut records: Vec<ProcessRecord> = Vec::new();
    let mut orphans = OrphanWatch::default();
    let mut disk = DiskWatch::default();
    let limits = shared.limits();
    let mut next_disk = shared.clock.mono().plus(limits.disk_check);
    let mut next_orphans = shared.clock.mono().plus(limits.orphan_check);
    let publishing = shared.config.metrics_dir.is_some();
    // Published at once, so `mimesis metrics` sees this supervisor from its start; then
    // soon after each change, and at least every heartbeat.
    let mut publish_at = tokio::time::Instant::now();
    // What was last written, and when.
    let mut written: Option<(tokio::time::Instant, (Vec<metrics::Published>, Metrics))> = None;
    let soon = |at: tokio::time::Instant| at.min(tokio::time::Instant::now() + METRICS_SETTLE);
    loop {
        let wake = shared.instant_at(next_disk.min(next_orphans));
        let mut tick_reply = None;
        tokio::select! {
            msg = rx.recv() => match msg {
                None | Some(FleetMsg::Stop) => break,
                Some(FleetMsg::Changed) => {
                    enforce_cap(&shared);
                    publish_at = soon(publish_at);
                    continue;
                }
                Some(FleetMsg::Metrics) => {
                    publish_at = soon(publish_at);
                    continue;
                }
                Some(FleetMsg::LimitsChanged) => {
                    // New intervals count from now, never later than already planned.
                    let (now, l) = (shared.clock.mono(), shared.limits());
                    next_disk = next_disk.min(now.plus(l.disk_check));
                    next_orphans = next_orphans.min(now.plus(l.orphan_check));
                    enforce_cap(&shared);
                    continue;
                }
                Some(FleetMsg::ProcessStarted(r)) => {
                    orphans.started(r.pid, r.start_ticks);
                    records.push(r);
                    shared.recorder.processes(records.clone());
                    continue;
                }
                Some(FleetMsg::ProcessEnded { pid }) => {
                    records.retain(|r| r.pid != pid);
                    shared.recorder.processes(records.clone());
                    continue;
                }
                Some(FleetMsg::Tick(reply)) => tick_reply = Some(reply),
            },
            _ = tokio::time::sleep_until(publish_at), if publishing => {
                // (The count first: a guard in the literal would live through `metrics()`.)
                let supervised: Vec<metrics::Published> = lock(&shared.sessions)
                    .iter()
                    .map(|(id, e)| metrics::Published {
                        session_id: id.clone(),
                        config_root: shared.config.config_root.clone(),
                        supervision: e.supervision.clone(),
                    })
                    .collect();
                let running = supervised.iter().any(|p| p.supervision.pid.is_some());
                let state = (supervised, shared.metrics());
                let now = tokio::time::Instant::now();
                let plan = metrics_plan(written.as_ref().map(|(at, last)| (*at, last)), &state, running, now);
                if plan.write {
                    let (supervised, metrics) = state.clone();
                    shared.recorder.metrics(metrics::Snapshot {
                        owner: shared.recorder.owner.clone(),
                        updated_at: shared.clock.now(),
                        sessions: supervised.len(),
                        metrics,
                        supervised,
                    });
                    written = Some((now, state));
                }
                publish_at = plan.next;
                continue;
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
        let now = shared.clock.mono();
        let limits = shared.limits();
        if next_disk <= now {
            next_disk = now.plus(limits.disk_check);
            check_disk(&shared, &mut disk).await;
        }
        if next_orphans <= now {
            next_orphans = now.plus(limits.orphan_check);
            scan_orphans(&shared, &mut orphans).await;
        }
        if let Some(reply) = tick_reply {
            let _ = reply.send(());
        }
    }
}

pub(super) enum RecordMsg {
    Processes(Vec<ProcessRecord>),
    Metrics(metrics::Snapshot),
    /// Appended to the events file, every one.
    Event(Arc<SupervisionEvent>),
    /// Forget the records, withdraw the metrics, and stop.
    Finish(oneshot::Sender<()>),
    /// Record these sessions as interrupted (before a `Finish` sent after it).
    Mark(Vec<Interrupted>),
    /// Forget these sessions' interrupted marks.
    Clear(Vec<SessionId>),
}

/// Writes the ledger and the metrics snapshot on a thread of its own: a database busy
/// with another Mimesis process (up to its busy timeout) or a slow disk never holds up
/// the fleet task. Writes collapse to the latest state; a failed ledger write is retried.
pub(super) struct Recorder {
    tx: std::sync::mpsc::Sender<RecordMsg>,
    pub(super) owner: Owner,
}

/// A ledger write that failed is tried again after this long.
const RECORD_RETRY: Duration = Duration::from_secs(1);

impl Recorder {
    pub(super) fn start(ledger: Arc<dyn ProcessLedger>, owner: Owner, metrics_dir: Option<PathBuf>) -> Recorder {
        let (tx, rx) = std::sync::mpsc::channel::<RecordMsg>();
        let me = owner.clone();
        let run = move || {
            let mut processes: Option<Vec<ProcessRecord>> = None;
            let mut failing = false;
            loop {
                let first = if processes.is_some() {
                    match rx.recv_timeout(RECORD_RETRY) {
                        Ok(m) => Some(m),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                } else {
                    match rx.recv() {
                        Ok(m) => Some(m),
                        Err(_) => return,
                    }
                };
                let (mut snapshot, mut finish, mut events) = (None, None, Vec::new());
                for msg in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
                    match msg {
                        RecordMsg::Processes(p) => processes = Some(p),
                        RecordMsg::Metrics(m) => snapshot = Some(m),
                        RecordMsg::Event(e) => events.push((*e).clone()),
                        RecordMsg::Finish(ack) => finish = Some(ack),
                        RecordMsg::Mark(m) => {
                            if let Err(e) = ledger.mark_interrupted(&m) {
                                tracing::warn!(error = %e, "could not record the sessions this quit interrupts");
                            }
                        }
                        RecordMsg::Clear(ids) => {
                            if let Err(e) = ledger.clear_interrupted(&ids) {
                                tracing::debug!(error = %e, "could not forget the interrupted marks");
                            }
                        }
                    }
                }
                if let Some(dir) = &metrics_dir
                    && let Err(e) = metrics::append_events(dir, &me, &events)
                {
                    tracing::debug!(error = %e, "could not record the supervision events");
                }
                if let Some(ack) = finish {
                    if let Err(e) = ledger.forget(&me) {
                        tracing::warn!(error = %e, "could not clear the ledger of supervised processes");
                    }
                    if let Some(dir) = &metrics_dir {
                        let _ = metrics::withdraw(dir, &me);
                    }
                    let _ = ack.send(());
                    return;
                }
                if let Some(records) = &processes {
                    match ledger.save(&me, records) {
                        Ok(()) => {
                            processes = None;
                            failing = false;
                        }
                        Err(e) if !failing => {
                            failing = true;
                            tracing::warn!(error = %e, "could not record the supervised processes; a crash of Mimesis could leave them running");
                        }
                        Err(_) => {}
                    }
                }
                if let (Some(snapshot), Some(dir)) = (snapshot, &metrics_dir)
                    && let Err(e) = metrics::publish(dir, &snapshot)
                {
                    tracing::debug!(error = %e, "could not publish the metrics");
                }
            }
        };
        if let Err(e) = std::thread::Builder::new().name("mimesis-ledger".into()).spawn(run) {
            tracing::error!(error = %e, "cannot start the ledger thread; supervised processes are not recorded");
        }
        Recorder { tx, owner }
    }

    pub(super) fn processes(&self, records: Vec<ProcessRecord>) {
        let _ = self.tx.send(RecordMsg::Processes(records));
    }

    pub(super) fn metrics(&self, snapshot: metrics::Snapshot) {
        let _ = self.tx.send(RecordMsg::Metrics(snapshot));
    }

    pub(super) fn event(&self, ev: Arc<SupervisionEvent>) {
        let _ = self.tx.send(RecordMsg::Event(ev));
    }

    pub(super) fn send(&self, msg: RecordMsg) {
        let _ = self.tx.send(msg);
    }

    /// Forgets this supervisor's records and withdraws its metrics, after every write
    /// asked for before. Waits a few seconds at most.
    pub(super) async fn finish(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(RecordMsg::Finish(ack)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), done).await;
        }
    }
}

/// P7: over the cap, the least recently used idle sessions are suspended.
fn enforce_cap(shared: &Shared) {
    let (entries, senders): (Vec<CapEntry>, HashMap<SessionId, _>) = {
        let sessions = lock(&shared.sessions);
        (
            sessions.values().map(|e| e.cap.clone()).collect(),
            sessions.iter().map(|(k, e)| (k.clone(), e.tx.clone())).collect(),
        )
    };
    for id in fleet::over_cap(shared.limits().max_live_sessions, &entries) {
        tracing::info!(session = %id, "over the live-session cap: suspending the least recently used idle session");
        if let Some(tx) = senders.get(&id) {
            let _ = tx.send(SessionCmd::Control(Input::Suspend));
        }
    }
}

/// P10 (EC-023).
async fn check_disk(shared: &Arc<Shared>, watch: &mut DiskWatch) {
    let root = shared.config.config_root.clone();
    let percent =
        tokio::task::spawn_blocking(move || root.ancestors().find(|p| p.exists()).and_then(procs::disk_usage_percent))
            .await
            .ok()
            .flatten();
    let Some(percent) = percent else { return };
    let l = shared.limits();
    for action in watch.usage(percent, l.disk_warn_percent, l.disk_cleanup_percent) {
        let live: Vec<(SessionId, mpsc::UnboundedSender<SessionCmd>)> = lock(&shared.sessions)
            .iter()
            .filter(|(_, e)| e.supervision.pid.is_some())
            .map(|(k, e)| (k.clone(), e.tx.clone()))
            .collect();
        match action {
            DiskAction::Warn(p) => {
                for (id, _) in &live {
                    tracing::warn!("Disk usage for session {id} at {p}%");
                    shared.emit(SupervisionEvent {
                        kind: EventKind::SessionWarning {
                            reason: "disk".into(),
                            remaining_seconds: None,
                            message: wording::disk_warning(p),
                        },
                        session_id: id.clone(),
                        at: shared.clock.now(),
                    });
                }
            }
            DiskAction::CleanupSnapshots => {
                let dir = shared.config.config_root.join("shell-snapshots");
                let now = shared.clock.now();
                let _ = tokio::task::spawn_blocking(move || {
                    let files: Vec<PathBuf> =
                        std::fs::read_dir(&dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
                    for f in fleet::old_snapshots(&files, now, Duration::from_secs(24 * 3600)) {
                        let _ = std::fs::remove_file(f);
                    }
                })
                .await;
            }
            DiskAction::RestartAll => {
                for (_, tx) in live {
                    let _ = tx.send(SessionCmd::Control(Input::DiskFull));
                }
            }
        }
    }
}

/// P11 at run time: processes left by our dead agents are terminated, zombie children
/// reaped (see [`OrphanWatch`]).
async fn scan_orphans(shared: &Arc<Shared>, watch: &mut OrphanWatch) {
    let adopting = shared.config.subreaper;
    if watch.is_idle(adopting) {
        return;
    }
    let live: HashSet<u32> = lock(&shared.sessions).values().filter_map(|e| e.supervision.pid).collect();
    let kill_after = shared.limits().kill_after;
    let mut w = std::mem::take(watch);
    let me = mimesis_os::owner::me();
    let mark = fleet::owner_mark(me.pid, me.start_ticks);
    let agents = w.watches_agents();
    let look = move || {
        let (scan, mut reaped) = {
            // Held from reading the table to the last reap: no agent can be spawned in
            // between, so a zombie not in the set is no agent.
            let guard = crate::process::waited_agents();
            let waited: HashSet<u32> = guard.iter().copied().collect();
            // With no agent of ours watched, only our own children matter (zombies we
            // adopted): those few, not every process of the machine (10-40 ms a minute).
            let table = if agents { None } else { procs::my_children() };
            let rows = procs::rows(&table.unwrap_or_else(procs::all));
            let facts = ScanFacts { rows: &rows, me: me.pid, live: &live, waited: &waited, adopting };
            let scan = w.scan(&facts, |pid| procs::env_var(pid, fleet::OWNER_ENV).as_deref() == Some(mark.as_bytes()));
            let mut reaped = 0;
            for pid in scan.reap.iter().filter(|&&pid| procs::reap(pid)) {
                tracing::info!("Reaped zombie process PID={pid}");
                reaped += 1;
            }
            (scan, reaped)
        };
        for pid in &scan.kill {
            tracing::warn!("WARNING: Orphaned subprocess PID={pid} detected");
        }
        cleanup::terminate_all(&scan.kill, kill_after);
        for pid in &scan.kill {
            if procs::reap(*pid) {
                reaped += 1;
            }
        }
        (w, scan.kill.len() as u64, reaped as u64)
    };
    // Without agents, a few reads of /proc and nothing to terminate (nothing waits): done
    // here, rather than on a blocking thread started for it each minute and ended after.
    let result = if agents { tokio::task::spawn_blocking(look).await.ok() } else { Some(look()) };
    if let Some((w, killed, reaped)) = result {
        *watch = w;
        shared.counters.orphans.fetch_add(killed, Ordering::Relaxed);
        shared.counters.zombies.fetch_add(killed.max(reaped), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_metrics_snapshot_is_not_written_again_and_an_idle_app_looks_rarely() {
        let t0 = Duration::ZERO;
        let plan = |last: Option<(Duration, &u32)>, state: u32, running: bool, now: Duration| {
            metrics_plan(last, &state, running, now)
        };
        // The first look writes; with no process, the next look is a refresh away.
        assert_eq!(plan(None, 1, false, t0), MetricsPlan { write: true, next: metrics::REFRESH });
        // The same numbers, written a moment ago: nothing written.
        let later = t0 + metrics::HEARTBEAT;
        assert!(!plan(Some((t0, &1)), 1, false, later).write);
        // Other numbers: written.
        assert!(plan(Some((t0, &1)), 2, false, later).write);
        // The same numbers after a refresh's time: written again (a removed file comes back).
        assert!(plan(Some((t0, &1)), 1, false, t0 + metrics::REFRESH).write);
        // A process runs: its memory is sampled, so the next look is a heartbeat away.
        assert_eq!(
            plan(Some((t0, &1)), 1, true, later),
            MetricsPlan { write: false, next: later + metrics::HEARTBEAT }
        );
    }

    #[tokio::test]
    async fn a_replaced_sessions_agent_reports_go_nowhere() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = std::sync::Arc::new(crate::test_ledger::MemoryLedger::default());
        let mut config = SupervisorConfig::new(dir.path().join("claude"), ledger);
        config.subreaper = false;
        config.clean_previous = false;
        let sup = Supervisor::start(config).await;
        let (old, new) = (SessionId::parse("old").unwrap(), SessionId::parse("new").unwrap());
        let (tx, _rx) = mpsc::unbounded_channel();
        let supervision = Supervision::starting("claude", &dir.path().to_string_lossy(), sup.shared.clock.now());
        let cap = CapEntry { id: new.clone(), live: true, suspendable: false, last_used: sup.shared.clock.mono() };
        let entry = Entry { tx, supervision, cap, rss: 0, cpu: None, cpu_percent: 0.0 };
        lock(&sup.shared.sessions).insert(new.clone(), entry);
        lock(&sup.shared.aliases).insert(old.clone(), new.clone());
        assert!(sup.shared.sender(&old).is_ok(), "commands follow the rename");
        assert!(sup.shared.transcript_target(&old).is_none(), "the old transcript's status does not");
        assert!(sup.shared.transcript_target(&new).is_some());
        sup.shutdown().await;
    }
}
