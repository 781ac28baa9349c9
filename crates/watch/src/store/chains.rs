//! The store's side of work chains, hooks, markers and status files: signals that come
//! from outside the transcript and change rows (SPEC C1–C4, W5 hook inputs, W6).

use super::*;

/// How many of a folder's most recent sessions chain matching looks at: the folder rule
/// takes the most recent one not known to run elsewhere, which is among the first few.
const FOLDER_CANDIDATES: usize = 32;

impl Store {
    /// Applies one recorded hook event (SPEC W5, C4).
    pub fn hook_event(&mut self, ev: HookEvent, now: Now) -> Changes {
        let mut events = Vec::new();
        let id = ev.session_id.clone();
        let known_before = self.hooks.get(&id).is_some_and(|h| h.first_at < ev.at);
        let info = self.hooks.entry(id.clone()).or_insert_with(|| HookInfo {
            signal: None,
            terminal: TerminalContext::default(),
            first_at: ev.at,
            last_at: ev.at,
            cwd: None,
            subagents: 0,
            failed: false,
            transcript_path: None,
        });
        info.first_at = info.first_at.min(ev.at);
        if ev.at >= info.last_at {
            info.last_at = ev.at;
            if !ev.terminal.is_empty() {
                info.terminal = ev.terminal.clone();
            }
            if ev.cwd.is_some() {
                info.cwd = ev.cwd.clone();
            }
            if ev.transcript_path.is_some() {
                info.transcript_path = ev.transcript_path.clone();
            }
        }
        match ev.event.as_str() {
            "SubagentStart" => info.subagents = info.subagents.saturating_add(1),
            "SubagentStop" => info.subagents = info.subagents.saturating_sub(1),
            "StopFailure" => {
                info.subagents = 0;
                info.failed = true;
            }
            "UserPromptSubmit" => {
                info.subagents = 0;
                info.failed = false;
            }
            "Stop" | "SessionEnd" => info.subagents = 0,
            _ => {}
        }
        if let Some(state) = ev.state()
            && info.signal.is_none_or(|s| ev.at >= s.at)
        {
            info.signal = Some(HookSignal { state, at: ev.at });
        }

        if ev.is_session_end("clear")
            && let Some(process) = ev.terminal.process()
        {
            self.pending_clear.insert(process, (id.clone(), ev.at));
        }
        if ev.is_session_start("clear") {
            // The SessionEnd of the same process names the predecessor exactly.
            let paired = ev
                .terminal
                .process()
                .and_then(|p| self.pending_clear.remove(&p))
                .filter(|(prev, at)| *prev != id && ev.at.since(*at) <= CLEAR_PAIRING)
                .map(|(prev, _)| prev);
            let pred = paired.or_else(|| self.match_predecessor(&id, ev.at, ev.cwd.as_deref()));
            if let Some(pred) = pred {
                self.link(pred, id.clone(), LinkReason::Clear, ev.at, now, &mut events);
            }
            self.chain_checked.insert(id.clone());
        }
        if ev.is_session_start("compact") && !known_before && !self.has_own_history(&id) {
            // A compaction that opened a new session (newer CLIs); in-place compaction
            // keeps the id and is counted from the file's boundary record.
            if let Some(pred) = self.match_predecessor(&id, ev.at, ev.cwd.as_deref()) {
                self.link(pred, id.clone(), LinkReason::Compact, ev.at, now, &mut events);
            }
            self.chain_checked.insert(id.clone());
        }
        self.refresh(&id, now, &mut events);
        self.changes(events)
    }

    /// A compaction marker (SPEC C1) found in `<cwd>/.claude/`.
    pub fn marker(&mut self, marker: Marker, now: Now) -> Changes {
        let mut events = Vec::new();
        let id = marker.new_session_id.clone();
        if self.chains.link_into(&id).is_some() {
            return self.changes(events);
        }
        self.pending_markers.insert(id.clone(), marker);
        self.settle_marker(&id, now, &mut events);
        self.changes(events)
    }

    /// Acts on a pending marker once the session's file says how it begins.
    fn settle_marker(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        let Some(entry) = self.entries.get(id) else { return };
        if entry.partial || entry.facts.birth == Birth::Unknown {
            return;
        }
        let Some(marker) = self.pending_markers.remove(id) else { return };
        if entry.facts.birth == Birth::Fresh || self.chains.link_into(id).is_some() {
            // The session has a history of its own: the compaction happened inside its
            // file (the CLI keeps the id), and its boundary record counted it.
            tracing::debug!(session = %id, "compaction marker for an in-place compaction");
            return;
        }
        let started = entry.facts.created_at.unwrap_or(marker.compacted_at).min(marker.compacted_at);
        if let Some(pred) = self.match_predecessor(id, started, Some(&marker.cwd)) {
            self.link(pred, id.clone(), LinkReason::Compact, marker.compacted_at, now, events);
        }
        self.chain_checked.insert(id.clone());
    }

    /// A status file (SPEC W6) found in `<cwd>/.claude/`, or `None` when it is gone.
    pub fn status_file(&mut self, id: &SessionId, cwd: &str, report: Option<StatusReport>, now: Now) -> Changes {
        match report {
            Some(r) => {
                self.status_files.insert(id.clone(), (cwd.to_owned(), r));
            }
            None => {
                if self.status_files.get(id).is_some_and(|(c, _)| c == cwd) {
                    self.status_files.remove(id);
                }
            }
        }
        let mut events = Vec::new();
        self.refresh(id, now, &mut events);
        self.changes(events)
    }

    /// Has the session's file a conversation of its own (not a successor's opening)?
    fn has_own_history(&self, id: &SessionId) -> bool {
        self.entries.get(id).is_some_and(|e| e.facts.birth == Birth::Fresh)
    }

    /// After a read: a file that begins like a successor is matched, after a grace
    /// period for the hooks and the registry to name its terminal.
    pub(super) fn consider_chain(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        if self.pending_markers.contains_key(id) {
            self.settle_marker(id, now, events);
        }
        if self.bulk || self.chain_checked.contains(id) || self.chains.link_into(id).is_some() {
            return;
        }
        let Some(e) = self.entries.get(id) else { return };
        match e.facts.birth {
            Birth::Clear | Birth::Compacted => {
                if !self.chain_checks.iter().any(|(_, c)| c == id) {
                    self.chain_checks.push((now.mono.plus(CHAIN_GRACE), id.clone()));
                }
            }
            Birth::Fresh => {
                self.chain_checked.insert(id.clone());
            }
            Birth::Unknown => {}
        }
    }

    /// Matches a successor-looking file by what the files (and whatever hooks and the
    /// registry told meanwhile) say.
    pub(super) fn check_chain(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        if self.chain_checked.contains(id) || self.chains.link_into(id).is_some() {
            return;
        }
        let Some(e) = self.entries.get(id) else { return };
        let reason = match e.facts.birth {
            Birth::Clear => LinkReason::Clear,
            Birth::Compacted => LinkReason::Rollover,
            _ => return,
        };
        let Some(started) = e.facts.created_at else { return };
        let cwd = e.facts.cwd.clone();
        if let Some(pred) = self.match_predecessor(id, started, cwd.as_deref()) {
            self.link(pred, id.clone(), reason, started, now, events);
        }
        self.chain_checked.insert(id.clone());
    }

    /// The end of the initial index: every successor-looking file is matched, oldest
    /// first, so "not superseded" means what it meant at the time.
    pub fn end_bulk(&mut self, now: Now) -> Changes {
        self.bulk = false;
        let mut events = Vec::new();
        let pending: Vec<SessionId> = self.pending_markers.keys().cloned().collect();
        for id in pending {
            self.settle_marker(&id, now, &mut events);
        }
        let mut todo: Vec<(Timestamp, SessionId)> = self
            .entries
            .iter()
            .filter(|(id, e)| {
                matches!(e.facts.birth, Birth::Clear | Birth::Compacted)
                    && !self.chain_checked.contains(*id)
                    && self.chains.link_into(id).is_none()
            })
            .filter_map(|(id, e)| Some((e.facts.created_at?, id.clone())))
            .collect();
        todo.sort();
        for (_, id) in todo {
            self.check_chain(&id, now, &mut events);
        }
        self.rows_for_live_sessions(now, &mut events);
        self.changes(events)
    }

    /// The session `id` (started at `started`, in `cwd`) replaces, by SPEC C2.
    fn match_predecessor(&self, id: &SessionId, started: Timestamp, cwd: Option<&str>) -> Option<SessionId> {
        let hook_cwd = self.hooks.get(id).and_then(|h| h.cwd.as_deref());
        let cwd = cwd.or(hook_cwd).or_else(|| self.entries.get(id).and_then(|e| e.facts.cwd.as_deref()));
        let terminal = self.hooks.get(id).map(|h| &h.terminal).filter(|t| !t.is_empty());
        let newcomer = Newcomer {
            id,
            cwd,
            started_at: started,
            terminal,
            pid: self.live.get(id).map(|e| e.pid).or(self.last_pid.get(id).copied()),
        };
        // Only sessions that can match: those with a known terminal or process (few), and
        // the folder's most recent ones that ended in time (its index is ordered by last
        // activity, newest first from `latest`), enough to find the one the folder rule
        // takes; never every session.
        let latest = Some(started.plus(chain::ACTIVITY_SLACK));
        let mut ids: HashSet<&SessionId> = HashSet::default();
        if let Some(set) = cwd.and_then(|c| self.by_cwd.get(c)) {
            let mut fitting = 0;
            for (_, cid) in set.range(..=(latest, SessionId::greatest())).rev() {
                if cid == id || self.chains.successor(cid).is_some() {
                    continue;
                }
                ids.insert(cid);
                fitting += 1;
                if fitting >= FOLDER_CANDIDATES {
                    break;
                }
            }
        }
        ids.extend(self.hooks.iter().filter(|(_, h)| !h.terminal.is_empty()).map(|(k, _)| k));
        ids.extend(self.live.keys());
        ids.extend(self.last_pid.keys());
        let candidates: Vec<Candidate<'_>> = ids
            .into_iter()
            .filter(|cid| *cid != id)
            .filter_map(|cid| self.entries.get_key_value(cid))
            .map(|(cid, e)| {
                let hook = self.hooks.get(cid);
                Candidate {
                    id: cid,
                    cwd: e.facts.cwd.as_deref().or(hook.and_then(|h| h.cwd.as_deref())),
                    created_at: e.facts.created_at,
                    last_activity: match (e.facts.last_activity, hook.map(|h| h.last_at)) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    },
                    superseded: self.chains.successor(cid).is_some(),
                    terminal: hook.map(|h| &h.terminal).filter(|t| !t.is_empty()),
                    pid: self.live.get(cid).map(|e| e.pid).or(self.last_pid.get(cid).copied()),
                    live: self.live.contains_key(cid),
                }
            })
            .filter(|c| c.cwd == cwd || c.terminal.is_some() || c.pid.is_some())
            .collect();
        chain::find_predecessor(&newcomer, &candidates)
    }

    fn link(
        &mut self,
        predecessor: SessionId,
        successor: SessionId,
        reason: LinkReason,
        at: Timestamp,
        now: Now,
        events: &mut Vec<StoreEvent>,
    ) {
        let link = Link { predecessor, successor, reason, at };
        match self.chains.add(link.clone()) {
            Ok(()) => {
                tracing::info!(predecessor = %link.predecessor, successor = %link.successor, reason = link.reason.as_str(),
                    "linked sessions into a work chain");
                for member in chain::affected(&self.chains, &link) {
                    self.refresh(&member, now, events);
                }
                self.new_links.push(link);
            }
            Err(e) => {
                tracing::debug!(predecessor = %link.predecessor, successor = %link.successor, reason = %e, "link not added")
            }
        }
    }

    /// When the link into `id` was made, if it has one.
    pub fn link_at(&self, id: &SessionId) -> Option<Timestamp> {
        self.chains.link_into(id).map(|l| l.at)
    }

    /// Links known from before (the fleet database).
    pub fn restore_links(&mut self, links: Vec<Link>) {
        for l in links {
            self.chain_checked.insert(l.successor.clone());
            if let Err(e) = self.chains.add(l) {
                tracing::debug!(reason = %e, "a stored link was not restored");
            }
        }
    }

    /// Is there anything for [`Store::take_batch`] to take?
    pub fn has_batch(&self) -> bool {
        !self.dirty.is_empty() || !self.removed.is_empty() || !self.new_links.is_empty()
    }

    /// What changed since the last call, for the fleet database: every session whose
    /// facts or reading position moved, the removed ones, and new links.
    pub fn take_batch(&mut self) -> Batch {
        self.take_batch_of(usize::MAX)
    }

    /// Like [`Store::take_batch`], with at most `max` sessions (the rest stay for the next
    /// batch): copying every session's facts at once after a cold index would hold up
    /// the actor.
    pub fn take_batch_of(&mut self, max: usize) -> Batch {
        let mut batch = Batch {
            removed: std::mem::take(&mut self.removed),
            links: std::mem::take(&mut self.new_links),
            ..Default::default()
        };
        let ids: Vec<SessionId> = if self.dirty.len() <= max {
            std::mem::take(&mut self.dirty).into_iter().collect()
        } else {
            let some: Vec<SessionId> = self.dirty.iter().take(max).cloned().collect();
            for id in &some {
                self.dirty.remove(id);
            }
            some
        };
        for id in ids {
            let Some(e) = self.entries.get(&id) else { continue };
            if e.partial {
                continue;
            }
            let Some(tail) = e.tail.state else { continue };
            batch.sessions.push(PersistedSession {
                location: e.location.clone(),
                tail,
                facts: e.facts.clone(),
                dedup: None,
                row: e.published.as_deref().cloned(),
            });
        }
        batch
    }
}
