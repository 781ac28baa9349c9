//! What the [`Engine`](super::Engine) handle asks of the actor, by concern: questions about
//! the roster, changes to what is watched, open timelines, and the index's results.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::attention::{AttentionSet, SupervisionSignal};
use mimesis_core::hook_event::TerminalContext;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::session::TrackedSession;
use mimesis_core::settings::NotificationSettings;
use mimesis_core::status::Timeouts;
use mimesis_core::supervision::policy::AgentReport;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::timeline::ChainSegment;

use super::index::IndexMsg;
use super::timelines::TimelineCmd;
use super::{Actor, PollState, Reply, RootInfo, Snapshot};
use crate::store::BackgroundFiles;

pub(super) enum Command {
    Query(Query),
    Change(Change),
    Timeline(TimelineCmd),
    Index(IndexMsg),
    Shutdown(Reply<()>),
}

/// Questions answered from the store and the actor's state; they change nothing.
pub(super) enum Query {
    Snapshot(Reply<Snapshot>),
    /// The rows of these sessions (those the store has).
    Rows(Vec<SessionId>, Reply<Vec<TrackedSession>>),
    Polls(Reply<PollState>),
    /// Bytes and lines read from transcripts so far.
    ReadStats(Reply<(u64, u64)>),
    ChainSegments(SessionId, Reply<Vec<ChainSegment>>),
    Attention(Reply<AttentionSet>),
    Path(SessionId, Reply<Option<PathBuf>>),
    AgentReports(Reply<Vec<(SessionId, AgentReport)>>),
    Terminal(SessionId, Reply<Option<TerminalContext>>),
    HooksSeen(SessionId, Reply<bool>),
    TurnWritten(SessionId, Reply<Option<bool>>),
}

/// Changes to what is watched and how.
pub(super) enum Change {
    ApplySettings(Timeouts, Duration, NotificationSettings, Reply<()>),
    Supervision(SessionId, SupervisionSignal),
    AddRoot(PathBuf, Reply<()>),
    RemoveRoot(PathBuf, Reply<()>),
    Tick(Reply<()>),
    Supervise(TranscriptLocation, Option<Box<Supervision>>),
}

impl From<Query> for Command {
    fn from(q: Query) -> Command {
        Command::Query(q)
    }
}

impl From<Change> for Command {
    fn from(c: Change) -> Command {
        Command::Change(c)
    }
}

impl From<TimelineCmd> for Command {
    fn from(t: TimelineCmd) -> Command {
        Command::Timeline(t)
    }
}

impl From<IndexMsg> for Command {
    fn from(m: IndexMsg) -> Command {
        Command::Index(m)
    }
}

impl Actor {
    pub(super) fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Query(q) => self.query(q),
            Command::Change(c) => self.change(c),
            Command::Timeline(t) => self.timeline_command(t),
            Command::Index(m) => self.index_message(m),
            Command::Shutdown(_) => unreachable!("handled in run"),
        }
    }

    fn query(&self, q: Query) {
        match q {
            Query::Polls(reply) => {
                let _ = reply.send(self.timers.poll_state(self.clock.mono()));
            }
            Query::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Query::Rows(ids, reply) => {
                let _ = reply.send(ids.iter().filter_map(|id| self.store.row_of(id)).cloned().collect());
            }
            Query::ReadStats(reply) => {
                let _ = reply.send(self.store.read_stats());
            }
            Query::ChainSegments(id, reply) => {
                let _ = reply.send(chain_segments(&self.store, &id));
            }
            Query::Attention(reply) => {
                let _ = reply.send(self.alerts.attention.set());
            }
            Query::Terminal(id, reply) => {
                let _ = reply.send(self.store.terminal(&id));
            }
            Query::HooksSeen(id, reply) => {
                let _ = reply.send(self.store.hooks_seen(&id));
            }
            Query::TurnWritten(id, reply) => {
                let _ = reply.send(self.store.turn_written(&id));
            }
            Query::AgentReports(reply) => {
                let _ = reply.send(self.store.agent_reports());
            }
            Query::Path(id, reply) => {
                let _ = reply.send(self.store.transcript_path(&id).map(Path::to_owned));
            }
        }
    }

    fn snapshot(&self) -> Snapshot {
        let sessions = self.store.snapshot();
        let roots = self
            .roots
            .iter()
            .map(|r| RootInfo {
                path: r.clone(),
                exists: r.is_dir(),
                session_count: sessions.iter().filter(|s| Path::new(&s.transcript_path).starts_with(r)).count(),
            })
            .collect();
        let progress = *self.out.progress.borrow();
        Snapshot { seq: self.seq, sessions, roots, indexing: self.indexing, progress }
    }

    fn change(&mut self, c: Change) {
        let now = self.clock.both();
        match c {
            Change::ApplySettings(timeouts, status_file_ttl, notifications, reply) => {
                let events = self.store.set_timeouts(timeouts, status_file_ttl, now);
                self.alerts.attention.set_settings(notifications);
                self.publish(events);
                let _ = reply.send(());
            }
            Change::Supervision(id, signal) => {
                for n in self.alerts.attention.on_supervision(&id, signal, now.wall) {
                    let _ = self.out.notifications.send(n);
                }
                self.update_attention();
            }
            Change::AddRoot(root, reply) => {
                if !self.roots.contains(&root) {
                    self.roots.push(root.clone());
                    if let Some(w) = &mut self.watcher {
                        w.watch_root(&root);
                    }
                    self.rescan(&root);
                    self.polling.registry_dirty.insert(root);
                    self.poll_registry();
                }
                let _ = reply.send(());
            }
            Change::RemoveRoot(root, reply) => {
                self.roots.retain(|r| r != &root);
                if let Some(w) = &mut self.watcher {
                    w.unwatch_root(&root);
                }
                let mut events = self.store.set_background(&root, BackgroundFiles::default(), now);
                events.add(self.store.remove_root(&root));
                self.publish(events);
                let _ = reply.send(());
            }
            Change::Tick(reply) => {
                let events = self.store.tick(now);
                self.publish(events);
                let _ = reply.send(());
            }
            Change::Supervise(location, supervision) => {
                let events = self.store.set_supervision(location, supervision.map(|b| *b), now);
                self.publish(events);
            }
        }
    }
}

/// The segments of the chain up to `id` whose transcripts are known, oldest first.
pub(super) fn chain_segments(store: &crate::store::Store, id: &SessionId) -> Vec<ChainSegment> {
    store
        .chain_segments(id)
        .into_iter()
        .filter_map(|(session_id, path, reason)| {
            let at = store.link_at(&session_id);
            Some(ChainSegment { session_id, path: path?, reason, at })
        })
        .collect()
}
