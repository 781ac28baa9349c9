//! A feed and a hub against hostile remotes (issue 32 §10–12): the "ssh" they run is a
//! script that reads the hello and then says what an attacker on the far side would, so
//! the local side is the real one and the remote is the adversary. Deadlines run on a
//! manual clock: a 2-minute wait is passed in a moment, never slept.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::clock::{ManualClock, Timestamp};
use mimesis_core::remote::{Destination, HostState, MAX_EVENT_LINE, MAX_HOST_SESSIONS, PROTOCOL};
use mimesis_core::session::StoreEvent;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;

/// How long a test waits for what the feed says (real time; the feed's deadlines are on
/// the manual clock).
const T: Duration = Duration::from_secs(30);

/// A remote that answers the hello with `lines` (one JSON value each), then stays
/// connected and silent, its input ignored: the script is the "ssh" the feed runs.
fn hostile_remote(dir: &Path, lines: impl IntoIterator<Item = Value>) -> Ssh {
    let said = dir.join("says.jsonl");
    let mut text = String::new();
    let hello = json!({"type": "hello", "protocol": PROTOCOL, "version": "0.1.0", "os": "linux", "arch": "x86_64"});
    for l in std::iter::once(hello).chain(lines) {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    std::fs::write(&said, text).unwrap();
    let script = dir.join("ssh");
    std::fs::write(&script, format!("#!/bin/sh\nread -r hello\ncat '{}'\nexec sleep 3600\n", said.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    Ssh::new(script, None)
}

fn row(id: &str) -> Value {
    json!({
        "sessionId": id, "projectId": "-p", "cwd": "/srv/api", "repoRoot": null, "branch": null, "goal": "fix it",
        "summary": null, "title": null, "status": "idle", "hasPendingToolUse": false, "pendingTool": null,
        "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": null,
        "usage": {"inputTokens": 0, "outputTokens": 0, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
        "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null, "supersededAt": null,
        "workChainId": null, "workChainName": null, "chainLength": 1, "source": "watcher", "supervision": null,
        "live": true, "pid": 4242, "transcriptPath": "/home/them/.claude/projects/-srv-api/a.jsonl",
        "permissionMode": null, "malformedLines": 0, "statusFile": null, "name": null
    })
}

fn discovered(row: Value) -> Value {
    json!({"type": "event", "event": {"type": "discovered", "session": row}})
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000)))
}

fn devbox() -> Destination {
    Destination::parse("devbox").unwrap()
}

/// The next message `pred` accepts (others are dropped).
async fn next(msgs: &mut mpsc::Receiver<FeedMsg>, what: &str, pred: impl Fn(&FeedMsg) -> bool) -> FeedMsg {
    let found = tokio::time::timeout(T, async {
        while let Some(m) = msgs.recv().await {
            if pred(&m) {
                return Some(m);
            }
        }
        None
    });
    match found.await {
        Ok(Some(m)) => m,
        _ => panic!("no {what} within {T:?}"),
    }
}

fn state(m: &FeedMsg) -> Option<&HostInfo> {
    match m {
        FeedMsg::State(i) => Some(i),
        _ => None,
    }
}

#[tokio::test]
async fn a_remote_update_changes_only_what_a_host_may_say_of_its_own_row() {
    let dir = tempfile::tempdir().unwrap();
    let id = "aaaaaaaa-0000-4000-8000-000000000001";
    let hijack = json!({"type": "event", "event": {"type": "updated", "sessionId": id, "changes":
        {"sessionId": "hijack", "transcriptPath": "/etc/shadow", "host": "elsewhere", "goal": "still fixing it"}}});
    let ssh = hostile_remote(dir.path(), [json!({"type": "snapshot", "sessions": [row(id)]}), hijack]);
    let (_feed, mut msgs) = HostFeed::start(ssh.clone(), devbox(), clock(), None);
    let update = next(&mut msgs, "the update", |m| matches!(m, FeedMsg::Event(StoreEvent::Updated { .. }))).await;
    let FeedMsg::Event(StoreEvent::Updated { session_id, changes }) = update else { unreachable!() };
    assert_eq!(session_id.as_str(), id, "keyed by the id it was sent for");
    assert_eq!(changes.fields(), ["goal"], "before issue 32: sessionId, transcriptPath and goal");

    // The window's copy of the row: still the host's, under its own id, its path not one here.
    let hub = Hub::new(ssh, clock());
    let mut events = hub.subscribe();
    hub.set_hosts(&[devbox()]);
    let key = format!("devbox:{id}");
    tokio::time::timeout(T, async {
        loop {
            if let Ok(HubEvent::Events(evs)) = events.recv().await
                && evs.iter().any(|e| e["type"] == "updated")
            {
                return;
            }
        }
    })
    .await
    .expect("the update in the window");
    let held = hub.row(&key).expect("the row under its own id");
    assert_eq!(held.goal.as_deref(), Some("still fixing it"));
    assert_eq!(held.transcript_path, "/home/them/.claude/projects/-srv-api/a.jsonl");
    assert_eq!(held.host.as_deref(), Some("devbox"));
    assert!(hub.row("devbox:hijack").is_none());
    let faced = hub.rows();
    assert_eq!(faced[0]["transcriptPath"], "devbox:/home/them/.claude/projects/-srv-api/a.jsonl");
}

#[tokio::test]
async fn a_host_that_says_hello_and_goes_silent_is_given_up_on_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let (_feed, mut msgs) = HostFeed::start(hostile_remote(dir.path(), []), devbox(), clock.clone(), None);
    next(&mut msgs, "connecting", |m| state(m).is_some_and(|i| i.state == HostState::Connecting)).await;
    // Before issue 32 it waited for the snapshot for ever. The clock passes the deadline
    // (again, until the feed had set it after the hello).
    let deadline = std::time::Instant::now() + T;
    let gone = loop {
        clock.advance(Duration::from_secs(121));
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(500), msgs.recv()).await {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "not given up within {T:?}");
    };
    let info = state(&gone).unwrap();
    assert_eq!(info.state, HostState::Unreachable);
    assert_eq!(info.message.as_deref(), Some("the host sent no sessions within 2 min of its hello"));
}

#[tokio::test]
async fn a_timeline_the_host_never_sends_is_answered_on_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let id = "aaaaaaaa-0000-4000-8000-000000000001";
    let ssh = hostile_remote(dir.path(), [json!({"type": "snapshot", "sessions": [row(id)]})]);
    let (feed, mut msgs) = HostFeed::start(ssh, devbox(), clock.clone(), None);
    next(&mut msgs, "live", |m| state(m).is_some_and(|i| i.state == HostState::Live)).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    assert!(feed.send(FeedCmd::Show(id.into(), tx)).await);
    // The clock passes the deadline of the request (again, until the feed had taken it).
    let mut rx = std::pin::pin!(rx);
    let deadline = std::time::Instant::now() + T;
    let answer = loop {
        clock.advance(Duration::from_secs(121));
        if let Ok(answer) = tokio::time::timeout(Duration::from_millis(500), rx.as_mut()).await {
            break answer.expect("not dropped");
        }
        assert!(std::time::Instant::now() < deadline, "no answer within {T:?}");
    };
    assert_eq!(answer.map_err(|e| e.to_string()), Err("the host did not answer within 2 min".to_owned()));
}

#[tokio::test]
async fn a_host_that_keeps_discovering_sessions_is_cut_off_at_the_cap_and_its_rows_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ids = (0..=MAX_HOST_SESSIONS).map(|n| format!("bbbbbbbb-0000-4000-8000-{n:012}"));
    let lines = std::iter::once(json!({"type": "snapshot", "sessions": []})).chain(ids.map(|id| discovered(row(&id))));
    let (_feed, mut msgs) = HostFeed::start(hostile_remote(dir.path(), lines), devbox(), clock(), None);
    let cut = next(&mut msgs, "the cut", |m| state(m).is_some_and(|i| i.state == HostState::Stale)).await;
    let info = state(&cut).unwrap();
    assert_eq!(info.sessions, MAX_HOST_SESSIONS, "the rows held so far are kept");
    let message = info.message.as_deref().unwrap_or_default();
    assert!(message.contains("more than 20,000 sessions"), "{message}");
}

#[tokio::test]
async fn a_host_whose_rows_grow_past_what_is_held_of_one_machine_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    // Rows just under the longest event line each, until they pass 64 MiB together.
    let big = |n: usize| {
        let mut r = row(&format!("cccccccc-0000-4000-8000-{n:012}"));
        r["goal"] = "g".repeat(MAX_EVENT_LINE - 2_000).into();
        discovered(r)
    };
    let lines = std::iter::once(json!({"type": "snapshot", "sessions": []})).chain((0..70).map(big));
    let (_feed, mut msgs) = HostFeed::start(hostile_remote(dir.path(), lines), devbox(), clock(), None);
    let cut = next(&mut msgs, "the cut", |m| state(m).is_some_and(|i| i.state == HostState::Stale)).await;
    let info = state(&cut).unwrap();
    assert!(info.sessions < 70 && info.sessions > 60, "{}", info.sessions);
    let message = info.message.as_deref().unwrap_or_default();
    assert!(message.contains("take more than 64.0 MiB"), "{message}");
}
