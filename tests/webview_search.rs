//! The window's search over all history (issue 35), end to end through the real webview
//! (WebDriver), on a fixture config dir and a temporary data dir: a word planted early in a
//! long session is found from the toolbar's "Search history", the hit shows its marked
//! snippet, and Enter opens that session's timeline at the item, highlighted and scrolled
//! into view (far above the tail the timeline opens with). A record appended while the app
//! runs is then found too: the app keeps the index current as the engine reads it.
//!
//! Run: `cargo build -p mimesis-desktop -p mimesis-cli && cargo test -p mimesis-tests --test
//! webview_search`. A screenshot goes to `target/e2e/webview-search.png`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, ensure};
use fantoccini::key::Key;
use mimesis_core::{Clock, SystemClock, Timestamp};
use mimesis_tests::webdriver::{DesktopApp, SessionOptions, workspace_root};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const LONG: &str = "aaaaaaaa-3333-4000-8000-00000000000a";
const OTHER: &str = "bbbbbbbb-3333-4000-8000-00000000000b";
/// The planted word: in one prompt of LONG, early, and nowhere else.
const PLANTED: &str = "zanzibarquokka";
/// A word that comes only in a record appended while the app runs.
const LATER: &str = "marsupialnebula";

fn ago(secs: i64) -> Timestamp {
    Timestamp::from_millis(SystemClock.now().millis() - secs * 1000)
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

struct Fixture {
    _dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    cwd: String,
}

impl Fixture {
    fn new() -> Result<Fixture> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let cwd = base.join("work/proj");
        std::fs::create_dir_all(&cwd)?;
        let config = base.join("claude");
        std::fs::create_dir_all(config.join("projects"))?;
        let data = base.join("data");
        std::fs::create_dir_all(&data)?;
        Ok(Fixture { _dir: dir, config, data, cwd: cwd.to_string_lossy().into_owned() })
    }

    fn append(&self, id: &str, records: &[Value]) -> Result<()> {
        let project = self.config.join("projects").join(self.cwd.replace('/', "-"));
        std::fs::create_dir_all(&project)?;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(project.join(format!("{id}.jsonl")))?;
        for r in records {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }

    fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("MIMESIS_DATA_DIR", self.data.clone().into_os_string()),
            ("CLAUDE_CONFIG_DIR", self.config.clone().into_os_string()),
            ("XDG_CONFIG_HOME", self.config.with_file_name("xdg-config").into_os_string()),
        ]
    }

    fn args(&self) -> Vec<String> {
        vec!["--config-dir".into(), self.config.to_string_lossy().into_owned()]
    }
}

fn record(kind: &str, cwd: &str, at: Timestamp, id: &str, extra: Value) -> Value {
    let mut v = json!({"type": kind, "uuid": id, "timestamp": at.to_iso(), "cwd": cwd, "gitBranch": "main",
                       "version": "2.1.197"});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn prompt(cwd: &str, text: &str, at: Timestamp, id: &str) -> Value {
    record("user", cwd, at, id, json!({"message": {"role": "user", "content": text}}))
}

fn reply(cwd: &str, text: &str, at: Timestamp) -> Value {
    record(
        "assistant",
        cwd,
        at,
        &uuid(),
        json!({"requestId": format!("req_{}", uuid()), "message": {
            "id": format!("msg_{}", uuid()), "model": "claude-opus-4-8", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 3, "output_tokens": 5}}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_word_is_found_and_opens_its_item_highlighted() -> Result<()> {
    let fx = Fixture::new()?;
    let cwd = fx.cwd.clone();
    // LONG: the planted prompt, then 200 turns (400 items): far above the timeline's tail.
    let planted_uuid = uuid();
    let mut records = vec![
        prompt(&cwd, "Set up the project", ago(7200), &uuid()),
        reply(&cwd, "Done.", ago(7199)),
        prompt(&cwd, &format!("Where did the {PLANTED} cache go?"), ago(7000), &planted_uuid),
        reply(&cwd, "It moved.", ago(6999)),
    ];
    for i in 0..200 {
        let at = ago(6000 - i * 10);
        records.push(prompt(&cwd, &format!("Step {i} of the plan"), at, &uuid()));
        records.push(reply(&cwd, &format!("Step {i} done."), at.plus(Duration::from_secs(1))));
    }
    fx.append(LONG, &records)?;
    fx.append(OTHER, &[prompt(&cwd, "Unrelated docs work", ago(300), &uuid()), reply(&cwd, "Fine.", ago(299))])?;

    let app = DesktopApp::launch_in_session(&fx.args(), &fx.env(), SessionOptions::default()).await?;
    let result = search_and_open(&app, &fx, &planted_uuid).await;
    let shot = workspace_root().join("target/e2e/webview-search.png");
    let shot = app.screenshot(&shot).await;
    app.close().await?;
    result?;
    shot
}

async fn search_and_open(app: &DesktopApp, fx: &Fixture, planted_uuid: &str) -> Result<()> {
    app.wait_for("two roster rows", WAIT, || async { Ok(app.count("[data-testid=roster-row]").await? == 2) }).await?;
    app.click("[data-testid=history-search-button]").await?;
    let input = app.find("[data-testid=history-query]").await?;
    input.send_keys(PLANTED).await?;
    // The index is built in the background once the roster is read: wait for the hit.
    app.wait_for("the planted word's hit", WAIT, || async {
        Ok(app.count(&format!("[data-testid=history-hit][data-uuid='{planted_uuid}']")).await? == 1)
    })
    .await?;
    ensure!(app.count("[data-testid=history-hit]").await? == 1, "the planted word is in one item only");
    let marked = app.js("return document.querySelector('[data-testid=history-hit] mark')?.textContent;").await?;
    ensure!(marked == json!(PLANTED), "the match is marked: {marked}");
    let session = app.js("return document.querySelector('[data-testid=history-hit]').dataset.sessionId;").await?;
    ensure!(session == json!(LONG), "the hit is LONG's: {session}");

    // Enter opens LONG's timeline at the item, highlighted and in view.
    input.send_keys(&char::from(Key::Enter).to_string()).await?;
    let timeline = format!("[data-testid=timeline][data-session-id='{LONG}']");
    let hit = format!("{timeline} [data-testid=timeline-hit][data-uuid='{planted_uuid}']");
    let took = app
        .wait_for("the item highlighted in view", WAIT, || async {
            let seen = app
                .js(&format!(
                    "const h = document.querySelector(\"{hit}\"); const t = document.querySelector(\"{timeline}\"); \
                     if (!h || !t) return false; const a = h.getBoundingClientRect(), b = t.getBoundingClientRect(); \
                     return h.textContent.includes('{PLANTED}') && a.height > 0 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;"
                ))
                .await?;
            Ok(seen == json!(true))
        })
        .await?;
    eprintln!("Enter → the item highlighted in view: {took:?}");
    ensure!(app.count("[data-testid=history-search]").await? == 0, "the dialog closed");

    // A record appended while the app runs is searchable once the engine has read it.
    let cwd = fx.cwd.clone();
    fx.append(OTHER, &[prompt(&cwd, &format!("Now the {LATER} part"), ago(0), &uuid())])?;
    app.click("[data-testid=history-search-button]").await?;
    app.find("[data-testid=history-query]").await?.send_keys(LATER).await?;
    // The field runs its query as typed; until the engine has read the record, it is asked again.
    let took = app
        .search_until("[data-testid=history-query]", "the appended record's hit", WAIT, || async {
            Ok(app.count("[data-testid=history-hit]").await? == 1)
        })
        .await?;
    eprintln!("appended → found: {took:?}");
    ensure!(
        app.js("return document.querySelector('[data-testid=history-hit]').dataset.sessionId;").await? == json!(OTHER)
    );
    Ok(())
}
