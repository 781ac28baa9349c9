//! The face's socket, with real hooks' clients on real sockets.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mimesis_core::approval::{
    self, Answered, Behavior, Decided, Decision, MAX_OPEN, Pending, PendingList, ToFace, Via,
};
use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::*;
use mimesis_core::approval::Request;
use mimesis_core::clock::SystemClock;
use mimesis_hooks::approvals::{ClientError, ask, call};

fn request(session: &str) -> Request {
    Request {
        session_id: SessionId::parse(session).unwrap(),
        tool: "Bash".into(),
        target: Some("rm -rf build".into()),
        cwd: None,
        detail: None,
    }
}

fn serve(dir: &Path) -> Approvals {
    Approvals::serve(dir, Arc::new(SystemClock), Arc::new(|_| {}))
}

/// A face on a manual clock whose requests wait 120 s for an answer.
fn face_waiting_120_s(dir: &Path) -> (Arc<mimesis_core::clock::ManualClock>, Approvals) {
    use mimesis_core::clock::{ManualClock, Timestamp};
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let a = Approvals::serve(dir, clock.clone(), Arc::new(|_| {}));
    a.set_wait(Duration::from_secs(120));
    (clock, a)
}

async fn wait_open(a: &Approvals, n: usize) {
    let mut rx = a.subscribe();
    let _ = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|p| p.len() == n)).await;
    assert_eq!(a.pending().len(), n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_request_waits_for_the_users_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(approval::socket_path(dir.path())).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "owner-only");
    assert_eq!(*serve(dir.path()).serving().borrow(), Serving::Waiting, "one face answers");

    let data = dir.path().to_owned();
    let hook = tokio::task::spawn_blocking(move || ask(&data, &request("abc-1"), Duration::from_secs(30)));
    wait_open(&a, 1).await;
    let id = a.pending()[0].id.clone();
    assert!(id.len() == 36 && id.starts_with("req_"), "128 bits, in a form of their own: {id}");
    let err =
        a.decide(Target::Typed("zzzz"), Behavior::Allow, None, None, None, Via::Cli).await.unwrap_err().to_string();
    assert!(err.contains("no open permission request matches"), "{err}");
    assert!(
        a.decide(Target::Id("abc"), Behavior::Deny, None, None, None, Via::Window).await.is_err(),
        "the window names whole ids"
    );
    let answered =
        a.decide(Target::Typed("abc-"), Behavior::Deny, Some("not now".into()), None, None, Via::Cli).await.unwrap();
    assert_eq!(answered.request.id, id);
    let d = hook.await.unwrap();
    assert_eq!(d, Decision { behavior: Some(Behavior::Deny), message: Some("not now".into()), ..Decision::default() });
    assert!(a.decide(Target::Id(&id), Behavior::Allow, None, None, None, Via::Cli).await.is_err(), "single-use");

    // Over the socket, as the CLI does; the list is empty again.
    let data = dir.path().to_owned();
    let list: PendingList =
        tokio::task::spawn_blocking(move || call(&data, &ToFace::List { cursor: None }, Duration::from_secs(5)))
            .await
            .unwrap()
            .unwrap();
    assert!(list.pending.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_goes_away_takes_its_request_with_it_and_a_cancel_answers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    // A hook whose wait ends (as when Claude Code ends it): the request goes.
    let data = dir.path().to_owned();
    let short = tokio::task::spawn_blocking(move || ask(&data, &request("s-short"), Duration::from_millis(300)));
    wait_open(&a, 1).await;
    assert_eq!(short.await.unwrap(), Decision::default(), "no answer in time: no decision");
    wait_open(&a, 0).await;
    // The dialog answered elsewhere: the waiting hook returns with no decision.
    let data = dir.path().to_owned();
    let hook = tokio::task::spawn_blocking(move || ask(&data, &request("s-term"), Duration::from_secs(30)));
    wait_open(&a, 1).await;
    let asked = a.pending()[0].since;
    // A record the session wrote before this request was asked (the end of the last
    // dialog, read late) does not end it; one written after it does.
    a.cancel_session(&SessionId::parse("s-term").unwrap(), asked);
    a.cancel_session(&SessionId::parse("s-term").unwrap(), Timestamp::from_millis(asked.millis() - 5));
    assert_eq!(a.pending().len(), 1, "a request asked after the record stays open");
    a.cancel_session(&SessionId::parse("s-term").unwrap(), Timestamp::from_millis(asked.millis() + 1));
    assert_eq!(hook.await.unwrap(), Decision::default());
    wait_open(&a, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_cannot_reach_the_socket() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("(needs root to act as another user)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // Even with the folder open to all, the socket itself is the owner's only.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let _a = serve(dir.path());
    let path = approval::socket_path(dir.path());
    let script = format!(
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect({:?})\nexcept OSError:\n sys.exit(3)\nsys.exit(0)",
        path.to_str().unwrap()
    );
    let status = tokio::task::spawn_blocking(move || {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("python3").args(["-c", &script]).uid(65534).gid(65534).status()
    })
    .await
    .unwrap();
    match status {
        Ok(s) => assert_eq!(s.code(), Some(3), "nobody could connect to the owner's socket"),
        Err(e) => eprintln!("(cannot run python3 as another user: {e})"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_are_answered_by_question_and_every_answer_is_recorded_with_where_it_came_from() {
    use mimesis_core::approval::{Detail, Question, QuestionOption};
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<Answered>::new()));
    let on: OnAnswer = {
        let seen = seen.clone();
        Arc::new(move |a| seen.lock().unwrap().push(a.clone()))
    };
    let a = Approvals::serve(dir.path(), Arc::new(SystemClock), on);
    let mut q = request("q-1");
    q.tool = "AskUserQuestion".into();
    let option = |l: &str| QuestionOption { label: l.into(), description: None };
    q.detail = Some(Detail::Questions {
        questions: vec![Question {
            question: "Which database?".into(),
            header: Some("DB".into()),
            options: vec![option("Postgres"), option("SQLite")],
            multi_select: false,
        }],
    });
    let data = dir.path().to_owned();
    let hook = tokio::task::spawn_blocking(move || ask(&data, &q, Duration::from_secs(30)));
    wait_open(&a, 1).await;
    let wrong: BTreeMap<String, String> = [("Which colour?".to_owned(), "red".to_owned())].into();
    let err = a
        .decide(Target::Typed("q-1"), Behavior::Allow, None, Some(wrong), None, Via::Window)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no answer to"), "{err}");
    let err = a
        .decide(Target::Typed("q-1"), Behavior::Allow, None, None, Some(vec![]), Via::Cli)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 question(s) asked, 0 answer(s) given"), "{err}");
    assert_eq!(a.pending().len(), 1, "a wrong answer leaves the request open");
    a.decide(Target::Typed("q-1"), Behavior::Allow, None, None, Some(vec!["SQLite".into()]), Via::Notification)
        .await
        .unwrap();
    let d = hook.await.unwrap();
    let expected: BTreeMap<String, String> = [("Which database?".to_owned(), "SQLite".to_owned())].into();
    assert_eq!(d.answers.as_ref(), Some(&expected));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].via, seen[0].behavior.as_str()), (Via::Notification, "allow"));
    assert_eq!(seen[0].sentence(), "Answered from a notification: Which database? → SQLite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_ends_with_no_decision_once_it_waited_the_setting_by_the_faces_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, a) = face_waiting_120_s(dir.path());
    let data = dir.path().to_owned();
    let hook = tokio::task::spawn_blocking(move || ask(&data, &request("w-1"), Duration::from_secs(60)));
    wait_open(&a, 1).await;
    clock.advance(Duration::from_secs(119));
    assert_eq!(a.expire(), 0, "not before the wait");
    clock.advance(Duration::from_secs(1));
    assert_eq!(a.expire(), 1);
    assert_eq!(hook.await.unwrap(), Decision::default(), "the terminal's dialog decides");
    assert!(a.pending().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_face_expires_requests_on_its_own_again_after_it_had_none_open() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, a) = face_waiting_120_s(dir.path());
    for s in ["w-1", "w-2"] {
        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &request(s), Duration::from_secs(60)));
        wait_open(&a, 1).await;
        clock.advance(Duration::from_secs(120));
        let decided = tokio::time::timeout(Duration::from_secs(20), hook).await;
        assert_eq!(decided.expect("expired without a call").unwrap(), Decision::default(), "{s}");
        wait_open(&a, 0).await;
    }
}

#[test]
fn answers_are_logged_owner_only_and_read_back_per_session() {
    use mimesis_core::clock::Timestamp;
    let dir = tempfile::tempdir().unwrap();
    let answered = |s: &str, at: i64| Answered {
        session_id: SessionId::parse(s).unwrap(),
        at: Timestamp::from_millis(at),
        id: answer_id(),
        tool: Some("Bash".into()),
        target: Some("ls".into()),
        behavior: "deny".into(),
        choice: None,
        message: Some("not here".into()),
        answers: None,
        via: Via::Tray,
    };
    log_answer(dir.path(), &answered("s-a", 1)).unwrap();
    log_answer(dir.path(), &answered("s-b", 2)).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(approval::answers_path(dir.path()))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{torn\n[[[[\n"))
        .unwrap();
    log_answer(dir.path(), &answered("s-a", 3)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(approval::answers_path(dir.path())).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let items = mimesis_watch::timeline_view::answers_of(dir.path(), &SessionId::parse("s-a").unwrap());
    assert_eq!(items.len(), 2, "the other session's and the broken lines are left out");
    let v = serde_json::to_value(&items[0]).unwrap();
    assert_eq!(v["kind"], "answer");
    assert_eq!(v["via"], "tray");
    assert_eq!(v["text"], "Denied from the tray menu, telling Claude: “not here”");
}

#[test]
fn a_face_that_dies_while_a_hook_waits_never_turns_into_an_allow() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let a = rt.block_on(async { serve(dir.path()) });
    let data = dir.path().to_owned();
    let hook = std::thread::spawn(move || ask(&data, &request("s-crash"), Duration::from_secs(30)));
    let mut rx = a.subscribe();
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|p| p.len() == 1)).await })
        .expect("the request arrived")
        .unwrap();
    // The face goes away with everything it ran (as when the app crashes).
    drop(rx);
    drop(a);
    rt.shutdown_background();
    assert_eq!(hook.join().unwrap(), Decision::default(), "no decision: the terminal's dialog decides");
}

#[test]
fn with_no_face_the_hook_returns_at_once_with_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(ask(dir.path(), &request("s"), Duration::from_secs(30)), Decision::default());
    // A dead face's socket file: refused, not waited on.
    let stale = std::os::unix::net::UnixListener::bind(approval::socket_path(dir.path())).unwrap();
    drop(stale);
    assert_eq!(ask(dir.path(), &request("s"), Duration::from_secs(30)), Decision::default());
    let err = call::<PendingList>(dir.path(), &ToFace::List { cursor: None }, Duration::from_secs(1)).unwrap_err();
    assert!(matches!(err, ClientError::NoFace(_)), "{err}");
    assert!(err.to_string().contains("no Mimesis is running"), "{err}");
}

/// A hook as the face sees it: a connection that sent its request and stays open.
async fn raw_hook(dir: &Path, request: Request) -> UnixStream {
    let mut s = UnixStream::connect(approval::socket_path(dir)).await.expect("the face's socket");
    let mut line = serde_json::to_vec(&ToFace::Request(request)).unwrap();
    line.push(b'\n');
    s.write_all(&line).await.unwrap();
    s
}

async fn reply_of(s: UnixStream) -> serde_json::Value {
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(10), BufReader::new(s).read_line(&mut line))
        .await
        .expect("a reply at once")
        .unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:.200}"))
}

/// Issue 32, 3: with two open requests in one session, its id names neither (it used to
/// name "the oldest"); each is named by its own id, whose form no session id has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_of_one_session_are_answered_by_their_own_ids_only() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    let mut second = request("5bd58612-aaaa");
    second.target = Some("echo harmless".into());
    let _h1 = raw_hook(dir.path(), request("5bd58612-aaaa")).await;
    wait_open(&a, 1).await;
    let _h2 = raw_hook(dir.path(), second).await;
    wait_open(&a, 2).await;
    let ids: Vec<String> = a.pending().iter().map(|p| p.id.clone()).collect();
    let data = dir.path().to_owned();
    let typed = |target: &str| {
        let (data, target) = (data.clone(), target.to_owned());
        tokio::task::spawn_blocking(move || {
            let msg = ToFace::Decide {
                target,
                behavior: Behavior::Allow,
                message: None,
                answers: None,
                answers_in_order: None,
                via: Via::Cli,
            };
            call::<Decided>(&data, &msg, Duration::from_secs(5)).unwrap()
        })
    };
    let refused = typed("5bd586").await.unwrap();
    let err = refused.error.expect("refused");
    assert!(err.contains("has 2 open requests") && err.contains(&ids[0]) && err.contains(&ids[1]), "{err}");
    assert_eq!(a.pending().len(), 2, "nothing answered");
    let answered = typed(&ids[1][..10]).await.unwrap().answered.expect("answered by a prefix of its id");
    assert_eq!((answered.id.as_str(), answered.request.target.as_deref()), (ids[1].as_str(), Some("echo harmless")));
    assert_eq!(a.pending().iter().map(|p| p.id.clone()).collect::<Vec<_>>(), vec![ids[0].clone()]);
}

fn write_detail(chars: usize) -> mimesis_core::approval::Detail {
    mimesis_core::approval::Detail::Write { file: "/p/big.txt".into(), content: "é".repeat(chars) }
}

/// Issue 32, 6: `mimesis pending` failed once the list passed 256 KiB ("EOF while parsing a
/// string at … column 262144"). The list comes in pages, whole, past 256 KiB and past
/// 1 MiB; the largest request a hook can make goes through each way; a line past the
/// bound is refused with a sentence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_requests_of_any_size_the_protocol_makes_come_whole() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    let mut hooks = Vec::new();
    let list = || {
        let data = dir.path().to_owned();
        tokio::task::spawn_blocking(move || mimesis_hooks::approvals::list(&data, Duration::from_secs(10)))
    };
    for (n, past) in [(20, 256 * 1024), (60, 1024 * 1024)] {
        while hooks.len() < n {
            let mut r = request(&format!("s-{}", hooks.len()));
            r.detail = Some(write_detail(10_000));
            hooks.push(raw_hook(dir.path(), r).await);
        }
        wait_open(&a, n).await;
        let got = list().await.unwrap().expect("the whole list");
        assert!(serde_json::to_vec(&got).unwrap().len() > past, "the list is longer than {past} bytes");
        let ids = |l: &[Pending]| l.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&got.pending), ids(&a.pending()), "every request, oldest first, once");
        assert!(got.next.is_none());
        assert!(got.pending.iter().all(|p| p.request.detail == Some(write_detail(10_000))), "each whole");
    }
    drop(hooks);
    wait_open(&a, 0).await;

    // The largest request a hook makes: a MultiEdit's 50 replacements at their cap.
    let mut big = request("s-big");
    big.tool = "MultiEdit".into();
    let text = "é".repeat(approval::DETAIL_CHARS);
    let edits = (0..50).map(|_| approval::Replacement { old: text.clone(), new: text.clone() }).collect();
    big.detail = Some(approval::Detail::Edit { file: "/p/a.rs".into(), edits });
    let size = serde_json::to_vec(&ToFace::Request(big.clone())).unwrap().len();
    assert!(size > 4_000_000 && size < approval::MAX_LINE, "{size}");
    let data = dir.path().to_owned();
    let sent = big.clone();
    let hook = tokio::task::spawn_blocking(move || ask(&data, &sent, Duration::from_secs(60)));
    wait_open(&a, 1).await;
    let got = list().await.unwrap().unwrap();
    assert_eq!(got.pending[0].request, big);
    let data = dir.path().to_owned();
    let decided: Decided = tokio::task::spawn_blocking(move || {
        let msg = ToFace::Decide {
            target: "s-big".into(),
            behavior: Behavior::Deny,
            message: None,
            answers: None,
            answers_in_order: None,
            via: Via::Cli,
        };
        call(&data, &msg, Duration::from_secs(30))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(decided.answered.expect("answered").request, big, "the reply names it whole");
    assert_eq!(hook.await.unwrap().behavior, Some(Behavior::Deny));

    // Past the bound: a sentence, not a cut line.
    let mut s = UnixStream::connect(approval::socket_path(dir.path())).await.unwrap();
    let (rd, mut wr) = s.split();
    let junk = vec![b'x'; approval::MAX_LINE + 10];
    let (_, reply) = tokio::join!(wr.write_all(&junk), async {
        let mut line = String::new();
        let _ = BufReader::new(rd).read_line(&mut line).await;
        line
    });
    assert!(reply.contains("a line longer than 16 MiB"), "{reply:.200}");
}

/// Issue 32, 7: 1,100 open requests used up the face's file descriptors. At most
/// `MAX_OPEN` are held; the next is refused at once with a sentence the hook logs, and
/// its dialog decides; the list and answers still go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_bound_are_refused_at_once_and_the_hook_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    let mut hooks = Vec::new();
    for i in 0..MAX_OPEN {
        hooks.push(raw_hook(dir.path(), request(&format!("s-{i}"))).await);
    }
    wait_open(&a, MAX_OPEN).await;
    let refused = reply_of(raw_hook(dir.path(), request("s-more")).await).await;
    assert_eq!(refused["behavior"], serde_json::Value::Null, "{refused}");
    let why = refused["error"].as_str().unwrap_or_default();
    assert!(why.contains("holds 256 open permission requests already"), "{refused}");

    let data = dir.path().to_owned();
    let d = tokio::task::spawn_blocking(move || ask(&data, &request("s-hook"), Duration::from_secs(30))).await.unwrap();
    assert_eq!(d, Decision::default(), "no decision: Claude Code's own dialog decides");
    let log = std::fs::read_to_string(mimesis_core::hook_event::log_file(dir.path())).unwrap();
    assert!(log.contains("took no request for session s-hook") && log.contains("holds 256"), "{log}");

    let data = dir.path().to_owned();
    let all = tokio::task::spawn_blocking(move || mimesis_hooks::approvals::list(&data, Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(all.pending.len(), MAX_OPEN, "the list still goes through");
    let first = all.pending[0].id.clone();
    a.decide(Target::Id(&first), Behavior::Allow, None, None, None, Via::Window).await.unwrap();
    let h = raw_hook(dir.path(), request("s-after")).await;
    wait_open(&a, MAX_OPEN).await;
    assert!(a.pending().iter().any(|p| p.request.session_id.as_str() == "s-after"), "room again after an answer");
    drop(h);
}

/// `face` serves (once it took over) and holds a hook's request; closed, it ends the
/// request with no decision.
async fn takes_over_and_lets_go(face: &Approvals, dir: &Path, session: &str) {
    let mut serving = face.serving();
    tokio::time::timeout(Duration::from_secs(10), serving.wait_for(|s| *s == Serving::Yes))
        .await
        .expect("serving")
        .unwrap();
    let (data, r) = (dir.to_owned(), request(session));
    let hook = tokio::task::spawn_blocking(move || ask(&data, &r, Duration::from_secs(30)));
    wait_open(face, 1).await;
    face.close();
    assert_eq!(hook.await.unwrap(), Decision::default(), "a stopping face decides nothing");
}

/// Issue 32, 8: a second face waits for the first and takes over when it stops (it never
/// did); a face that stops removes its socket, and one that died leaves a stale one that
/// the next face replaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_face_takes_over_and_a_stopping_face_takes_its_socket_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = approval::socket_path(dir.path());
    let a = serve(dir.path());
    let b = serve(dir.path());
    assert!(a.is_serving());
    assert_eq!(*b.serving().borrow(), Serving::Waiting);
    let err = b.decide(Target::Typed("s"), Behavior::Allow, None, None, None, Via::Cli).await.unwrap_err().to_string();
    assert!(err.contains("another running Mimesis answers"), "{err}");
    takes_over_and_lets_go(&a, dir.path(), "s-1").await;
    takes_over_and_lets_go(&b, dir.path(), "s-2").await;
    assert!(!path.exists(), "a face on its way out removes its socket");
}

/// Issue 32, 8: a face that dies (its runtime gone, no close) leaves its socket and lets go
/// of its lock: the next face replaces the stale socket.
#[test]
fn the_socket_a_dead_face_left_is_replaced_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = approval::socket_path(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let c = rt.block_on(async { serve(dir.path()) });
    assert!(c.is_serving());
    drop(c);
    rt.shutdown_background();
    assert!(path.exists(), "a stale socket");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async { takes_over_and_lets_go(&serve(dir.path()), dir.path(), "s-3").await });
}

/// Issue 32, 9: a request for a session in no roster was listed like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_session_in_no_roster_is_marked_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path());
    let known = Arc::new(Mutex::new(vec!["known-1".to_owned()]));
    let roster: Roster = {
        let known = known.clone();
        Arc::new(move |id| known.lock().unwrap().iter().any(|k| k == id.as_str()).then(|| "proj · Fix it".to_owned()))
    };
    a.set_roster(roster);
    let _h1 = raw_hook(dir.path(), request("known-1")).await;
    let _h2 = raw_hook(dir.path(), request("stranger-1")).await;
    wait_open(&a, 2).await;
    let data = dir.path().to_owned();
    let list = tokio::task::spawn_blocking(move || mimesis_hooks::approvals::list(&data, Duration::from_secs(5)))
        .await
        .unwrap()
        .unwrap();
    let v = serde_json::to_value(&list).unwrap();
    let by = |s: &str| v["pending"].as_array().unwrap().iter().find(|p| p["sessionId"] == s).unwrap().clone();
    assert_eq!(
        (by("known-1")["knownSession"].clone(), by("known-1")["sessionName"].clone()),
        (true.into(), "proj · Fix it".into())
    );
    assert_eq!(by("stranger-1")["knownSession"], false);
    assert!(by("stranger-1").get("sessionName").is_none());
    // The session shows up in the roster: the list says so.
    let mut rx = a.subscribe();
    known.lock().unwrap().push("stranger-1".into());
    a.roster_changed(&SessionId::parse("stranger-1").unwrap());
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|l| l.iter().all(|p| p.known_session)))
        .await
        .expect("marked known")
        .unwrap();
}

/// Hostile lines on the socket: each gets an error line (or nothing, for a line never
/// ended), nothing is decided, and the face goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_lines_get_a_sentence_and_decide_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let answered = Arc::new(Mutex::new(0));
    let on: OnAnswer = {
        let answered = answered.clone();
        Arc::new(move |_| *answered.lock().unwrap() += 1)
    };
    let a = Approvals::serve(dir.path(), Arc::new(SystemClock), on);
    let _held = raw_hook(dir.path(), request("5bd58612-aaaa")).await;
    wait_open(&a, 1).await;
    let deep = format!("{}\n", "[".repeat(100_000));
    let lines: Vec<Vec<u8>> = vec![
        deep.into_bytes(),
        b"\xff\xfe{\"op\":\"list\"}\n".to_vec(),
        b"\n".to_vec(),
        b"{\"op\":\"list\",\"cursor\":\"-1\"}\n".to_vec(),
        b"{\"op\":\"decide\",\"target\":\" \\t \",\"behavior\":\"allow\",\"message\":null}\n".to_vec(),
        b"{\"op\":\"decide\",\"target\":\"\",\"behavior\":\"allow\",\"message\":null}\n".to_vec(),
        b"{\"op\":\"decide\",\"target\":\"req_\",\"behavior\":\"allow\",\"message\":null,\"via\":\"window\"}\n".to_vec(),
        b"{\"op\":\"decide\",\"target\":\"5\",\"behavior\":\"allow\",\"message\":null}\n".to_vec(),
        b"{\"op\":\"decide\",\"target\":\"5bd58612-aaaa\",\"behavior\":\"maybe\",\"message\":null}\n".to_vec(),
        b"{\"op\":\"request\",\"sessionId\":\"../../etc\",\"tool\":\"Bash\",\"target\":null,\"cwd\":null}\n".to_vec(),
        b"{\"op\":\"request\",\"sessionId\":\"x\",\"tool\":\"Bash\",\"target\":null,\"cwd\":null,\"detail\":{\"kind\":\"nope\"}}\n".to_vec(),
        b"{\"op\":\"shutdown\"}\0\n".to_vec(),
    ];
    for line in lines {
        let mut s = UnixStream::connect(approval::socket_path(dir.path())).await.unwrap();
        s.write_all(&line).await.unwrap();
        let v = reply_of(s).await;
        let said = v.get("error").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        assert!(!said.is_empty() && v.get("answered").is_none(), "{:.80}: {v}", String::from_utf8_lossy(&line));
    }
    // A line never ended: the face lets go of it after a while, and serves meanwhile.
    let mut s = UnixStream::connect(approval::socket_path(dir.path())).await.unwrap();
    s.write_all(b"{\"op\":\"li").await.unwrap();
    assert_eq!(a.pending().len(), 1);
    assert_eq!(*answered.lock().unwrap(), 0, "nothing decided");
    let data = dir.path().to_owned();
    let list = tokio::task::spawn_blocking(move || mimesis_hooks::approvals::list(&data, Duration::from_secs(5)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(list.pending.len(), 1, "still serving");
}
