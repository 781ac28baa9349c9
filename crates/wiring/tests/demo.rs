//! The demo (SPEC X2) through the real engine: its live sessions show what they are meant
//! to (a pending Edit waits for approval, a question waits for input), so "needs you" is
//! more than 0 (issue 33: they all read idle, their transcripts being those of a CLI that
//! keeps a registry, and the demo having none).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mimesis_core::Status;
use mimesis_watch::{Engine, EngineConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_live_sessions_work_ask_and_wait_for_approval() {
    demo_shows_what_it_means(false).await;
}

/// The window's Demo button (`start_demo`): the demo's root is added to a running engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_windows_demo_added_to_a_running_engine_works_asks_and_needs_you() {
    demo_shows_what_it_means(true).await;
}

async fn demo_shows_what_it_means(added_later: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    let engine = Engine::start(EngineConfig {
        roots: if added_later { vec![] } else { vec![root.clone()] },
        poll_interval: Duration::from_millis(200),
        ..Default::default()
    });
    let demo = mimesis_wiring::demo::start(&root, 4.0).unwrap();
    engine.ready().await;
    if added_later {
        engine.add_root(root).await.unwrap();
    }
    let attention = engine.subscribe_attention();
    let mut seen = BTreeSet::new();
    let mut needed_you = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let wanted = [Status::Working, Status::WaitingForApproval, Status::WaitingForInput];
    while !(wanted.iter().all(|s| seen.contains(s.as_str())) && needed_you > 0) {
        assert!(Instant::now() < deadline, "statuses seen: {seen:?}; needs you: {needed_you}");
        for s in engine.snapshot().await.unwrap().sessions {
            seen.insert(s.status.as_str());
        }
        needed_you = needed_you.max(attention.borrow().count);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(demo);
    engine.shutdown().await;
}
