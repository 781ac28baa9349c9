//! Row assembly: a session's roster row from its facts and what else the store knows of it
//! (registry, hooks, supervision, the background service, chains, status files). Pure: the
//! settings files' answer comes from the store's [`Disk`].

use super::*;

impl Store {
    pub(super) fn row(&self, entry: &Entry, now: Timestamp) -> (TrackedSession, Option<Timestamp>) {
        let f = &entry.facts;
        let id = &entry.location.session_id;
        let live = self.live.get(id);
        let supervision = self.supervised.get(id);
        let worker = self.worker_of(id);
        let last_activity = self.last_activity(entry);
        // A first read of the file's ends cannot tell a pending call from one answered
        // earlier in the file: none until the full read.
        let pending = if entry.peeked { None } else { f.pending_tool() };
        let report = self
            .status_files
            .get(id)
            .filter(|(cwd, _)| f.cwd.as_deref() == Some(cwd.as_str()))
            .map(|(_, r)| r)
            .filter(|r| r.fresh(now, self.status_file_ttl));
        let input = StatusInput {
            tail: f.tail.clone(),
            pending: pending.map(|t| PendingCall {
                since: t.since.unwrap_or(last_activity),
                approval: self.approval(entry, &t.name, &t.target),
                running: t.running,
            }),
            last_activity: f.last_activity,
            registry: live.map(RegistryEntry::signal),
            job: self.job_signal(id),
            hook: self.hooks.get(id).and_then(|h| h.signal),
            reported: report.map(|r| r.status.status()),
            // Gone: seen running before, or written by a CLI that keeps a registry entry for
            // as long as it runs (then no entry means no process: `ls` and `watch` agree),
            // where that registry speaks for its process (store/reach.rs). A supervised
            // session whose process Mimesis ended (a limit, the user, an earlier run of the
            // app) is over too: idle, not waiting for input.
            ended: live.is_none()
                && worker.is_none()
                && supervision.is_none_or(|s| s.pid.is_none())
                // (A background session runs only while the service runs a worker for it.)
                && (self.jobs.contains_key(id)
                    || (self.ever_live.contains(id) || f.registers_while_running())
                        && self.reach.speaks_for(&entry.location.root, id, f.last_activity)
                    || supervision.is_some_and(|s| {
                        matches!(s.state, SupervisionState::Terminated | SupervisionState::Suspended)
                    })),
        };
        let derived = status::derive(&input, now, &self.timeouts);
        let derived = status::Derived {
            next_check: match (derived.next_check, report.map(|r| r.updated.plus(self.status_file_ttl))) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            ..derived
        };
        let own = |sid: &SessionId| {
            self.entries.get(sid).map_or((0, false), |e| (e.facts.compaction_count, e.facts.born_with_boundary))
        };
        let chain = chain::fields(&self.chains, id, own);
        let work_chain_name = self
            .chains
            .segments(id)
            .iter()
            .find_map(|s| self.entries.get(s).and_then(|e| e.facts.title()))
            .map(str::to_owned);
        let row = TrackedSession {
            session_id: id.clone(),
            project_id: entry.location.project_id.clone(),
            cwd: f.cwd.clone().or_else(|| supervision.map(|s| s.cwd.clone())).or_else(|| self.job_cwd(id)),
            repo_root: f.cwd.as_ref().and_then(|c| self.repo_roots.get(c).cloned().flatten()),
            branch: f.branch.clone(),
            goal: f.goal().map(str::to_owned),
            summary: f.summary().map(str::to_owned),
            title: f.title().map(str::to_owned),
            status: derived.status,
            has_pending_tool_use: pending.is_some(),
            pending_tool: pending.map(|t| PendingTool { tool: t.name.clone(), target: clean_text(&t.target, 300) }),
            last_activity_at: last_activity,
            created_at: f.created_at,
            model: f.model.clone(),
            usage: f.usage,
            api_error: f.api_error || self.hooks.get(id).is_some_and(|h| h.failed),
            compaction_count: f.compaction_count.saturating_add(chain.inherited_compactions),
            superseded: chain.superseded_by.is_some(),
            superseded_by: chain.superseded_by,
            superseded_at: chain.superseded_at,
            work_chain_id: Some(chain.work_chain_id),
            work_chain_name,
            chain_length: chain.chain_length,
            source: if supervision.is_some() { Source::Pty } else { Source::Watcher },
            supervision: supervision.cloned(),
            live: live.is_some() || supervision.is_some_and(|s| s.pid.is_some()) || worker.is_some(),
            pid: live.map(|e| e.pid).or(supervision.and_then(|s| s.pid)).or(worker.and_then(|w| w.repl_pid)),
            transcript_path: entry.location.path.to_string_lossy().into_owned(),
            permission_mode: f.permission_mode.clone(),
            malformed_lines: f.malformed + entry.tail.stats.oversized_lines,
            malformed_fields: f.malformed_fields,
            status_file: report.cloned(),
            // A background session's label is its job's first (the registry follows it).
            name: self
                .job_name(id)
                .or_else(|| live.and_then(|e| e.name.clone()))
                .or_else(|| self.names.get(id).cloned())
                .or_else(|| f.registry_name.clone()),
            cost: mimesis_core::pricing::estimate(&f.usage_by_model, f.billed.clone()),
            // Only while the turn runs: a finished turn has no subagent working.
            subagents: match derived.status {
                mimesis_core::status::Status::Working => self.hooks.get(id).map_or(0, |h| h.subagents),
                _ => 0,
            },
            provisional: entry.peeked,
            host: None,
            kind: self.kind_of(id, f),
            job: self.job_row(id),
        };
        (row, derived.next_check)
    }

    /// When the session last did something: its last record, else its file's mtime, else
    /// when its supervision began, else when its registry entry last changed.
    pub(super) fn last_activity(&self, entry: &Entry) -> Timestamp {
        let id = &entry.location.session_id;
        entry
            .facts
            .last_activity
            .or(entry.tail.mtime)
            .or(self.supervised.get(id).map(|s| s.created_at))
            .or(self.live.get(id).and_then(|e| e.status_updated_at))
            .unwrap_or(Timestamp::from_millis(0))
    }

    fn approval(&self, entry: &Entry, tool: &str, target: &str) -> status::Approval {
        let cwd = entry.facts.cwd.as_deref().map(Path::new);
        self.disk.approval(&entry.location.root, cwd, tool, target, entry.facts.permission_mode.as_deref())
    }
}
