//! The dialogs no hook asks about, as open requests beside the hooks' (issue 33): listed
//! from what the wiring's `answering` sees ([`Approvals::sync_dialogs`]), each with a request
//! id of its own that lasts while the dialog does, and answered by typing into the
//! session's screen through the [`DialogAnswerer`], by the option's label, checked against
//! the dialog the request names, and said to be done only once the dialog is gone.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mimesis_core::answering::{AskKey, Route, describe};
use mimesis_core::approval::{self, Behavior, Pending, Request, Via};
use mimesis_core::dialog::{Answer, DialogKind, Expect};
use mimesis_core::ids::SessionId;
use mimesis_core::session::PendingTool;

use super::{Approvals, DecideError, Given, Open, Serving, answered};

/// A dialog to list, as the wiring's `answering` found it.
#[derive(Clone, Debug)]
pub struct Listed {
    pub session_id: SessionId,
    /// Stays the same while the dialog does.
    pub key: AskKey,
    pub kind: DialogKind,
    /// The tool call it is about, when the transcript names it.
    pub tool: Option<PendingTool>,
    pub cwd: Option<String>,
    pub route: Route,
    /// The session's process, when the registry names it.
    pub pid: Option<u32>,
}

/// What to type into which session's screen: the answers in turn (a question per step,
/// then a review's "Submit answers"), each checked against the dialog on screen.
#[derive(Clone, Debug)]
pub struct DialogCall {
    pub session_id: SessionId,
    /// The session's process, when known (a pane must be the one that runs it).
    pub pid: Option<u32>,
    pub route: Route,
    pub answers: Vec<Answer>,
}

/// Types a [`DialogCall`]: the label of the last option chosen once its dialog is gone, or
/// why not (the answerer's own error, whose Display is the sentence).
pub type DialogAnswerer = Arc<
    dyn Fn(DialogCall) -> Pin<Box<dyn Future<Output = Result<String, Box<dyn std::error::Error + Send + Sync>>> + Send>>
        + Send
        + Sync,
>;

/// What the list keeps of a dialog's request.
pub(super) struct OpenDialog {
    key: AskKey,
    kind: DialogKind,
    route: Route,
    pid: Option<u32>,
    /// An answer is being typed: a second one is refused.
    answering: bool,
}

impl Listed {
    fn request(&self) -> Request {
        let tool = match (&self.tool, self.kind) {
            (Some(t), _) => t.tool.clone(),
            (None, DialogKind::Question) => "AskUserQuestion".to_owned(),
            (None, DialogKind::Plan) => "ExitPlanMode".to_owned(),
            (None, _) => "a tool call".to_owned(),
        };
        let target = self.tool.as_ref().map(|t| t.target.clone()).filter(|t| !t.is_empty());
        Request { session_id: self.session_id.clone(), tool, target, cwd: self.cwd.clone(), detail: None }
    }

    fn pending(&self, id: String, since: mimesis_core::clock::Timestamp) -> Pending {
        let request = self.request();
        let mut p = Pending::hook(id, request, since);
        let (approve, deny) =
            describe(self.kind, self.tool.as_ref().map(|t| t.tool.as_str()), p.request.target.as_deref());
        (p.approve, p.deny) = (Some(approve), Some(deny));
        p.dialog = Some(self.kind);
        p.channel = self.route.channel();
        p.answer_in = match &self.route {
            Route::Terminal(why) => Some(why.clone()),
            _ => None,
        };
        p
    }
}

impl Approvals {
    /// Sets what types answers into sessions' screens.
    pub fn set_answerer(&self, answerer: DialogAnswerer) {
        *self.answerer.write().unwrap_or_else(|e| e.into_inner()) = Some(answerer);
    }

    /// The dialogs to list now: a dialog listed already keeps its id (its description
    /// filled in once the transcript names its call); a new one gets a new id; one no
    /// longer there goes (unless an answer to it is being typed). Nothing is listed while
    /// another face answers.
    pub fn sync_dialogs(&self, listed: Vec<Listed>) {
        let serving = *self.serving.borrow() == Serving::Yes;
        let now = (self.clock.now(), self.clock.mono());
        let changed = {
            let mut open = self.lock();
            let before: Vec<(String, Request)> = open
                .list
                .iter()
                .filter(|o| o.dialog.is_some())
                .map(|o| (o.pending.id.clone(), o.pending.request.clone()))
                .collect();
            let listed: Vec<Listed> = if serving { listed } else { Vec::new() };
            // Gone: no longer listed (or the call it named changed: another dialog).
            open.list.retain(|o| {
                let Some(d) = &o.dialog else { return true };
                d.answering
                    || listed.iter().any(|l| {
                        l.key == d.key
                            && l.session_id == o.pending.request.session_id
                            && (o.pending.request.target.is_none() || l.request().target == o.pending.request.target)
                    })
            });
            for l in listed {
                let at = open.list.iter().position(|o| {
                    o.dialog.as_ref().is_some_and(|d| d.key == l.key) && o.pending.request.session_id == l.session_id
                });
                match at {
                    Some(i) => {
                        let o = &mut open.list[i];
                        let fresh = l.pending(o.pending.id.clone(), o.pending.since);
                        let d = o.dialog.as_mut().expect("a dialog");
                        (d.kind, d.route, d.pid) = (l.kind, l.route.clone(), l.pid);
                        let (known, name) = (o.pending.known_session, o.pending.session_name.take());
                        o.pending = Pending { known_session: known, session_name: name, ..fresh };
                    }
                    None => {
                        let seq = open.next_seq;
                        open.next_seq += 1;
                        let pending = l.pending(approval::new_id(super::random()), now.0);
                        let dialog = OpenDialog {
                            key: l.key.clone(),
                            kind: l.kind,
                            route: l.route.clone(),
                            pid: l.pid,
                            answering: false,
                        };
                        open.list.push(Open { pending, seq, since: now.1, reply: None, dialog: Some(dialog) });
                    }
                }
            }
            let after: Vec<(String, Request)> = open
                .list
                .iter()
                .filter(|o| o.dialog.is_some())
                .map(|o| (o.pending.id.clone(), o.pending.request.clone()))
                .collect();
            before != after
        };
        if changed {
            self.publish();
        }
    }

    /// What to type for the user's answer to the dialog's request `o`, checked before
    /// anything is typed; marks it as being answered.
    pub(super) fn dialog_call(
        &self,
        o: &mut Open,
        behavior: Behavior,
        message: Option<String>,
        answers: Option<BTreeMap<String, String>>,
        answers_in_order: Option<Vec<String>>,
    ) -> Result<DialogCall, DecideError> {
        let d = o.dialog.as_mut().expect("a dialog's request");
        let p = &o.pending;
        let short = p.request.session_id.short().to_owned();
        if d.answering {
            return Err(DecideError::BeingTyped { id: p.id.clone() });
        }
        if let Route::Terminal(why) = &d.route {
            return Err(DecideError::FromTerminalOnly { kind: d.kind, short, why: why.clone() });
        }
        if message.is_some() {
            return Err(DecideError::NoMessage { kind: d.kind, short });
        }
        let given = |a: &[String]| !a.is_empty();
        let steps: Vec<Answer> = match (behavior, d.kind, answers, answers_in_order) {
            (Behavior::Deny, _, None, None) => vec![Answer::Deny],
            (Behavior::Deny, ..) => return Err(DecideError::AnswersWithDeny),
            (Behavior::Allow, DialogKind::Question, Some(map), _) if !map.is_empty() => {
                let n = map.len();
                let mut steps = vec![Answer::ByQuestion(map); n];
                if n > 1 {
                    steps.push(Answer::Option("Submit answers".into()));
                }
                steps
            }
            (Behavior::Allow, DialogKind::Question, None, Some(list)) if given(&list) => {
                let n = list.len();
                let mut steps: Vec<Answer> = list.into_iter().map(Answer::Option).collect();
                if n > 1 {
                    steps.push(Answer::Option("Submit answers".into()));
                }
                steps
            }
            // Another dialog: its option named by label (`approve --answer LABEL`).
            (Behavior::Allow, _, None, Some(list)) if list.len() == 1 => vec![Answer::Option(list[0].clone())],
            (Behavior::Allow, _, None, Some(list)) if given(&list) => {
                return Err(DecideError::OneOption { kind: d.kind, named: list.len() });
            }
            (Behavior::Allow, _, Some(_), _) => {
                return Err(DecideError::NoQuestions { kind: d.kind });
            }
            (Behavior::Allow, ..) => vec![Answer::Approve],
        };
        let expect = Expect { kind: d.kind, target: p.request.target.clone() };
        let answers =
            steps.into_iter().map(|a| Answer::Checked { answer: Box::new(a), expect: expect.clone() }).collect();
        d.answering = true;
        Ok(DialogCall { session_id: p.request.session_id.clone(), pid: d.pid, route: d.route.clone(), answers })
    }

    /// Types the answer to the request `pending`, then ends the request and logs the
    /// answer, or says why not (the request stays listed while its dialog does).
    pub(super) async fn answer_dialog(
        &self,
        call: DialogCall,
        pending: Pending,
        behavior: Behavior,
        via: Via,
    ) -> Result<Given, DecideError> {
        let answerer = self.answerer.read().unwrap_or_else(|e| e.into_inner()).clone();
        let result = match answerer {
            Some(a) => a(call).await.map_err(NotTyped::Failed),
            None => Err(NotTyped::NoAnswerer),
        };
        {
            let mut open = self.lock();
            if let Some(i) = open.list.iter().position(|o| o.pending.id == pending.id) {
                match &result {
                    Ok(_) => drop(open.list.remove(i)),
                    Err(_) => {
                        if let Some(d) = open.list[i].dialog.as_mut() {
                            d.answering = false;
                        }
                    }
                }
            }
        }
        self.publish();
        match result {
            Ok(label) => {
                tracing::info!(session = %pending.request.session_id, ?behavior, channel = ?pending.channel, "a dialog answered from Mimesis");
                self.record(&answered(&pending, behavior, Some(label.clone()), None, None, via, self.clock.now()));
                Ok(Given { request: self.marked(vec![pending]).remove(0), choice: Some(label) })
            }
            Err(e) => Err(DecideError::NotAnswered {
                what: pending.dialog.map_or("the dialog", DialogKind::words),
                short: pending.request.session_id.short().to_owned(),
                channel: pending.channel.words(),
                why: e,
            }),
        }
    }
}

/// Why an answer typed into a dialog did not happen: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum NotTyped {
    #[error("this Mimesis types no answers into sessions' screens")]
    NoAnswerer,
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

#[cfg(test)]
mod tests;
