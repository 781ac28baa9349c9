//! Timelines read from transcript files (SPEC U2): a whole transcript at once, the
//! earlier segments of a work chain, and a live view that follows a growing file. The
//! items themselves are built by `mimesis_core::timeline`.

use std::io;
use std::path::Path;

use mimesis_core::timeline::{ChainSegment, TimelineBuilder, TimelineItem};

use crate::tail::{FileTail, LineSink, ReadOutcome};

/// The items of a chain's earlier segments, each followed by the boundary into the next
/// segment (the last boundary leads into `segments.last()`, whose items are not read).
pub fn chain_prefix(segments: &[ChainSegment]) -> io::Result<Vec<TimelineItem>> {
    let mut items = Vec::new();
    for pair in segments.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        match read_timeline(&prev.path, Vec::new()) {
            Ok(v) => items.extend(v),
            // A segment whose file is gone still leaves its boundary.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        items.push(TimelineItem::Segment {
            uuid: format!("segment:{}", next.session_id),
            timestamp: next.at,
            session_id: next.session_id.clone(),
            previous_session_id: prev.session_id.clone(),
            reason: next.reason.map_or("clear", |r| r.as_str()).to_owned(),
        });
    }
    Ok(items)
}

/// The answers given from Mimesis to `session` (the data dir's answers log), as timeline
/// items. A missing or unreadable log is no answers.
pub fn answers_of(data_dir: &Path, session: &mimesis_core::SessionId) -> Vec<TimelineItem> {
    use mimesis_core::approval::{Answered, answers_path};
    let mut out = Vec::new();
    let mut tail = FileTail::with_max_line(answers_path(data_dir), mimesis_core::approval::MAX_LINE);
    let _ = tail.read_new(|l| {
        if let Some(a) = Answered::parse_line(l)
            && &a.session_id == session
        {
            out.push(a.item());
        }
    });
    out
}

/// Reads a whole transcript into its timeline, with `notes` placed by time.
pub fn read_timeline(path: &Path, notes: Vec<TimelineItem>) -> io::Result<Vec<TimelineItem>> {
    let mut view = TimelineView::new(path);
    view.add_notes(notes);
    view.poll()?;
    Ok(view.builder.into_items())
}

/// What a poll of a live timeline changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TimelineDelta {
    /// The file was replaced or truncated: the timeline was rebuilt from scratch.
    pub reset: bool,
    /// Indices of items added or changed, ascending, without duplicates.
    pub changed: Vec<usize>,
}

/// A timeline kept current as its transcript grows.
pub struct TimelineView {
    tail: FileTail,
    builder: TimelineBuilder,
    /// Every note given (answers from Mimesis), to place again when the file is replaced.
    notes: Vec<TimelineItem>,
}

impl TimelineView {
    pub fn new(path: &Path) -> Self {
        TimelineView { tail: FileTail::new(path), builder: TimelineBuilder::new(), notes: Vec::new() }
    }

    /// Items from outside the transcript, placed among its items by time from the next
    /// [`TimelineView::poll`] on.
    pub fn add_notes(&mut self, notes: Vec<TimelineItem>) {
        self.builder.add_notes(notes.iter().cloned());
        self.notes.extend(notes);
    }

    pub fn items(&self) -> &[TimelineItem] {
        self.builder.items()
    }

    /// Reads what was appended and applies it.
    pub fn poll(&mut self) -> io::Result<TimelineDelta> {
        let mut sink = Sink { builder: &mut self.builder, notes: &self.notes, delta: TimelineDelta::default() };
        if self.tail.read_into(&mut sink)? == ReadOutcome::Missing {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the transcript file is gone"));
        }
        let mut delta = sink.delta;
        self.builder.place_notes(&mut delta.changed);
        delta.changed.sort_unstable();
        delta.changed.dedup();
        Ok(delta)
    }
}

struct Sink<'a> {
    builder: &'a mut TimelineBuilder,
    notes: &'a [TimelineItem],
    delta: TimelineDelta,
}

impl LineSink for Sink<'_> {
    fn line(&mut self, line: &[u8]) {
        self.builder.push_line(line, &mut self.delta.changed);
    }

    fn reset(&mut self) {
        *self.builder = TimelineBuilder::new();
        self.builder.add_notes(self.notes.iter().cloned());
        self.delta = TimelineDelta { reset: true, changed: Vec::new() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rec(kind: &str, uuid: &str, extra: Value) -> Value {
        let mut v = json!({"type": kind, "uuid": uuid, "timestamp": "2026-11-01T10:00:00.000Z"});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    #[test]
    fn a_live_view_follows_appends_and_rebuilds_after_replacement() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let line = |v: Value| format!("{}\n", serde_json::to_string(&v).unwrap());
        std::fs::write(
            &p,
            line(rec(
                "assistant",
                "a1",
                json!({"message": {"content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]}}),
            )),
        )
        .unwrap();
        let mut view = TimelineView::new(&p);
        assert_eq!(view.poll().unwrap().changed, vec![0]);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(
            &mut f,
            line(rec(
                "user",
                "r",
                json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}}),
            ))
            .as_bytes(),
        )
        .unwrap();
        std::io::Write::write_all(&mut f, line(rec("user", "u2", json!({"message": {"content": "next"}}))).as_bytes())
            .unwrap();
        let d1 = view.poll().unwrap();
        assert_eq!(d1, TimelineDelta { reset: false, changed: vec![0, 1] });
        let tmp = d.path().join("tmp");
        std::fs::write(&tmp, line(rec("user", "n", json!({"message": {"content": "new file"}})))).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        let d2 = view.poll().unwrap();
        assert!(d2.reset);
        assert_eq!(view.items().len(), 1);
        std::fs::remove_file(&p).unwrap();
        assert!(view.poll().is_err());
    }
}
