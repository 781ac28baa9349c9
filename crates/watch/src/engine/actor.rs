//! The actor: one task that owns the store, the watcher and every timer of the engine. Its
//! loop waits for a command, a file event or the next deadline; every deadline is a [`Mono`]
//! instant of the injected clock ([`Alarm`]), and every wait is computed from it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::attention::{Attention, DEFAULT_DEBOUNCE};
use mimesis_core::clock::{Clock, Mono};
use mimesis_core::hook_event as hooks;
use mimesis_core::ids::SessionId;
use tokio::sync::mpsc;

use super::command::Command;
use super::cwd::CwdWatches;
use super::hook_spool::HookSpool;
use super::persist::{PERSIST_BATCH_MAX, PERSIST_INTERVAL, Persister};
use super::timelines::Timelines;
use super::{Actor, Alerts, EngineConfig, Envelope, Follow, Outputs, PollState, Polling};
use crate::background::BackgroundReader;
use crate::spool;
use crate::store::{Changes, Store};
use crate::watcher::{FsSignal, RootWatcher};

/// The poll's interval while nothing calls for a quicker one (see [`poll_wait`]). Each poll
/// wakes the app; an idle window with no session running wakes for it twice a minute.
pub const IDLE_POLL: Duration = Duration::from_secs(30);

/// How long the engine waits before its next poll. `poll` while there is something only a
/// poll can see: a registered process that may end without a word (its file stays), a root
/// not watched (missing, or no watcher at all), or a change since the last poll (a new
/// session's folder gets its watch at the next poll). Otherwise `idle`: every other change
/// comes as a file event, which is handled at once.
fn poll_wait(poll: Duration, idle: Duration, needs_poll: bool) -> Duration {
    if needs_poll { poll } else { idle.max(poll) }
}

/// A deadline on the injected monotonic clock, and the moment the runtime's timer wakes for
/// it: the wait from the clock's `now` to `at`, measured when the alarm is set (a manual
/// clock that stands still still lets a poll come after its interval).
#[derive(Copy, Clone, Debug)]
pub(super) struct Alarm {
    pub(super) at: Mono,
    wake: tokio::time::Instant,
}

impl Alarm {
    /// Falls due at `at` on `clock`.
    pub(super) fn at(clock: &dyn Clock, at: Mono) -> Alarm {
        // The one place the engine turns its clock into the runtime's: a wait from `Mono`.
        Alarm { at, wake: tokio::time::Instant::now() + at.since(clock.mono()) }
    }

    /// Falls due `wait` from now on `clock`.
    pub(super) fn after(clock: &dyn Clock, wait: Duration) -> Alarm {
        Alarm::at(clock, clock.mono().plus(wait))
    }

    /// The earlier of two alarms.
    fn min(self, other: Alarm) -> Alarm {
        if other.wake < self.wake { other } else { self }
    }
}

/// Waits for `alarm` (forever without one).
async fn ring(alarm: Option<Alarm>) {
    match alarm {
        Some(a) => tokio::time::sleep_until(a.wake).await,
        None => std::future::pending().await,
    }
}

/// The actor's own timers (the store's deadlines are the store's).
pub(super) struct Timers {
    /// Polls done since the start.
    polls_done: u64,
    next_poll: Alarm,
    /// Armed when there is something to store, so an idle engine has no timer for it.
    persist_at: Option<Alarm>,
    /// New project folders to list again: a file written into a folder the instant it
    /// appears can precede the recursive watch on it (root, folder, when).
    pub(super) dir_rescans: Vec<(PathBuf, PathBuf, Alarm)>,
}

impl Timers {
    pub(super) fn poll_state(&self, now: Mono) -> PollState {
        PollState { done: self.polls_done, next_in: self.next_poll.at.since(now) }
    }

    /// The rescans due when the earliest of them rang (every one set to wake by then).
    pub(super) fn take_due_rescans(&mut self) -> Vec<(PathBuf, PathBuf)> {
        let Some(rang) = self.dir_rescans.iter().map(|(_, _, a)| a.wake).min() else { return Vec::new() };
        let (due, later): (Vec<_>, Vec<_>) = self.dir_rescans.drain(..).partition(|(_, _, a)| a.wake <= rang);
        self.dir_rescans = later;
        due.into_iter().map(|(root, dir, _)| (root, dir)).collect()
    }
}

impl Actor {
    pub(super) fn new(config: &EngineConfig, fs_tx: mpsc::UnboundedSender<FsSignal>, out: Outputs) -> Actor {
        let now = config.clock.both();
        let mut store = Store::new(config.timeouts);
        store.set_rows_at_prompt(config.follow == Follow::Everything);
        store.set_timeouts(config.timeouts, config.status_file_ttl, now);
        let watcher = match RootWatcher::new(fs_tx) {
            Ok(mut w) => {
                // `projects/` once the index is in (`after_index`).
                for r in &config.roots {
                    w.watch_root_but_projects(r);
                }
                if let Some(d) = &config.data_dir {
                    spool::prune_spool(d, now.wall);
                    let spool = hooks::spool_dir(d);
                    let _ = mimesis_os::private::own_dir(&spool);
                    w.watch_dir(&spool);
                }
                Some(w)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; changes are found by rescanning every few seconds");
                None
            }
        };
        Actor {
            store,
            roots: config.roots.clone(),
            watcher,
            follow: config.follow,
            seq: 0,
            indexing: true,
            out,
            alerts: Alerts { attention: Attention::new(config.notifications.clone(), DEFAULT_DEBOUNCE), armed: false },
            timelines: Timelines::default(),
            polling: Polling {
                registry_dirty: config.roots.iter().cloned().collect(),
                background_dirty: config.roots.iter().cloned().collect(),
                background: BackgroundReader::default(),
            },
            timers: Timers {
                polls_done: 0,
                next_poll: Alarm::after(config.clock.as_ref(), Duration::ZERO),
                persist_at: None,
                dir_rescans: Vec::new(),
            },
            spool: HookSpool::new(config.data_dir.clone()),
            cwd: CwdWatches::default(),
            persist: config.archive.clone().map(Persister::start),
            clock: config.clock.clone(),
        }
    }

    pub(super) async fn run(
        mut self,
        mut cmd_rx: mpsc::UnboundedReceiver<Command>,
        mut fs_rx: mpsc::UnboundedReceiver<FsSignal>,
        poll: Duration,
        idle_poll: Duration,
    ) {
        self.timers.next_poll = Alarm::after(self.clock.as_ref(), poll);
        // The store's sequence at the end of the last poll: a change since calls for a poll.
        let mut polled_seq = self.seq;
        loop {
            // A change, or a process registered meanwhile: the next poll comes soon again.
            if self.seq != polled_seq || self.store.has_live_registry() {
                self.timers.next_poll = self.timers.next_poll.min(Alarm::after(self.clock.as_ref(), poll));
            }
            if self.indexing || self.persist.is_none() || !self.store.has_batch() {
                self.timers.persist_at = None;
            } else if self.timers.persist_at.is_none() {
                self.timers.persist_at = Some(Alarm::after(self.clock.as_ref(), PERSIST_INTERVAL));
            }
            let deadline = self.store_deadline();
            let rescan = self.timers.dir_rescans.iter().map(|(_, _, a)| *a).reduce(Alarm::min);
            tokio::select! {
                biased;
                cmd = cmd_rx.recv() => match cmd {
                    Some(Command::Shutdown(reply)) => {
                        self.watcher = None;
                        if let Some(p) = self.persist.take() {
                            if !self.indexing {
                                p.send(self.store.take_batch());
                            }
                            p.flush().await;
                        }
                        let _ = reply.send(());
                        break;
                    }
                    Some(cmd) => self.command(cmd),
                    None => break,
                },
                // File events wait until the initial index is adopted: it reads from the
                // offsets the index reached, so nothing is applied twice.
                Some(first) = fs_rx.recv(), if !self.indexing => {
                    let mut paths = BTreeSet::new();
                    let mut rescan = false;
                    let mut take = |s: FsSignal| match s {
                        FsSignal::Paths(p) => paths.extend(p),
                        FsSignal::Rescan => rescan = true,
                    };
                    take(first);
                    while let Ok(more) = fs_rx.try_recv() {
                        take(more);
                    }
                    if rescan {
                        self.rescan_all();
                    }
                    self.paths_changed(paths);
                    self.poll_registry();
                }
                _ = ring(deadline) => {
                    let events = self.store.tick(self.clock.both());
                    self.publish(events);
                }
                _ = ring(rescan) => self.rescan_new_dirs(),
                _ = ring(Some(self.timers.next_poll)) => {
                    self.poll();
                    // (The sequence only grows: a change before the poll or during it.)
                    let needs_poll = self.indexing
                        || self.seq != polled_seq
                        || self.store.has_live_registry()
                        || !self.watches_every_root();
                    polled_seq = self.seq;
                    self.timers.polls_done += 1;
                    self.timers.next_poll = Alarm::after(self.clock.as_ref(), poll_wait(poll, idle_poll, needs_poll));
                }
                _ = ring(self.timers.persist_at) => {
                    self.timers.persist_at = None;
                    if let Some(p) = &self.persist {
                        p.send(self.store.take_batch_of(PERSIST_BATCH_MAX));
                    }
                }
            }
        }
    }

    /// The store's next deadline, on the monotonic clock (at most an hour away: a wall-clock
    /// deadline far off is looked at again then).
    fn store_deadline(&self) -> Option<Alarm> {
        let now = self.clock.both();
        let at = self.store.next_deadline(now)?;
        Some(Alarm::at(self.clock.as_ref(), at.min(now.mono.plus(Duration::from_secs(3600)))))
    }

    /// Whether this engine reads the transcript of `id`.
    pub(super) fn follows(&self, id: &SessionId) -> bool {
        self.follow == Follow::Everything || self.store.is_supervised(id)
    }

    /// Sends what the store handed back: its supervised sessions' reports, then its
    /// events (with the notifications they raise).
    pub(super) fn publish(&mut self, changes: Changes) {
        let Changes { events, reports } = changes;
        for report in reports {
            let _ = self.out.agent_reports.send(Arc::new(report));
        }
        if events.is_empty() {
            return;
        }
        let now = self.clock.now();
        for event in events {
            if self.alerts.armed {
                for n in self.alerts.attention.on_store_event(&event, now) {
                    let _ = self.out.notifications.send(n);
                }
            }
            self.seq += 1;
            let _ = self.out.events.send(Arc::new(Envelope { seq: self.seq, event }));
        }
        self.update_attention();
    }

    pub(super) fn update_attention(&mut self) {
        if !self.alerts.armed {
            return;
        }
        let set = self.alerts.attention.set();
        self.out.attention.send_if_modified(|old| {
            if *old == set {
                false
            } else {
                *old = set;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_with_nothing_to_poll_for_waits_the_idle_interval() {
        let (poll, idle) = (Duration::from_secs(2), Duration::from_secs(30));
        assert_eq!(poll_wait(poll, idle, true), poll);
        assert_eq!(poll_wait(poll, idle, false), idle);
        // A test's quick poll is never slowed below itself.
        assert_eq!(poll_wait(Duration::from_secs(60), idle, false), Duration::from_secs(60));
    }
}
