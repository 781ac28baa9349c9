//! Work chains (SPEC C1–C4): sessions that continue one another. A `/clear` starts a new
//! session in the same process; a compaction in newer Claude Code versions starts a new
//! file. Each such successor is linked to the session it replaced, and the links make a
//! chain with one id, one name and a compaction count that grows across compactions.
//!
//! This module is pure: [`Chains`] holds the links, [`find_predecessor`] picks which
//! session a newcomer replaces from what the store knows (terminal context from hooks,
//! the processes of the live registry, cwd and activity times). It reads no file.
//!
//! Matching (C2): the same `claude` process first (a `/clear` or a compaction never
//! changes process), then the same terminal (TTY or terminal-emulator id) in the same
//! folder, else the most recently active, not superseded session of the same cwd that
//! is not known to run elsewhere. Two terminals in one repo are two chains.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::hook_event::TerminalContext;
use crate::ids::SessionId;

/// Why one session succeeded another.
#[derive(Serialize, Deserialize, Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum LinkReason {
    /// `/clear`: a new, empty conversation in the same process.
    Clear,
    /// A compaction that started a new session (a marker file, or a SessionStart hook
    /// with source `compact` naming a new id).
    Compact,
    /// A new file whose first records are a compact summary (seen in the files alone).
    Rollover,
}

impl LinkReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkReason::Clear => "clear",
            LinkReason::Compact => "compact",
            LinkReason::Rollover => "rollover",
        }
    }

    pub fn parse(s: &str) -> Option<LinkReason> {
        match s {
            "clear" => Some(LinkReason::Clear),
            "compact" => Some(LinkReason::Compact),
            "rollover" => Some(LinkReason::Rollover),
            _ => None,
        }
    }

    /// Does crossing this link count as a compaction (C3)?
    pub fn is_compaction(self) -> bool {
        !matches!(self, LinkReason::Clear)
    }
}

/// `successor` continues `predecessor` since `at`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub predecessor: SessionId,
    pub successor: SessionId,
    pub reason: LinkReason,
    pub at: Timestamp,
}

/// Why a link was not added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefused {
    #[error("a session cannot succeed itself")]
    SelfLink,
    #[error("{0} already has a predecessor")]
    HasPredecessor(SessionId),
    #[error("{0} already has a successor")]
    HasSuccessor(SessionId),
    #[error("the link would make a cycle")]
    Cycle,
}

/// Every link known. A session has at most one predecessor and one successor, and the
/// links never form a cycle, so each chain is a simple path from its root to its head.
#[derive(Default, Debug, Clone)]
pub struct Chains {
    by_successor: HashMap<SessionId, Link>,
    by_predecessor: HashMap<SessionId, SessionId>,
}

/// Chains longer than this are not walked further (a guard, not a limit anyone meets).
const MAX_WALK: usize = 10_000;

impl Chains {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, link: Link) -> Result<(), LinkRefused> {
        if link.predecessor == link.successor {
            return Err(LinkRefused::SelfLink);
        }
        if self.by_successor.contains_key(&link.successor) {
            return Err(LinkRefused::HasPredecessor(link.successor));
        }
        if self.by_predecessor.contains_key(&link.predecessor) {
            return Err(LinkRefused::HasSuccessor(link.predecessor));
        }
        // The successor must not already be an ancestor of the predecessor.
        if self.ancestors(&link.predecessor).any(|a| *a == link.successor) {
            return Err(LinkRefused::Cycle);
        }
        self.by_predecessor.insert(link.predecessor.clone(), link.successor.clone());
        self.by_successor.insert(link.successor.clone(), link);
        Ok(())
    }

    /// The link into `id` (from its predecessor), if any.
    pub fn link_into(&self, id: &SessionId) -> Option<&Link> {
        self.by_successor.get(id)
    }

    /// The link out of `id` (to its successor), if any.
    pub fn link_out(&self, id: &SessionId) -> Option<&Link> {
        self.by_predecessor.get(id).and_then(|s| self.by_successor.get(s))
    }

    pub fn successor(&self, id: &SessionId) -> Option<&SessionId> {
        self.by_predecessor.get(id)
    }

    /// Predecessors of `id`, nearest first.
    pub fn ancestors<'a>(&'a self, id: &SessionId) -> impl Iterator<Item = &'a SessionId> + 'a {
        let mut cur = self.by_successor.get(id).map(|l| &l.predecessor);
        let mut n = 0;
        std::iter::from_fn(move || {
            let this = cur?;
            n += 1;
            if n > MAX_WALK {
                return None;
            }
            cur = self.by_successor.get(this).map(|l| &l.predecessor);
            Some(this)
        })
    }

    /// The first session of the chain `id` belongs to.
    pub fn root(&self, id: &SessionId) -> SessionId {
        self.ancestors(id).last().cloned().unwrap_or_else(|| id.clone())
    }

    /// The chain up to and including `id`, oldest first (the segments a timeline of `id`
    /// shows).
    pub fn segments(&self, id: &SessionId) -> Vec<SessionId> {
        let mut v: Vec<SessionId> = self.ancestors(id).cloned().collect();
        v.reverse();
        v.push(id.clone());
        v
    }

    /// The whole chain `id` belongs to, oldest first.
    pub fn members(&self, id: &SessionId) -> Vec<SessionId> {
        let mut v = self.segments(id);
        let mut cur = id.clone();
        while let Some(next) = self.by_predecessor.get(&cur) {
            if v.len() > MAX_WALK {
                break;
            }
            v.push(next.clone());
            cur = next.clone();
        }
        v
    }

    pub fn links(&self) -> impl Iterator<Item = &Link> {
        self.by_successor.values()
    }

    pub fn len(&self) -> usize {
        self.by_successor.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_successor.is_empty()
    }
}

/// What the chain fields of one roster row are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainFields {
    pub work_chain_id: String,
    pub chain_length: u32,
    pub superseded_by: Option<SessionId>,
    pub superseded_at: Option<Timestamp>,
    /// Compactions before this segment (in-file ones of predecessors, plus one per
    /// compaction link up to here).
    pub inherited_compactions: u32,
}

/// The chain fields of `id`. `own_compactions` gives each session's in-file compaction
/// count, and whether its own file already counts the compaction that started it.
pub fn fields(chains: &Chains, id: &SessionId, own: impl Fn(&SessionId) -> (u32, bool)) -> ChainFields {
    let segments = chains.segments(id);
    let members = chains.members(id);
    let mut inherited = 0u32;
    for pair in segments.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        inherited = inherited.saturating_add(own(prev).0);
        if let Some(link) = chains.link_into(next)
            && link.reason.is_compaction()
            && !own(next).1
        {
            inherited = inherited.saturating_add(1);
        }
    }
    let out = chains.link_out(id);
    ChainFields {
        work_chain_id: segments[0].to_string(),
        chain_length: members.len() as u32,
        superseded_by: out.map(|l| l.successor.clone()),
        superseded_at: out.map(|l| l.at),
        inherited_compactions: inherited,
    }
}

/// What the matcher knows about a session that might be the predecessor.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    pub id: &'a SessionId,
    pub cwd: Option<&'a str>,
    pub created_at: Option<Timestamp>,
    pub last_activity: Option<Timestamp>,
    /// It already has a successor.
    pub superseded: bool,
    /// Its terminal, as its last hook event told.
    pub terminal: Option<&'a TerminalContext>,
    /// The last `claude` PID the live registry showed running it.
    pub pid: Option<u32>,
    /// Its process runs it right now (live registry).
    pub live: bool,
}

/// The newcomer.
#[derive(Clone, Debug)]
pub struct Newcomer<'a> {
    pub id: &'a SessionId,
    pub cwd: Option<&'a str>,
    /// When it started (its first record, or the hook event that announced it).
    pub started_at: Timestamp,
    pub terminal: Option<&'a TerminalContext>,
    pub pid: Option<u32>,
}

/// A predecessor's last activity may trail the successor's start by this much (the
/// CLI writes its last records while the new session opens).
pub const ACTIVITY_SLACK: Duration = Duration::from_secs(30);

/// The session `n` replaces, if one fits (C2).
pub fn find_predecessor(n: &Newcomer<'_>, candidates: &[Candidate<'_>]) -> Option<SessionId> {
    let latest = n.started_at.plus(ACTIVITY_SLACK);
    let eligible: Vec<&Candidate<'_>> = candidates
        .iter()
        .filter(|c| c.id != n.id && !c.superseded)
        .filter(|c| c.created_at.is_none_or(|t| t <= latest))
        .filter(|c| c.last_activity.is_some_and(|t| t <= latest))
        .collect();
    let most_recent = |v: Vec<&Candidate<'_>>| -> Option<SessionId> {
        v.into_iter().max_by_key(|c| (c.last_activity, c.id)).map(|c| c.id.clone())
    };
    let same_cwd = |c: &Candidate<'_>| matches!((c.cwd, n.cwd), (Some(a), Some(b)) if a == b);

    // 1. The same `claude` process (hooks: PID and start time; registry: PID).
    let same_process: Vec<&Candidate<'_>> = eligible
        .iter()
        .copied()
        .filter(|c| {
            let by_hooks = match (c.terminal.and_then(|t| t.process()), n.terminal.and_then(|t| t.process())) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            };
            let by_registry = matches!((c.pid, n.pid), (Some(a), Some(b)) if a == b);
            by_hooks || by_registry
        })
        .collect();
    if !same_process.is_empty() {
        return most_recent(same_process);
    }

    // 2. The same terminal (TTY, terminal-emulator id) in the same folder.
    let terminal_says = |c: &Candidate<'_>| match (c.terminal, n.terminal) {
        (Some(a), Some(b)) => a.same_terminal(b),
        _ => None,
    };
    let same_terminal: Vec<&Candidate<'_>> =
        eligible.iter().copied().filter(|c| same_cwd(c) && terminal_says(c) == Some(true)).collect();
    if !same_terminal.is_empty() {
        return most_recent(same_terminal);
    }

    // 3. The same folder, leaving out sessions known to belong to another terminal or
    //    to run in another process right now.
    let fallback: Vec<&Candidate<'_>> = eligible
        .iter()
        .copied()
        .filter(|c| same_cwd(c))
        .filter(|c| terminal_says(c) != Some(false))
        .filter(|c| !(c.live && c.pid.is_some() && c.pid != n.pid))
        .filter(|c| !matches!((c.pid, n.pid), (Some(a), Some(b)) if a != b))
        .collect();
    most_recent(fallback)
}

/// The sessions whose rows change when `link` is added: the whole chain.
pub fn affected(chains: &Chains, link: &Link) -> HashSet<SessionId> {
    chains.members(&link.successor).into_iter().collect()
}

#[cfg(test)]
mod tests;
