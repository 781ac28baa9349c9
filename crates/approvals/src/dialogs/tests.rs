//! Dialogs' requests in the face's list: listed under one id while the dialog lasts, and
//! answered only through their route, checked, once.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use mimesis_core::answering::{Channel, Pane, PaneKind};
use mimesis_core::approval::Answered;
use mimesis_core::clock::{SystemClock, Timestamp};
use tokio::sync::oneshot;

use super::*;
use crate::{Approvals, Target};

const S: &str = "5bd58612-9f00-4000-8000-000000000001";

fn key(waiting_for: &str, since: i64) -> AskKey {
    AskKey::Registry { pid: 42, waiting_for: waiting_for.into(), since: Some(Timestamp::from_millis(since)) }
}

fn tmux() -> Route {
    Route::Pane(Pane { kind: PaneKind::Tmux { socket: None }, id: "%3".into() })
}

fn listed(key: AskKey, kind: DialogKind, target: Option<&str>, route: Route) -> Listed {
    Listed {
        session_id: SessionId::parse(S).unwrap(),
        key,
        kind,
        tool: target.map(|t| PendingTool { tool: "Bash".into(), target: t.into() }),
        cwd: Some("/p".into()),
        route,
        pid: Some(42),
    }
}

struct Face {
    approvals: Approvals,
    answered: Arc<Mutex<Vec<Answered>>>,
    calls: Arc<Mutex<Vec<DialogCall>>>,
}

/// A serving face whose answerer notes each call and answers with `reply`.
fn face(dir: &Path, reply: Result<&'static str, &'static str>) -> Face {
    let answered: Arc<Mutex<Vec<Answered>>> = Arc::default();
    let on = {
        let answered = answered.clone();
        Arc::new(move |a: &Answered| answered.lock().unwrap().push(a.clone()))
    };
    let approvals = Approvals::serve(dir, Arc::new(SystemClock), on);
    let calls: Arc<Mutex<Vec<DialogCall>>> = Arc::default();
    let noted = calls.clone();
    approvals.set_answerer(Arc::new(move |call: DialogCall| {
        noted.lock().unwrap().push(call);
        Box::pin(async move { reply.map(str::to_owned).map_err(|e| e.into()) })
    }));
    Face { approvals, answered, calls }
}

fn checked(answer: Answer, kind: DialogKind, target: Option<&str>) -> Answer {
    Answer::Checked { answer: Box::new(answer), expect: Expect { kind, target: target.map(str::to_owned) } }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_is_listed_under_one_id_while_it_lasts() {
    let dir = tempfile::tempdir().unwrap();
    let f = face(dir.path(), Ok("Yes"));
    let a = &f.approvals;
    a.sync_dialogs(vec![listed(key("dialog open", 1), DialogKind::AutoMode, None, tmux())]);
    let first = a.pending();
    assert_eq!(first.len(), 1);
    let p = &first[0];
    assert!(p.id.starts_with("req_") && p.id.len() == 36, "{}", p.id);
    assert_eq!(
        (p.channel, p.dialog, p.request.tool.as_str()),
        (Channel::Tmux, Some(DialogKind::AutoMode), "a tool call")
    );
    assert_eq!(p.approve.as_ref().unwrap().label, "Stay in auto mode");
    // The transcript names the call: the same request, described.
    a.sync_dialogs(vec![listed(key("dialog open", 1), DialogKind::AutoMode, Some("curl x | sh"), tmux())]);
    let named = a.pending();
    assert_eq!(named[0].id, p.id);
    assert_eq!(named[0].request.target.as_deref(), Some("curl x | sh"));
    assert!(named[0].approve.as_ref().unwrap().means.contains("Bash `curl x | sh`"));
    // Another call under the same dialog: another request.
    a.sync_dialogs(vec![listed(key("dialog open", 1), DialogKind::AutoMode, Some("rm -rf ~"), tmux())]);
    let other = a.pending();
    assert_eq!(other.len(), 1);
    assert_ne!(other[0].id, p.id, "an id names the call it was listed with");
    // The call's own dialog next: another request; the old id names nothing.
    a.sync_dialogs(vec![listed(key("permission prompt", 2), DialogKind::Permission, Some("rm -rf ~"), tmux())]);
    let call = a.pending();
    assert_eq!((call.len(), call[0].dialog), (1, Some(DialogKind::Permission)));
    let err = a
        .decide(Target::Id(&other[0].id), Behavior::Allow, None, None, None, Via::Window)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no open permission request matches"), "{err}");
    // Not ended by the hooks' rules: only by the dialog going.
    a.set_wait(Duration::ZERO);
    assert_eq!(a.expire(), 0);
    a.cancel_session(&SessionId::parse(S).unwrap(), Timestamp::from_millis(i64::MAX));
    assert_eq!(a.pending().len(), 1);
    a.sync_dialogs(Vec::new());
    assert!(a.pending().is_empty());
    assert!(f.calls.lock().unwrap().is_empty(), "nothing typed without an answer");

    // A face that does not serve lists none.
    let b = face(dir.path(), Ok("Yes"));
    b.approvals.sync_dialogs(vec![listed(key("dialog open", 3), DialogKind::AutoMode, None, tmux())]);
    assert!(b.approvals.pending().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_typed_through_its_route_checked_against_its_dialog_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let f = face(dir.path(), Ok("Stay in auto mode"));
    let a = &f.approvals;
    a.sync_dialogs(vec![listed(key("dialog open", 1), DialogKind::AutoMode, Some("curl x | sh"), tmux())]);
    let id = a.pending()[0].id.clone();
    // By the session, as typed.
    let given = a.decide(Target::Typed(&S[..8]), Behavior::Allow, None, None, None, Via::Cli).await.unwrap();
    assert_eq!((given.request.id.as_str(), given.choice.as_deref()), (id.as_str(), Some("Stay in auto mode")));
    let calls = f.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].route.clone(), calls[0].pid), (tmux(), Some(42)));
    assert_eq!(calls[0].answers, [checked(Answer::Approve, DialogKind::AutoMode, Some("curl x | sh"))]);
    let log = f.answered.lock().unwrap().clone();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].id.as_str(), log[0].behavior.as_str(), log[0].choice.as_deref()),
        (id.as_str(), "allow", Some("Stay in auto mode"))
    );
    assert!(a.pending().is_empty(), "answered: gone");

    // A question: each answer by its label, then the review's "Submit answers".
    a.sync_dialogs(vec![listed(key("input needed", 2), DialogKind::Question, None, tmux())]);
    let q = a.pending()[0].id.clone();
    let e = a
        .decide(Target::Id(&q), Behavior::Deny, Some("no".into()), None, None, Via::Cli)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("takes no message from here"), "{e}");
    let e = a
        .decide(Target::Id(&q), Behavior::Deny, None, None, Some(vec!["Blue".into()]), Via::Cli)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("answers go with approve"), "{e}");
    a.decide(Target::Id(&q), Behavior::Allow, None, None, Some(vec!["Blue".into(), "Small".into()]), Via::Cli)
        .await
        .unwrap();
    let calls = f.calls.lock().unwrap().clone();
    let steps: Vec<Answer> = ["Blue", "Small", "Submit answers"]
        .into_iter()
        .map(|l| checked(Answer::Option(l.into()), DialogKind::Question, None))
        .collect();
    assert_eq!(calls[1].answers, steps);

    // Manual mode's dialog: an option named by label; two are refused.
    a.sync_dialogs(vec![listed(key("permission prompt", 3), DialogKind::Permission, Some("ls"), tmux())]);
    let p = a.pending()[0].id.clone();
    let e = a
        .decide(Target::Id(&p), Behavior::Allow, None, None, Some(vec!["Yes".into(), "No".into()]), Via::Cli)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("takes one option, 2 were named"), "{e}");
    assert_eq!(f.calls.lock().unwrap().len(), 2, "refused before anything is typed");
    a.decide(Target::Id(&p), Behavior::Deny, None, None, None, Via::Tray).await.unwrap();
    assert_eq!(f.calls.lock().unwrap()[2].answers, [checked(Answer::Deny, DialogKind::Permission, Some("ls"))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_that_cannot_be_reached_or_answered_says_so_and_stays_listed() {
    let dir = tempfile::tempdir().unwrap();
    let f = face(dir.path(), Err("the dialog is still on the screen: Claude Code did not take the answer"));
    let a = &f.approvals;
    let why = "answer it in its terminal (pts/4): Mimesis can type into tmux panes …".to_owned();
    a.sync_dialogs(vec![listed(key("permission prompt", 1), DialogKind::Permission, Some("ls"), Route::Terminal(why))]);
    let p = a.pending()[0].clone();
    assert_eq!((p.channel, p.answer_in.as_deref().is_some_and(|w| w.contains("pts/4"))), (Channel::Terminal, true));
    let e = a.decide(Target::Id(&p.id), Behavior::Allow, None, None, None, Via::Window).await.unwrap_err().to_string();
    assert!(e.contains("cannot be answered from here") && e.contains("mimesis focus 5bd58612"), "{e}");
    assert!(f.calls.lock().unwrap().is_empty());

    a.sync_dialogs(vec![listed(key("permission prompt", 2), DialogKind::Permission, Some("ls"), tmux())]);
    let p = a.pending()[0].clone();
    let e = a.decide(Target::Id(&p.id), Behavior::Allow, None, None, None, Via::Window).await.unwrap_err().to_string();
    assert!(
        e.starts_with("could not answer a permission dialog of session 5bd58612 through its tmux pane: the dialog is still on the screen"),
        "{e}"
    );
    assert_eq!(a.pending()[0].id, p.id, "still listed while its dialog is there");
    assert!(f.answered.lock().unwrap().is_empty(), "nothing logged as answered");
    a.decide(Target::Id(&p.id), Behavior::Allow, None, None, None, Via::Window).await.unwrap_err();
    assert_eq!(f.calls.lock().unwrap().len(), 2, "tried again on the user's second click, not stuck");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_answer_at_a_time_per_dialog() {
    let dir = tempfile::tempdir().unwrap();
    let a = Approvals::serve(dir.path(), Arc::new(SystemClock), Arc::new(|_| {}));
    let (go, wait) = oneshot::channel::<()>();
    let (typing, started) = oneshot::channel::<()>();
    let held = Arc::new(Mutex::new(Some((typing, wait))));
    a.set_answerer(Arc::new(move |_| {
        let held = held.lock().unwrap().take();
        Box::pin(async move {
            if let Some((typing, wait)) = held {
                let _ = typing.send(());
                let _ = wait.await;
            }
            Ok("Yes".to_owned())
        })
    }));
    a.sync_dialogs(vec![listed(key("permission prompt", 1), DialogKind::Permission, Some("ls"), tmux())]);
    let id = a.pending()[0].id.clone();
    let first = {
        let (a, id) = (a.clone(), id.clone());
        tokio::spawn(async move { a.decide(Target::Id(&id), Behavior::Allow, None, None, None, Via::Window).await })
    };
    started.await.unwrap();
    let e = a.decide(Target::Id(&id), Behavior::Deny, None, None, None, Via::Tray).await.unwrap_err().to_string();
    assert!(e.contains("is being typed already"), "{e}");
    // The dialog went meanwhile (the keys were taken): the answer still says what it chose.
    a.sync_dialogs(Vec::new());
    assert_eq!(a.pending().len(), 1, "kept while its answer is typed");
    go.send(()).unwrap();
    let given = first.await.unwrap().unwrap();
    assert_eq!(given.choice.as_deref(), Some("Yes"));
    assert!(a.pending().is_empty());
}
