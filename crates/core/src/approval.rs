//! Answering a permission request from Mimesis (issue 12): what Claude Code's
//! `PermissionRequest` hook (`mimesis hook`), a running face (the window, `mimesis watch`,
//! `mimesis run`) and `mimesis pending / approve / deny` say to each other over the face's
//! socket in the data dir — one JSON object per line — and what the hook prints for Claude
//! Code. docs/ipc.md has the shapes.
//!
//! Nothing here decides anything: a decision only ever comes from a user's explicit
//! action in a face or the CLI. No face, no answer in time, a face that goes away: the hook
//! prints nothing, and Claude Code's own dialog decides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::answering::{Action, Channel, describe};
use crate::clock::Timestamp;
use crate::dialog::DialogKind;
use crate::ids::SessionId;
use crate::text::{clean_block, clean_text};
use crate::timeline::TimelineItem;
use crate::transcript::TARGET_KEYS;

/// The socket of the face that answers, in the data dir (owner-only).
pub const SOCKET: &str = "approvals.sock";

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// The log of the answers given from Mimesis, in the data dir (owner-only), one
/// [`Answered`] per line: what the timelines show as "answered from Mimesis".
pub const ANSWERS_FILE: &str = "answers.jsonl";

pub fn answers_path(data_dir: &Path) -> PathBuf {
    data_dir.join(ANSWERS_FILE)
}

/// The longest the hook itself waits for a decision unless `MIMESIS_APPROVAL_WAIT_SECS`
/// says otherwise (the installed hook's timeout is 10 s more). The face ends a request
/// earlier when its setting (`watch.answerWaitSecs`) says so. Claude Code's dialog stays
/// usable all along.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);
pub const WAIT_ENV: &str = "MIMESIS_APPROVAL_WAIT_SECS";

/// At most this many characters of a plan, a file's content or one side of an edit.
pub const DETAIL_CHARS: usize = 20_000;

/// The longest line either side reads: twice the largest hook payload
/// ([`crate::hook_event::MAX_PAYLOAD`]). A request is made of parts of its payload (its
/// detail at most [`DETAIL_CHARS`] a text, its cwd at most 4,096 characters), so the largest
/// request, a reply naming it and a page of the list (at most [`PAGE_BYTES`] and one more
/// request) all fit. A longer line is refused with a sentence, never cut.
pub const MAX_LINE: usize = 2 * crate::hook_event::MAX_PAYLOAD;

/// A page of the list ([`ToFace::List`]) holds requests up to this many bytes of JSON (and
/// always at least one): a long list comes in pages, each within [`MAX_LINE`].
pub const PAGE_BYTES: usize = 256 * 1024;

/// At most this many requests are held open (one connection each); a request beyond them
/// is refused at once with a sentence, and Claude Code's own dialog decides it.
pub const MAX_OPEN: usize = 256;

/// The fewest characters of an id (besides [`ID_PREFIX`]) a typed prefix names it by.
pub const MIN_PREFIX: usize = 4;

/// What every request id begins with, so that a request id never reads as a session id
/// (which are hex digits and dashes): `req_` and 32 hex digits.
pub const ID_PREFIX: &str = "req_";

/// Messages to a face.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum ToFace {
    /// From the hook: the connection stays open until the face answers with a
    /// [`Decision`] (or the hook goes away: then the request is gone).
    Request(Request),
    /// Open requests, oldest first, a page at a time; answered with [`PendingList`]. A page
    /// that does not end the list names the `cursor` of the next one.
    List {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
    /// Answers one request (its id or a prefix of one, or a session id or prefix of one
    /// naming a session with a single open request: [`resolve`]); answered with
    /// [`Decided`].
    #[serde(rename_all = "camelCase")]
    Decide {
        target: String,
        behavior: Behavior,
        message: Option<String>,
        /// AskUserQuestion: the answer to each question (its text → an option's label or
        /// the user's own words); only with `allow`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<BTreeMap<String, String>>,
        /// The same, as a list in the order of the questions (`mimesis approve --answer`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers_in_order: Option<Vec<String>>,
        /// Where the user answered; `cli` when not said.
        #[serde(default)]
        via: Via,
    },
}

/// Where the user gave an answer, as the timeline shows it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub enum Via {
    Window,
    Tray,
    Notification,
    #[default]
    Cli,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Window => "window",
            Via::Tray => "tray",
            Via::Notification => "notification",
            Via::Cli => "cli",
        }
    }
}

/// What Claude Code asks permission for, as the hook read it from its payload.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub session_id: SessionId,
    pub tool: String,
    /// The command, the file, the URL… (cleaned, at most 300 characters).
    pub target: Option<String>,
    pub cwd: Option<String>,
    /// What to read before answering: the edit, the file, the plan, the questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
}

/// The part of a tool's input a user reads before answering (cleaned text, each at most
/// [`DETAIL_CHARS`] characters).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Detail {
    /// Edit and MultiEdit: each replacement, old → new.
    Edit { file: String, edits: Vec<Replacement> },
    /// Write: the file's whole new content.
    Write { file: String, content: String },
    /// ExitPlanMode: the plan to approve.
    Plan { plan: String },
    /// AskUserQuestion: the questions and their options.
    Questions { questions: Vec<Question> },
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub options: Vec<QuestionOption>,
    #[serde(default)]
    pub multi_select: bool,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Behavior {
    Allow,
    Deny,
}

/// A face's answer to the hook. `behavior: None`: no decision (the dialog decides).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub behavior: Option<Behavior>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<BTreeMap<String, String>>,
    /// Why the face took no request (with no decision): the hook logs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One answer given from Mimesis (a line of [`ANSWERS_FILE`]), shown in its session's
/// timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    pub session_id: SessionId,
    pub at: Timestamp,
    /// The permission request's id, or a fresh one for a supervised session's dialog.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `allow`, `deny`, or `choose` (a dialog's option, by its label in `choice`).
    pub behavior: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<BTreeMap<String, String>>,
    pub via: Via,
}

impl Answered {
    /// The answer as a timeline item (kind `answer`).
    pub fn item(&self) -> TimelineItem {
        TimelineItem::Answer {
            uuid: format!("answer:{}", self.id),
            timestamp: Some(self.at),
            tool: self.tool.clone(),
            target: self.target.clone(),
            behavior: self.behavior.clone(),
            choice: self.choice.clone(),
            message: self.message.clone(),
            answers: self.answers.clone(),
            via: self.via.as_str().to_owned(),
            text: self.sentence(),
        }
    }

    /// The answer in a sentence, as every face shows it.
    pub fn sentence(&self) -> String {
        let via = match self.via {
            Via::Window => "from the window",
            Via::Tray => "from the tray menu",
            Via::Notification => "from a notification",
            Via::Cli => "from the command line",
        };
        let what = match (self.behavior.as_str(), &self.answers, &self.choice) {
            ("allow", Some(a), _) => {
                let list: Vec<String> =
                    a.iter().map(|(q, a)| format!("{} → {}", clean_text(q, 80), clean_text(a, 80))).collect();
                format!("Answered {via}: {}", list.join("; "))
            }
            ("allow", None, _) => format!("Approved once {via}"),
            ("deny", ..) => format!("Denied {via}"),
            (_, _, Some(c)) => format!("Chose “{}” {via}", clean_text(c, 80)),
            _ => format!("Answered {via}"),
        };
        match &self.message {
            Some(m) => format!("{what}, telling Claude: “{}”", clean_text(m, 200)),
            None => what,
        }
    }

    /// A line of the answers log, if it is one and names a session.
    pub fn parse_line(line: &[u8]) -> Option<Answered> {
        if line.len() > MAX_LINE || crate::json::too_deep(line, crate::json::MAX_DEPTH) {
            return None;
        }
        serde_json::from_slice(line).ok()
    }
}

/// An open request as faces and `mimesis pending --json` show it: a `PermissionRequest`
/// hook's request, or a dialog on a session's screen that no hook asked about
/// ([`crate::answering`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// `req_` and 32 hex digits ([`ID_PREFIX`]): unguessable and single-use.
    pub id: String,
    #[serde(flatten)]
    pub request: Request,
    pub since: Timestamp,
    /// Whether the session is one the face follows (in its roster). A request for a
    /// session in no roster came from something Mimesis does not know: said plainly.
    #[serde(default)]
    pub known_session: bool,
    /// How the face calls the session (its folder and title), when it knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// How it is answered: `hook`, or typed into the session's screen (`pty`, `attach`,
    /// `tmux`, `kitty`, `wezterm`), or `terminal`: not from here.
    #[serde(default)]
    pub channel: Channel,
    /// The dialog on screen it stands for, when no hook asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<DialogKind>,
    /// What approving does, and denying: the faces' words for their buttons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Action>,
    /// With `channel: terminal`: where to answer it, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_in: Option<String>,
}

impl Pending {
    /// A hook's request, opened at `since`.
    pub fn hook(id: String, request: Request, since: Timestamp) -> Pending {
        let kind = match request.tool.as_str() {
            "AskUserQuestion" => DialogKind::Question,
            "ExitPlanMode" => DialogKind::Plan,
            _ => DialogKind::Permission,
        };
        let (approve, deny) = describe(kind, Some(&request.tool), request.target.as_deref());
        Pending {
            id,
            request,
            since,
            known_session: false,
            session_name: None,
            channel: Channel::Hook,
            dialog: None,
            approve: Some(approve),
            deny: Some(deny),
            answer_in: None,
        }
    }

    /// What was answered, in a sentence: "Approved Bash `rm -rf build` in proj · Fix it
    /// (5bd58612)"; with the option typed into a dialog, "… (chose “Yes” through its tmux
    /// pane)". Cleaned text; still for a text face to filter as it filters all.
    pub fn answered_sentence(&self, behavior: Behavior, choice: Option<&str>) -> String {
        let r = &self.request;
        let what = match &r.target {
            Some(t) => format!("{} `{}`", clean_text(&r.tool, 100), clean_text(t, 300).replace('`', "'")),
            None => clean_text(&r.tool, 100),
        };
        let done = match (self.dialog, behavior) {
            (Some(DialogKind::AutoMode), Behavior::Allow) => format!("Stayed in auto mode for {what}"),
            (Some(DialogKind::AutoMode), Behavior::Deny) => format!("Cancelled {what}"),
            (Some(DialogKind::Question), Behavior::Allow) => format!("Answered {what}"),
            (Some(DialogKind::Question), Behavior::Deny) => format!("Declined {what}"),
            (Some(DialogKind::Plan), Behavior::Allow) => "Approved the plan".to_owned(),
            (Some(DialogKind::Plan), Behavior::Deny) => "Kept planning".to_owned(),
            (_, Behavior::Allow) => format!("Approved {what}"),
            (_, Behavior::Deny) => format!("Denied {what}"),
        };
        let short = r.session_id.short();
        let mut out = match (&self.session_name, self.known_session) {
            (Some(name), true) => format!("{done} in {} ({short})", clean_text(name, 120)),
            (None, true) => format!("{done} in session {short}"),
            (_, false) => format!("{done} in an unknown session ({short})"),
        };
        if let Some(c) = choice {
            out.push_str(&format!(" (chose “{}” {})", clean_text(c, 120), self.channel.words()));
        }
        if (self.dialog, behavior) == (Some(DialogKind::AutoMode), Behavior::Allow) {
            out.push_str("; Claude Code asks about the call next");
        }
        out
    }

    /// The request in a few words, for a sentence that lists several.
    fn brief(&self) -> String {
        let r = &self.request;
        match &r.target {
            Some(t) => format!("{} ({} `{}`)", self.id, clean_text(&r.tool, 40), clean_text(t, 60).replace('`', "'")),
            None => format!("{} ({})", self.id, clean_text(&r.tool, 40)),
        }
    }
}

/// A page of the open requests (`mimesis pending --json` prints them all, without `next`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PendingList {
    pub pending: Vec<Pending>,
    /// The cursor of the next page, when this one does not end the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Which open request a user's typed `target` names (`mimesis approve/deny`): its index
/// in `open`. A target names a request by its id or a prefix of it (with or without
/// [`ID_PREFIX`]), or by its session's id or a prefix of it when that session has a single
/// open request. A prefix has at least [`MIN_PREFIX`] characters (besides `req_`). Anything
/// else is refused with a sentence: a prefix that begins ids of both kinds (a request id and
/// a session id), several requests, several sessions, or a session with several open
/// requests. `exact` (the window, the tray, a notification): the full request id only.
pub fn resolve(target: &str, open: &[&Pending], exact: bool) -> Result<usize, ResolveError> {
    let target = target.trim();
    if target.is_empty() {
        return Err(ResolveError::Empty);
    }
    if let Some(i) = open.iter().position(|p| p.id == target) {
        return Ok(i);
    }
    let none = || ResolveError::NoMatch { target: target.to_owned() };
    if exact {
        return Err(none());
    }
    let bare = target.strip_prefix(ID_PREFIX);
    let whole_session = open.iter().any(|p| p.request.session_id.as_str() == target);
    if bare.unwrap_or(target).chars().count() < MIN_PREFIX && !whole_session {
        return Err(ResolveError::TooShort { target: target.to_owned() });
    }
    let requests: Vec<usize> = (0..open.len())
        .filter(|&i| {
            let id = &open[i].id;
            id.starts_with(target)
                || (bare.is_none() && id.strip_prefix(ID_PREFIX).is_some_and(|h| h.starts_with(target)))
        })
        .collect();
    let by_session: Vec<usize> =
        (0..open.len()).filter(|&i| open[i].request.session_id.as_str().starts_with(target)).collect();
    let mut sessions: Vec<&str> = by_session.iter().map(|&i| open[i].request.session_id.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    let list = |ix: &[usize]| ix.iter().map(|&i| open[i].brief()).collect::<Vec<_>>().join(", ");
    let target = target.to_owned();
    match (requests.as_slice(), sessions.as_slice()) {
        ([], []) => Err(none()),
        ([_, ..], [_, ..]) => {
            Err(ResolveError::Ambiguous { target, requests: list(&requests), sessions: sessions.join(", ") })
        }
        ([i], []) => Ok(*i),
        (_, []) => Err(ResolveError::SeveralRequests { target, requests: list(&requests) }),
        ([], [_]) if by_session.len() == 1 => Ok(by_session[0]),
        ([], [s]) => Err(ResolveError::SessionHasSeveral {
            session: (*s).to_owned(),
            count: by_session.len(),
            requests: list(&by_session),
        }),
        ([], _) => Err(ResolveError::SeveralSessions { target, sessions: sessions.join(", ") }),
    }
}

/// Why a typed target names no single open request: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("name a request id (req_…) or a session id")]
    Empty,
    #[error(
        "no open permission request matches {target:?} (it may have been answered already; `mimesis pending` lists the open ones)"
    )]
    NoMatch { target: String },
    #[error(
        "{target:?} is too short to name a request: give at least {MIN_PREFIX} characters of a request id (req_…) or a session id"
    )]
    TooShort { target: String },
    #[error(
        "{target:?} is ambiguous: it begins the request id of {requests} and the session id {sessions}; give the whole request id (req_…) from `mimesis pending`"
    )]
    Ambiguous { target: String, requests: String, sessions: String },
    #[error("{target:?} matches several requests: {requests}; give more of the id")]
    SeveralRequests { target: String, requests: String },
    #[error("session {session} has {count} open requests: {requests}; name one by its request id")]
    SessionHasSeveral { session: String, count: usize, requests: String },
    #[error("{target:?} matches several sessions: {sessions}")]
    SeveralSessions { target: String, sessions: String },
}

/// The reply to [`ToFace::Decide`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    /// The request answered, or why none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<Pending>,
    /// The option typed into its dialog (a dialog's request), by its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The request in a `PermissionRequest` hook payload (`tool_name`, `tool_input`).
pub fn request_of(session_id: SessionId, cwd: Option<String>, payload: &Value) -> Request {
    let tool = payload.get("tool_name").and_then(Value::as_str).unwrap_or("tool");
    let input = payload.get("tool_input");
    let target = TARGET_KEYS.iter().find_map(|k| {
        let v = input?.get(*k)?;
        let text = match v {
            Value::String(s) => s.as_str(),
            // AskUserQuestion: its first question.
            Value::Array(items) => items.first()?.get("question")?.as_str()?,
            _ => return None,
        };
        Some(clean_text(text.lines().next().unwrap_or(""), 300))
    });
    let detail = input.and_then(|i| detail_of(tool, i));
    Request { session_id, tool: clean_text(tool, 100), target, cwd, detail }
}

/// What to show of `input` before answering a call of `tool`.
pub fn detail_of(tool: &str, input: &Value) -> Option<Detail> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| clean_block(s, DETAIL_CHARS));
    let file = || text(input.get("file_path")).map(|f| clean_text(&f, 500));
    match tool {
        "Edit" => Some(Detail::Edit {
            file: file()?,
            edits: vec![Replacement {
                old: text(input.get("old_string")).unwrap_or_default(),
                new: text(input.get("new_string")).unwrap_or_default(),
            }],
        }),
        "MultiEdit" => Some(Detail::Edit {
            file: file()?,
            edits: input
                .get("edits")?
                .as_array()?
                .iter()
                .take(50)
                .map(|e| Replacement {
                    old: text(e.get("old_string")).unwrap_or_default(),
                    new: text(e.get("new_string")).unwrap_or_default(),
                })
                .collect(),
        }),
        "Write" => Some(Detail::Write { file: file()?, content: text(input.get("content")).unwrap_or_default() }),
        "ExitPlanMode" => Some(Detail::Plan { plan: text(input.get("plan"))? }),
        "AskUserQuestion" => {
            let questions: Vec<Question> = input
                .get("questions")?
                .as_array()?
                .iter()
                .take(8)
                .filter_map(|q| {
                    Some(Question {
                        // The key Claude Code answers by: kept whole (cleaning would change it).
                        question: q.get("question")?.as_str()?.chars().take(DETAIL_CHARS).collect(),
                        header: q.get("header").and_then(Value::as_str).map(|h| clean_text(h, 60)),
                        options: q
                            .get("options")
                            .and_then(Value::as_array)
                            .map(|o| {
                                o.iter()
                                    .take(20)
                                    .filter_map(|o| {
                                        Some(QuestionOption {
                                            label: o.get("label")?.as_str()?.chars().take(500).collect(),
                                            description: o
                                                .get("description")
                                                .and_then(Value::as_str)
                                                .map(|d| clean_text(d, 500)),
                                        })
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        multi_select: q.get("multiSelect").and_then(Value::as_bool).unwrap_or(false),
                    })
                })
                .collect();
            (!questions.is_empty()).then_some(Detail::Questions { questions })
        }
        _ => None,
    }
}

/// Answers given in the order of the request's questions, keyed by question.
pub fn answers_by_question(request: &Request, list: &[String]) -> Result<BTreeMap<String, String>, AnswersError> {
    let Some(Detail::Questions { questions }) = &request.detail else {
        return Err(AnswersError::NoQuestions { tool: request.tool.clone() });
    };
    if list.len() != questions.len() {
        return Err(AnswersError::Count { asked: questions.len(), given: list.len() });
    }
    Ok(questions.iter().map(|q| q.question.clone()).zip(list.iter().cloned()).collect())
}

/// Checks answers to a request's questions: every question answered once, by text of at
/// most 2,000 characters (an option's label or the user's own words).
pub fn check_answers(request: &Request, answers: &BTreeMap<String, String>) -> Result<(), AnswersError> {
    let Some(Detail::Questions { questions }) = &request.detail else {
        return Err(AnswersError::NoQuestions { tool: request.tool.clone() });
    };
    for q in questions {
        match answers.get(&q.question) {
            None => return Err(AnswersError::Missing { question: q.question.clone() }),
            Some(a) if a.trim().is_empty() => return Err(AnswersError::Empty { question: q.question.clone() }),
            Some(a) if a.chars().count() > 2000 => return Err(AnswersError::TooLong),
            Some(_) => {}
        }
    }
    if let Some(k) = answers.keys().find(|k| !questions.iter().any(|q| &q.question == *k)) {
        return Err(AnswersError::NotAQuestion { key: k.clone() });
    }
    Ok(())
}

/// Why answers to a request's questions were refused: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswersError {
    #[error("{tool} asks no questions: approve or deny it")]
    NoQuestions { tool: String },
    #[error("{asked} question(s) asked, {given} answer(s) given")]
    Count { asked: usize, given: usize },
    #[error("no answer to {:?}", clean_text(.question, 80))]
    Missing { question: String },
    #[error("an empty answer to {:?}", clean_text(.question, 80))]
    Empty { question: String },
    #[error("an answer is longer than 2,000 characters")]
    TooLong,
    #[error("{:?} is not one of the questions", clean_text(.key, 80))]
    NotAQuestion { key: String },
}

/// What the hook prints on stdout for Claude Code: the documented `PermissionRequest`
/// output, or nothing for no decision.
/// `tool_input` is the request's: answers to AskUserQuestion go back as its `answers`
/// in `updatedInput`, the way Claude Code's own dialog returns them.
pub fn hook_output(d: &Decision, tool_input: Option<&Value>) -> Option<String> {
    let behavior = match d.behavior? {
        Behavior::Allow => "allow",
        Behavior::Deny => "deny",
    };
    let mut decision = serde_json::json!({ "behavior": behavior });
    if let (Behavior::Deny, Some(m)) = (d.behavior?, &d.message) {
        decision["message"] = Value::String(m.clone());
    }
    if let (Behavior::Allow, Some(answers), Some(Value::Object(input))) = (d.behavior?, &d.answers, tool_input) {
        let mut updated = input.clone();
        updated.insert("answers".into(), serde_json::to_value(answers).unwrap_or_default());
        decision["updatedInput"] = Value::Object(updated);
    }
    let out = serde_json::json!({
        "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision }
    });
    Some(out.to_string())
}

/// A new request id: [`ID_PREFIX`] and 128 random bits, hex.
pub fn new_id(random: [u8; 16]) -> String {
    use std::fmt::Write;
    let mut id = String::with_capacity(ID_PREFIX.len() + 32);
    id.push_str(ID_PREFIX);
    for b in random {
        let _ = write!(id, "{b:02x}");
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hook_prints_claude_codes_documented_output_or_nothing() {
        let allow =
            Decision { behavior: Some(Behavior::Allow), message: Some("ignored".into()), answers: None, error: None };
        let v: Value = serde_json::from_str(&hook_output(&allow, Some(&json!({"command": "ls"}))).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let deny = Decision {
            behavior: Some(Behavior::Deny),
            message: Some("use the staging host".into()),
            answers: None,
            error: None,
        };
        let v: Value = serde_json::from_str(&hook_output(&deny, None).unwrap()).unwrap();
        assert_eq!(v["hookSpecificOutput"]["decision"], json!({"behavior": "deny", "message": "use the staging host"}));
        assert_eq!(hook_output(&Decision::default(), None), None, "no decision: nothing on stdout");
    }

    #[test]
    fn a_request_names_the_tool_and_its_target_as_text() {
        let id = SessionId::parse("s1").unwrap();
        let p = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build\n&& echo \u{1b}[31mdone", "description": "x"}});
        let r = request_of(id.clone(), None, &p);
        assert_eq!((r.tool.as_str(), r.target.as_deref()), ("Bash", Some("rm -rf build")));
        let q = json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": "Which DB?"}]}});
        assert_eq!(request_of(id.clone(), None, &q).target.as_deref(), Some("Which DB?"));
        assert_eq!(request_of(id, None, &json!({})).tool, "tool");
    }

    #[test]
    fn answers_go_back_in_the_updated_input_as_claude_codes_dialog_returns_them() {
        let input = json!({"questions": [{"question": "Which DB?", "options": [{"label": "Postgres"}]}]});
        let answers: BTreeMap<String, String> = [("Which DB?".to_owned(), "Postgres".to_owned())].into();
        let d = Decision { behavior: Some(Behavior::Allow), message: None, answers: Some(answers), error: None };
        let v: Value = serde_json::from_str(&hook_output(&d, Some(&input)).unwrap()).unwrap();
        let decision = &v["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "allow");
        assert_eq!(decision["updatedInput"]["questions"], input["questions"], "the questions stay as asked");
        assert_eq!(decision["updatedInput"]["answers"], json!({"Which DB?": "Postgres"}));
    }

    #[test]
    fn the_detail_shows_edits_files_plans_and_questions_as_text() {
        let edit = detail_of(
            "Edit",
            &json!({"file_path": "/p/a.rs", "old_string": "let a = 1;\x1b[2J", "new_string": "let a = 2;\r\n"}),
        );
        assert_eq!(
            edit,
            Some(Detail::Edit {
                file: "/p/a.rs".into(),
                edits: vec![Replacement { old: "let a = 1;".into(), new: "let a = 2;\n".into() }]
            })
        );
        let multi = detail_of(
            "MultiEdit",
            &json!({"file_path": "/p/b", "edits": [{"old_string": "x", "new_string": "y"}, {"old_string": "1"}]}),
        );
        assert!(matches!(multi, Some(Detail::Edit { edits, .. }) if edits.len() == 2 && edits[1].new.is_empty()));
        let write = detail_of("Write", &json!({"file_path": "/p/c", "content": "a".repeat(30_000)}));
        assert!(matches!(write, Some(Detail::Write { content, .. }) if content.chars().count() == DETAIL_CHARS + 1));
        let plan = detail_of("ExitPlanMode", &json!({"plan": "# Plan\n1. do it"}));
        assert_eq!(plan, Some(Detail::Plan { plan: "# Plan\n1. do it".into() }));
        let q = detail_of(
            "AskUserQuestion",
            &json!({"questions": [{"question": "Which DB?", "header": "DB", "multiSelect": false,
                    "options": [{"label": "Postgres", "description": "server"}, {"nolabel": 1}]}]}),
        );
        let Some(Detail::Questions { questions }) = q else { panic!("{q:?}") };
        assert_eq!(questions[0].options.len(), 1, "an option without a label is left out");
        assert_eq!(questions[0].options[0].description.as_deref(), Some("server"));
        assert_eq!(detail_of("Bash", &json!({"command": "ls"})), None);
        assert_eq!(detail_of("Edit", &json!({"old_string": "no file"})), None);
        let r = request_of(
            SessionId::parse("s").unwrap(),
            None,
            &json!({"tool_name": "ExitPlanMode", "tool_input": {"plan": "p"}}),
        );
        assert!(r.detail.is_some());
    }

    fn open(id: &str, session: &str, target: &str) -> Pending {
        let request = Request {
            session_id: SessionId::parse(session).unwrap(),
            tool: "Bash".into(),
            target: Some(target.into()),
            cwd: None,
            detail: None,
        };
        let mut p = Pending::hook(id.into(), request, Timestamp::from_millis(1));
        p.known_session = true;
        p.session_name = Some("proj · Tidy up".into());
        p
    }

    /// Issue 32, 3: `approve 5bd586`, meant for the request of `echo harmless`, answered
    /// another session's `rm -rf ~/important` whose id began `5bd586`.
    #[test]
    fn a_typed_target_names_one_request_or_is_refused_with_what_it_could_mean() {
        let harmless = open("req_5bd586aa00000000000000000000000000", "1111aaaa-0000", "echo harmless");
        let important = open("req_77770000000000000000000000000000", "5bd58612-9f00", "rm -rf ~/important");
        let list = [&harmless, &important];
        let err = resolve("5bd586", &list, false).unwrap_err().to_string();
        assert!(err.contains("ambiguous") && err.contains(&harmless.id) && err.contains("5bd58612-9f00"), "{err}");
        assert!(err.contains("echo harmless"), "says what each is: {err}");
        assert_eq!(resolve("req_5bd586", &list, false), Ok(0), "the request id's own form");
        assert_eq!(resolve("5bd586a", &list, false), Ok(0), "a prefix of the request id alone");
        assert_eq!(resolve("5bd58612", &list, false), Ok(1), "a prefix of the session id alone");
        assert_eq!(resolve(&important.id, &list, true), Ok(1));
        assert!(resolve("req_7777", &list, true).is_err(), "the window and tray name whole ids");
        assert!(resolve("5bd58612", &list, true).is_err());
        assert!(resolve("  ", &list, false).is_err());
        let err = resolve("zzzz", &list, false).unwrap_err().to_string();
        assert!(err.contains("no open permission request matches"), "{err}");
        for short in ["req_", "req_5bd", "5bd", "r"] {
            let err = resolve(short, &list, false).unwrap_err().to_string();
            assert!(err.contains("too short to name a request"), "{short}: {err}");
        }
        let err = resolve("req_77", &[&important, &open("req_77aa", "x", "ls"), &open("req_77bb", "y", "ls")], false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("too short"), "{err}");
        let err = resolve("req_7777", &[&important, &open("req_7777aa", "x", "ls")], false).unwrap_err().to_string();
        assert!(err.contains("several requests"), "{err}");
        assert_eq!(resolve("x", &[&open("req_1", "x", "ls")], false), Ok(0), "a whole session id, however short");

        // Two open requests in one session: its prefix names neither (not "the oldest").
        let second = open("req_88880000000000000000000000000000", "5bd58612-9f00", "echo second");
        let list = [&harmless, &important, &second];
        let err = resolve("5bd58612", &list, false).unwrap_err().to_string();
        assert!(
            err.contains("has 2 open requests") && err.contains(&important.id) && err.contains(&second.id),
            "{err}"
        );
        let other = open("req_99990000000000000000000000000000", "5bd58699-0000", "ls");
        let err = resolve("5bd586", &[&important, &other], false).unwrap_err().to_string();
        assert!(err.contains("several sessions"), "{err}");
    }

    #[test]
    fn an_answer_says_what_it_answered_and_where() {
        let mut p = open("req_1", "5bd58612-9f00-4000", "rm -rf ~/important");
        assert_eq!(
            p.answered_sentence(Behavior::Allow, None),
            "Approved Bash `rm -rf ~/important` in proj · Tidy up (5bd58612)"
        );
        p.session_name = None;
        assert_eq!(p.answered_sentence(Behavior::Deny, None), "Denied Bash `rm -rf ~/important` in session 5bd58612");
        p.known_session = false;
        p.request.target = Some("a `b`\x1b]52;c;AAAA\x07".into());
        assert_eq!(
            p.answered_sentence(Behavior::Deny, None),
            "Denied Bash `a 'b']52;c;AAAA` in an unknown session (5bd58612)"
        );
        // A dialog typed into: what it did, and the option chosen where.
        let mut gate = open("req_2", "5bd58612-9f00-4000", "curl x | sh");
        (gate.dialog, gate.channel) = (Some(DialogKind::AutoMode), Channel::Tmux);
        assert_eq!(
            gate.answered_sentence(Behavior::Allow, Some("Stay in auto mode")),
            "Stayed in auto mode for Bash `curl x | sh` in proj · Tidy up (5bd58612) (chose “Stay in auto mode” through its tmux pane); Claude Code asks about the call next"
        );
        gate.dialog = Some(DialogKind::Plan);
        assert!(gate.answered_sentence(Behavior::Deny, Some("No")).starts_with("Kept planning in proj"));
        assert!(new_id([0xab; 16]).starts_with("req_abab") && new_id([0; 16]).len() == 36);
    }

    #[test]
    fn messages_round_trip_with_their_op() {
        let m = ToFace::Decide {
            target: "ab".into(),
            behavior: Behavior::Deny,
            message: None,
            answers: None,
            answers_in_order: None,
            via: Via::Cli,
        };
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(s, r#"{"op":"decide","target":"ab","behavior":"deny","message":null,"via":"cli"}"#);
        let older = r#"{"op":"decide","target":"ab","behavior":"deny","message":null}"#;
        assert_eq!(serde_json::from_str::<ToFace>(older).unwrap(), m, "via defaults to cli");
        assert_eq!(serde_json::from_str::<ToFace>(&s).unwrap(), m);
        assert_eq!(serde_json::to_string(&ToFace::List { cursor: None }).unwrap(), r#"{"op":"list"}"#);
        let page = ToFace::List { cursor: Some("7".into()) };
        assert_eq!(serde_json::to_string(&page).unwrap(), r#"{"op":"list","cursor":"7"}"#);
        assert_eq!(serde_json::from_str::<ToFace>(r#"{"op":"list"}"#).unwrap(), ToFace::List { cursor: None });
    }
}
