//! Open timelines: each one the earlier segments of its chain (fixed), then the live file,
//! kept current as the file grows; updates are numbered so a reader sees a lost one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use mimesis_core::ids::SessionId;
use mimesis_core::timeline::{ChainSegment, TimelineItem};
use serde::Serialize;

use super::{Actor, EngineError, Reply};
use crate::timeline_view::{self as timeline, TimelineView};

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelinePage {
    pub session_id: SessionId,
    pub total: usize,
    pub start: usize,
    pub items: Vec<TimelineItem>,
    /// The transcript does not exist yet (Claude Code writes it at the first prompt): the
    /// timeline follows it from its first byte once it appears.
    pub waiting: bool,
    /// The timeline's last update so far ([`TimelineUpdate::seq`]): the first update after
    /// this page has `prev == seq`.
    pub seq: u64,
}

/// A change of an open timeline. Updates are numbered (one sequence for all timelines of an
/// engine) and name the previous update of the same timeline: a reader that was given a
/// page at `seq` applies the update whose `prev` is its last, ignores older ones, and
/// reloads when `prev` is newer than what it has (an update was lost).
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelineUpdate {
    pub session_id: SessionId,
    pub total: usize,
    pub reset: bool,
    pub changed: Vec<IndexedItem>,
    pub seq: u64,
    pub prev: u64,
}

#[derive(Serialize, Clone, Debug)]
pub struct IndexedItem {
    pub index: usize,
    pub item: TimelineItem,
}

/// Open timelines (engine/timelines.rs).
pub(super) enum TimelineCmd {
    Install(SessionId, Box<OpenTimeline>, usize, Reply<TimelinePage>),
    Range(SessionId, usize, usize, Reply<Result<TimelinePage, EngineError>>),
    Item(SessionId, usize, Reply<Result<Option<TimelineItem>, EngineError>>),
    Close(SessionId),
    /// An item from outside the transcript for the session's open timeline.
    Note(SessionId, Box<TimelineItem>),
    List(Reply<Vec<(SessionId, usize)>>),
}

/// An open timeline: the earlier segments of its chain (fixed), then the live file.
pub(super) struct OpenTimeline {
    prefix: Vec<TimelineItem>,
    view: TimelineView,
    /// Its transcript did not exist when last read.
    waiting: bool,
    /// Its last update (or its page, when installed).
    last_seq: u64,
}

impl OpenTimeline {
    /// Loads the timeline of `session` (on the blocking pool): the earlier segments of its
    /// chain, each closed by its boundary, then its own transcript and the answers given
    /// from Mimesis (in `data_dir`).
    pub(super) fn load(
        path: &Path,
        segments: &[ChainSegment],
        data_dir: Option<&Path>,
        session: &SessionId,
    ) -> Result<OpenTimeline, EngineError> {
        let prefix = timeline::chain_prefix(segments)
            .map_err(|source| EngineError::Transcript { path: path.to_owned(), source })?;
        let mut view = TimelineView::new(path);
        if let Some(d) = data_dir {
            view.add_notes(timeline::answers_of(d, session));
        }
        let waiting = match view.poll() {
            Ok(_) => false,
            // A session started a moment ago: its transcript comes with the first prompt.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(source) => return Err(EngineError::Transcript { path: path.to_owned(), source }),
        };
        Ok(OpenTimeline { prefix, view, waiting, last_seq: 0 })
    }

    fn total(&self) -> usize {
        self.prefix.len() + self.view.items().len()
    }

    fn get(&self, i: usize) -> Option<&TimelineItem> {
        if i < self.prefix.len() { self.prefix.get(i) } else { self.view.items().get(i - self.prefix.len()) }
    }

    fn range(&self, start: usize, end: usize) -> Vec<TimelineItem> {
        (start..end).filter_map(|i| self.get(i).cloned()).collect()
    }

    fn page(&self, session_id: SessionId, start: usize, end: usize) -> TimelinePage {
        let total = self.total();
        let end = end.min(total);
        let start = start.min(end);
        TimelinePage {
            session_id,
            total,
            start,
            items: self.range(start, end),
            waiting: self.waiting,
            seq: self.last_seq,
        }
    }
}

/// The open timelines, and the last number given to an update or a page.
#[derive(Default)]
pub(super) struct Timelines {
    open: HashMap<SessionId, OpenTimeline>,
    seq: u64,
}

impl Actor {
    pub(super) fn timeline_command(&mut self, cmd: TimelineCmd) {
        let t = &mut self.timelines;
        match cmd {
            TimelineCmd::Install(id, mut open, tail, reply) => {
                // Catch up with whatever was appended while it loaded.
                if open.view.poll().is_ok() {
                    open.waiting = false;
                }
                t.seq += 1;
                open.last_seq = t.seq;
                let total = open.total();
                let page = open.page(id.clone(), total.saturating_sub(tail), total);
                t.open.insert(id, *open);
                let _ = reply.send(page);
            }
            TimelineCmd::Range(id, start, end, reply) => {
                let page = match t.open.get(&id) {
                    Some(v) => Ok(v.page(id, start, end)),
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(page);
            }
            TimelineCmd::Item(id, index, reply) => {
                let item = match t.open.get(&id) {
                    Some(v) => Ok(v.get(index).cloned()),
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(item);
            }
            TimelineCmd::Note(id, item) => {
                if let Some(open) = t.open.get_mut(&id) {
                    open.view.add_notes(vec![*item]);
                    self.update_timeline(&id);
                }
            }
            TimelineCmd::Close(id) => {
                t.open.remove(&id);
            }
            TimelineCmd::List(reply) => {
                let _ = reply.send(t.open.iter().map(|(id, t)| (id.clone(), t.total())).collect());
            }
        }
    }

    /// Reads on the open timeline of `id`, if any, and sends what changed.
    pub(super) fn update_timeline(&mut self, id: &SessionId) {
        let t = &mut self.timelines;
        let Some(open) = t.open.get_mut(id) else { return };
        let polled = open.view.poll();
        if polled.is_ok() {
            open.waiting = false;
        }
        match polled {
            Ok(delta) if delta.reset || !delta.changed.is_empty() => {
                let offset = open.prefix.len();
                t.seq += 1;
                let prev = std::mem::replace(&mut open.last_seq, t.seq);
                let update = TimelineUpdate {
                    seq: t.seq,
                    prev,
                    session_id: id.clone(),
                    total: open.total(),
                    reset: delta.reset,
                    changed: delta
                        .changed
                        .iter()
                        .filter_map(|&i| {
                            open.get(i + offset).map(|item| IndexedItem { index: i + offset, item: item.clone() })
                        })
                        .collect(),
                };
                let _ = self.out.timeline.send(Arc::new(update));
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(session = %id, error = %e, "timeline poll failed"),
        }
    }
}
