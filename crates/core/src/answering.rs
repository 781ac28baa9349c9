//! Dialogs of Claude Code that no `PermissionRequest` hook asks about (issue 33): auto
//! mode's own dialog and the per-call dialog after it (2.1.330+ runs no hook for either), and
//! any dialog of a session whose hooks are not installed. They are listed beside the hooks'
//! requests (`mimesis pending`, the window, the tray, notifications) from what the live
//! registry says (`status: waiting` with `waitingFor`) and, where no registry entry is
//! seen, from the `Notification` hook (`permission_prompt`, `agent_needs_input`); and they
//! are answered where Mimesis can reach the session's screen ([`Route`]): the PTY of a
//! session supervised here, Claude Code's own `claude attach` for a background session, the
//! tmux pane, kitty window or WezTerm pane the session runs in. Elsewhere a request says to
//! answer it in its terminal.
//!
//! Pure: [`Asks`] folds what the face learns into the dialogs to list, each with a key that
//! stays the same while the dialog does; the wiring gives each a request id, finds its route
//! and types the answer ([`crate::dialog::Answering`]).

mod pane;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::dialog::DialogKind;
use crate::hook_event::HookEvent;
use crate::ids::{JobId, SessionId};
use crate::registry::RegistryEntry;
use crate::session::PendingTool;
use crate::text::clean_text;

pub use pane::{Pane, PaneKind, capture_argv, send_argv};

/// How an open request is answered (`channel` in `mimesis pending --json`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "camelCase")]
pub enum Channel {
    /// Claude Code's `PermissionRequest` hook waits for the decision.
    #[default]
    Hook,
    /// Typed into the terminal of a session this face supervises.
    Pty,
    /// Typed through Claude Code's own `claude attach <job id>` (a background session),
    /// detached with Ctrl+Z after.
    Attach,
    /// Typed into the tmux pane the session runs in (`tmux send-keys`).
    Tmux,
    /// Typed into the kitty window the session runs in (`kitty @ send-text`).
    Kitty,
    /// Typed into the WezTerm pane the session runs in (`wezterm cli send-text`).
    Wezterm,
    /// No way in from here: answered in the session's own terminal.
    Terminal,
}

impl Channel {
    /// Whether Mimesis can answer through it.
    pub fn answerable(self) -> bool {
        self != Channel::Terminal
    }

    /// "through its tmux pane", for sentences.
    pub fn words(self) -> &'static str {
        match self {
            Channel::Hook => "through Claude Code's hook",
            Channel::Pty => "in its terminal here",
            Channel::Attach => "through `claude attach`",
            Channel::Tmux => "through its tmux pane",
            Channel::Kitty => "through its kitty window",
            Channel::Wezterm => "through its WezTerm pane",
            Channel::Terminal => "in its own terminal",
        }
    }
}

/// What a button does: its label and, in a sentence, exactly what follows.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub label: String,
    pub means: String,
}

fn action(label: &str, means: String) -> Action {
    Action { label: label.to_owned(), means }
}

/// What approving and denying do for a dialog of `kind` about a call of `tool` (when
/// known) on `target` (docs/ipc.md; `crate::dialog` has the keys).
pub fn describe(kind: DialogKind, tool: Option<&str>, target: Option<&str>) -> (Action, Action) {
    let call = match (tool, target.filter(|t| !t.is_empty())) {
        (Some(tool), Some(t)) => format!("{} `{}`", clean_text(tool, 60), clean_text(t, 120).replace('`', "'")),
        (Some(tool), None) => format!("this {} call", clean_text(tool, 60)),
        (None, _) => "the tool call".to_owned(),
    };
    match kind {
        DialogKind::AutoMode => (
            action(
                "Stay in auto mode",
                format!(
                    "Stays in auto mode (Enter). Nothing runs yet: Claude Code then asks about {call} in a dialog of its own."
                ),
            ),
            action("Cancel", format!("Cancels {call} (Esc): it does not run and the turn stops.")),
        ),
        DialogKind::Question => (
            action("Send answers", "Chooses the option you name for each question.".to_owned()),
            action("Decline", "Declines to answer (Esc); Claude goes on without the answers.".to_owned()),
        ),
        DialogKind::Plan => (
            action(
                "Approve plan",
                "Leaves plan mode and lets Claude carry out the plan, asking before each action (the dialog's “Yes, … ask each time”).".to_owned(),
            ),
            action("Keep planning", "Answers No: Claude stays in plan mode.".to_owned()),
        ),
        DialogKind::Permission | DialogKind::Other => (
            action("Approve once", format!("Runs {call} once (the dialog's “Yes”; never “always allow”).")),
            action("Deny", format!("Refuses {call} (the dialog's “No”).")),
        ),
    }
}

/// The kind of dialog a waiting session shows, from the registry's `waitingFor` or a
/// Notification's type, and the tool call it is blocked on.
pub fn kind_of(waiting_for: Option<&str>, notification: Option<&str>, tool: Option<&str>) -> DialogKind {
    match tool {
        Some("AskUserQuestion") => return DialogKind::Question,
        Some("ExitPlanMode") => return DialogKind::Plan,
        _ => {}
    }
    let w = waiting_for.map(str::to_ascii_lowercase);
    match (w.as_deref(), notification) {
        (Some("dialog open"), _) | (None, Some("agent_needs_input")) => DialogKind::AutoMode,
        (Some("input needed"), _) => DialogKind::Question,
        (Some(w), _) if w.contains("permission") => DialogKind::Permission,
        (None, Some("permission_prompt")) => DialogKind::Permission,
        _ => DialogKind::Other,
    }
}

/// Whether a registry's `waitingFor` is auto mode's own dialog.
fn is_gateway(waiting_for: &str) -> bool {
    waiting_for.eq_ignore_ascii_case("dialog open")
}

/// What keeps a listed dialog the same request: a new key is a new dialog (a new id).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AskKey {
    /// The registry entry of process `pid` says `waiting` for `waiting_for` since `since`.
    Registry { pid: u32, waiting_for: String, since: Option<Timestamp> },
    /// A Notification hook at `at` (no registry entry of the session is seen).
    Notification { at: Timestamp },
}

/// A dialog to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub session_id: SessionId,
    pub key: AskKey,
    pub kind: DialogKind,
    /// The tool call it is about, from the transcript (the session's pending tool), when known.
    pub tool: Option<PendingTool>,
    /// The session's process, when the registry names it.
    pub pid: Option<u32>,
}

/// The Notification types that mean a dialog is open.
const DIALOG_NOTES: [&str; 2] = ["permission_prompt", "agent_needs_input"];

/// How long a dialog the `PermissionRequest` hook may ask about (any but auto mode's own,
/// `waitingFor: dialog open`) waits before it is listed, in a session whose hooks are seen to
/// run: the hook fires 0.1–0.2 s after the registry says `waiting`, and its request is the one
/// to list (it takes a message, and answers without typing). Also how long after a hook's
/// request ended its dialog waits (the registry says `waiting` a moment longer after an
/// answer; a hook that gave up leaves the dialog to be listed). Not for the call's own dialog
/// right after auto mode's (`dialog open`, then `permission prompt`): no hook asks about it.
pub const HOOK_GRACE: Duration = Duration::from_secs(2);

#[derive(Default, Clone, Debug)]
struct Session {
    /// Its live registry entry, if one is seen (alive).
    registry: Option<RegistryEntry>,
    /// The last Notification that says a dialog is open, not followed by another hook event.
    note: Option<(Timestamp, String)>,
    tool: Option<PendingTool>,
    last_record: Option<Timestamp>,
    /// A `PermissionRequest` hook's request for it is open (that request is the one listed).
    hooked: bool,
    /// When its registry entry was first seen waiting, as now (by its key), and whether
    /// that dialog came straight after auto mode's own (the call's own dialog).
    waiting_seen: Option<(AskKey, Timestamp, bool)>,
    /// When its last hook request ended.
    hook_ended: Option<Timestamp>,
}

impl Session {
    /// Its registry entry's dialog, if it waits: the key and `waitingFor`.
    fn waiting(&self) -> Option<(AskKey, String)> {
        let e = self.registry.as_ref().filter(|e| e.status.as_deref() == Some("waiting"))?;
        let waiting_for = e.waiting_for.clone().unwrap_or_default();
        Some((
            AskKey::Registry { pid: e.pid, waiting_for: waiting_for.clone(), since: e.status_updated_at },
            waiting_for,
        ))
    }

    /// Until when its registry dialog is not listed yet ([`HOOK_GRACE`]).
    /// `hooks_run`: Mimesis's hooks are seen to run for it (a `PermissionRequest` hook may
    /// come).
    fn quiet_until(&self, hooks_run: bool) -> Option<Timestamp> {
        let (key, waiting_for) = self.waiting()?;
        let (first, after_gateway) =
            self.waiting_seen.as_ref().filter(|(k, ..)| *k == key).map_or((None, false), |(_, at, g)| (Some(*at), *g));
        let hook_may_come = hooks_run && !is_gateway(&waiting_for) && !after_gateway;
        let from_first = first.filter(|_| hook_may_come).map(|at| at.plus(HOOK_GRACE));
        let from_hook = self.hook_ended.map(|at| at.plus(HOOK_GRACE));
        from_first.max(from_hook)
    }
}

/// The dialogs to list, from the live registry, the roster's rows, the hooks and the open
/// hook requests.
#[derive(Default, Debug)]
pub struct Asks {
    sessions: BTreeMap<SessionId, Session>,
    /// The sessions followed that Mimesis's hooks are seen to run for.
    hooks_run: HashSet<SessionId>,
}

impl Asks {
    /// Every live registry entry at `now` (of every root); sessions not among them have none.
    pub fn set_registry<'a>(&mut self, alive: impl IntoIterator<Item = &'a RegistryEntry>, now: Timestamp) {
        let mut seen = HashSet::new();
        for e in alive {
            seen.insert(e.session_id.clone());
            self.sessions.entry(e.session_id.clone()).or_default().registry = Some(e.clone());
        }
        for (id, s) in &mut self.sessions {
            if !seen.contains(id) {
                s.registry = None;
            }
            match s.waiting() {
                Some((key, _)) if s.waiting_seen.as_ref().is_some_and(|(k, ..)| *k == key) => {}
                Some((key, _)) => {
                    let after_gateway = matches!(&s.waiting_seen, Some((AskKey::Registry { waiting_for, .. }, ..)) if is_gateway(waiting_for));
                    s.waiting_seen = Some((key, now, after_gateway));
                }
                None => s.waiting_seen = None,
            }
        }
        self.tidy();
    }

    /// Hooks of Mimesis are known to run for session `id`, a session it follows (the
    /// engine has seen one; the face asks it once a session is followed).
    pub fn set_hooks_run(&mut self, id: &SessionId) {
        self.hooks_run.insert(id.clone());
    }

    /// Whether hooks are known to run for session `id`.
    pub fn hooks_run(&self, id: &SessionId) -> bool {
        self.hooks_run.contains(id)
    }

    /// A roster row's pending tool call and its newest record.
    pub fn set_row(&mut self, id: &SessionId, tool: Option<PendingTool>, last_record: Option<Timestamp>) {
        let s = self.sessions.entry(id.clone()).or_default();
        s.tool = tool.filter(|t| !t.tool.is_empty());
        s.last_record = last_record.max(s.last_record);
        self.tidy();
    }

    /// The session left the roster.
    pub fn remove_row(&mut self, id: &SessionId) {
        self.hooks_run.remove(id);
        if let Some(s) = self.sessions.get_mut(id) {
            s.tool = None;
            s.note = None;
        }
        self.tidy();
    }

    /// A hook ran: a Notification that a dialog is open is noted; any other event of the
    /// session (a prompt, a tool's start or end, a turn's end) means it moved on.
    pub fn hook(&mut self, ev: &HookEvent) {
        self.hooks_run.insert(ev.session_id.clone());
        let s = self.sessions.entry(ev.session_id.clone()).or_default();
        match ev.notification_type.as_deref() {
            Some(t) if ev.event == "Notification" && DIALOG_NOTES.contains(&t) => s.note = Some((ev.at, t.to_owned())),
            _ if ev.event == "PermissionRequest" => {}
            _ => s.note = None,
        }
        self.tidy();
    }

    /// The sessions with an open `PermissionRequest` request at `now`.
    pub fn set_hooked(&mut self, hooked: &HashSet<SessionId>, now: Timestamp) {
        for (id, s) in &mut self.sessions {
            let was = std::mem::replace(&mut s.hooked, hooked.contains(id));
            if was && !s.hooked {
                s.hook_ended = Some(now);
            }
        }
        for id in hooked {
            self.sessions.entry(id.clone()).or_default().hooked = true;
            self.hooks_run.insert(id.clone());
        }
        self.tidy();
    }

    /// The sessions it follows (the rows to tell it of).
    pub fn sessions(&self) -> Vec<SessionId> {
        self.sessions.keys().cloned().collect()
    }

    fn tidy(&mut self) {
        self.sessions.retain(|_, s| s.registry.is_some() || s.note.is_some() || s.tool.is_some() || s.hooked);
        // (A session followed again is asked about again: [`Asks::set_hooks_run`].)
        self.hooks_run.retain(|id| self.sessions.contains_key(id));
        for s in self.sessions.values_mut() {
            if s.waiting().is_none() {
                s.hook_ended = None;
            }
        }
    }

    /// The dialogs to list at `now`. A registry's dialog that a hook may still ask about
    /// waits [`HOOK_GRACE`]. A Notification counts only while no registry entry of the
    /// session is seen, no record was written after it, and for at most `note_life`.
    pub fn asks(&self, now: Timestamp, note_life: Duration) -> Vec<Ask> {
        let mut out = Vec::new();
        for (id, s) in &self.sessions {
            if s.hooked {
                continue;
            }
            let tool_name = s.tool.as_ref().map(|t| t.tool.as_str());
            if let Some(e) = &s.registry {
                let Some((key, waiting_for)) = s.waiting() else { continue };
                if s.quiet_until(self.hooks_run.contains(id)).is_some_and(|t| now < t) {
                    continue;
                }
                out.push(Ask {
                    session_id: id.clone(),
                    kind: kind_of(Some(&waiting_for), None, tool_name),
                    key,
                    tool: s.tool.clone(),
                    pid: Some(e.pid),
                });
            } else if let Some((at, note)) = &s.note
                && s.last_record.is_none_or(|r| r <= *at)
                && now.since(*at) < note_life
            {
                out.push(Ask {
                    session_id: id.clone(),
                    kind: kind_of(None, Some(note), tool_name),
                    key: AskKey::Notification { at: *at },
                    tool: s.tool.clone(),
                    pid: None,
                });
            }
        }
        out
    }

    /// When the list may change with nothing else happening (a Notification's ask runs
    /// out, a dialog's [`HOOK_GRACE`] ends) after `now`: the face looks again then.
    pub fn next_expiry(&self, now: Timestamp, note_life: Duration) -> Option<Timestamp> {
        let notes = self
            .sessions
            .values()
            .filter(|s| s.registry.is_none() && !s.hooked)
            .filter_map(|s| s.note.as_ref().map(|(at, _)| at.plus(note_life)));
        let quiet = self
            .sessions
            .iter()
            .filter(|(_, s)| !s.hooked)
            .filter_map(|(id, s)| s.quiet_until(self.hooks_run.contains(id)));
        notes.chain(quiet).filter(|t| *t > now).min()
    }
}

/// Where the answer to a listed dialog goes (the wiring finds it; never shown to clients
/// but as its [`Channel`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The PTY of a session this face supervises.
    Pty,
    /// `claude attach <job>` with `CLAUDE_CONFIG_DIR` = `config_dir`.
    Attach { job: JobId, config_dir: std::path::PathBuf },
    /// A terminal pane Mimesis can read and type into.
    Pane(Pane),
    /// None; the sentence says where to answer it.
    Terminal(String),
}

impl Route {
    pub fn channel(&self) -> Channel {
        match self {
            Route::Pty => Channel::Pty,
            Route::Attach { .. } => Channel::Attach,
            Route::Pane(p) => match p.kind {
                PaneKind::Tmux { .. } => Channel::Tmux,
                PaneKind::Kitty => Channel::Kitty,
                PaneKind::Wezterm => Channel::Wezterm,
            },
            Route::Terminal(_) => Channel::Terminal,
        }
    }
}

/// The route for a session: supervised here, else a background session's job (its
/// registry entry's `jobId`, in the config folder that holds it), else the pane its hooks
/// or registry name, else none.
pub fn route(
    supervised_here: bool,
    job: Option<(&JobId, &std::path::Path)>,
    terminal: Option<&crate::hook_event::TerminalContext>,
    registry_tmux: Option<&str>,
) -> Route {
    if supervised_here {
        return Route::Pty;
    }
    if let Some((job, config_dir)) = job {
        return Route::Attach { job: job.clone(), config_dir: config_dir.to_owned() };
    }
    match crate::focus::pane_of(terminal, registry_tmux) {
        Some(p) => Route::Pane(p),
        None => Route::Terminal(match terminal.and_then(|t| t.tty.as_deref()) {
            Some(tty) => format!(
                "answer it in its terminal ({tty}): Mimesis can type into tmux panes, kitty windows and WezTerm panes, supervised sessions and background sessions"
            ),
            None => "answer it in its terminal: Mimesis does not know it (install Mimesis's hooks and it learns it at the session's next event)".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests;
