//! Sanitized real files of Claude Code 2.1.332 (`tests/fixtures/cc-2.1.332/`, written by
//! `MIMESIS_BLESS=1 cargo test -p mimesis-tests --test e2e bg_real_cli::`; what they are:
//! docs/claude-code-observed.md), read by the core as it is today: the facts the
//! background-service work of issue 33 starts from.

use std::path::{Path, PathBuf};

use mimesis_core::facts::SessionFacts;
use mimesis_core::registry::parse_entry;
use mimesis_core::status::RegistryState;
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.332")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(name: &str) -> Value {
    serde_json::from_slice(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn facts_of(name: &str) -> SessionFacts {
    let mut facts = SessionFacts::default();
    let mut scratch = String::new();
    for line in read(name).split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        facts.apply_line(line, &mut scratch);
    }
    facts
}

#[test]
fn every_fixture_is_whole_json() {
    let mut seen = 0;
    // (The dialogs' screens sit in a folder of their own: read too.)
    let mut files = Vec::new();
    let mut dirs = vec![dir()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        if name.ends_with(".json") {
            serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        } else if name.ends_with(".jsonl") {
            for (i, line) in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).enumerate() {
                serde_json::from_slice::<Value>(line).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
            }
        }
        assert!(!String::from_utf8_lossy(&bytes).contains("mimesis-home"), "{name} is not sanitized");
        seen += 1;
    }
    assert!(seen >= 30, "{seen} fixtures");
}

/// A background session's live registry entry (`kind: "bg"`, `jobId`) reads like any other
/// entry: its status is one more exact signal.
#[test]
fn the_registry_entry_of_a_background_session() {
    for (name, state) in
        [("registry.bg.json", RegistryState::Idle), ("registry.bg.waiting.json", RegistryState::WaitingForApproval)]
    {
        let raw = json(name);
        let pid = raw["pid"].as_u64().unwrap() as u32;
        let entry = parse_entry(&read(name), pid).unwrap_or_else(|| panic!("{name} is not read"));
        assert_eq!(entry.session_id.as_str(), raw["sessionId"].as_str().unwrap());
        assert!(
            entry.session_id.as_str().starts_with(raw["jobId"].as_str().unwrap()),
            "the job id is the session id's head"
        );
        assert_eq!(entry.signal().state, state, "{name}");
        assert_eq!(raw["kind"], "bg");
    }
}

/// The job files and `claude agents --json` agree on the id, the session and the state
/// vocabulary (`state` working|blocked|done|failed; `tempo` active|idle|blocked).
#[test]
fn the_job_files_and_the_agents_list_agree() {
    let agents = json("agents.waiting.json");
    let agent = &agents[0];
    let roster = json("roster.json");
    let (short, worker) = roster["workers"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(worker["dispatch"]["short"], *short);
    assert!(worker["sessionId"].as_str().unwrap().starts_with(short.as_str()));
    assert_eq!(agent["kind"], "background");
    assert_eq!(agent["state"], "blocked", "agents says blocked where state.json says tempo blocked");
    let blocked = json("state.blocked.permission.json");
    assert_eq!((blocked["state"].as_str(), blocked["tempo"].as_str()), (Some("working"), Some("blocked")));
    assert!(blocked["needs"].as_str().unwrap().starts_with("approve Bash: "));
    let question = json("state.blocked.question.json");
    assert_eq!(question["block"]["questions"][0]["options"][1]["label"], "Blue");
    for name in ["state.done.json", "state.stopped.json"] {
        let st = json(name);
        assert_eq!((st["state"].as_str(), st["backend"].as_str()), (Some("done"), Some("daemon")), "{name}");
    }
}

/// 2.1.332's transcripts read as before: the goal, the version, the interactive entrypoint
/// of a background session, the compaction, and the `manual` mode under its file name,
/// `default`.
#[test]
fn its_transcripts_read_as_before() {
    let bg = facts_of("transcript.bg.jsonl");
    assert_eq!(bg.goal(), Some("say hello"));
    assert_eq!(bg.cli_version.as_deref(), Some("2.1.332"));
    assert_eq!(bg.entrypoint.as_deref(), Some("cli"), "a background session is a `cli` session");
    assert_eq!(bg.malformed, 0);

    let interactive = facts_of("transcript.interactive.jsonl");
    assert_eq!(interactive.goal(), Some("install it"));
    assert_eq!(interactive.compaction_count, 1);
    assert_eq!(interactive.permission_mode.as_deref(), Some("default"), "manual mode is `default` in the file");
    assert_eq!(interactive.malformed, 0);
}

/// The service's files read by the core: each job state, the roster's workers (and none
/// of their secrets), the status file, the registry's kind and job id, the transcript's
/// `sessionKind`; and the state a row shows is the one `claude agents --json` shows.
#[test]
fn the_background_services_files_read_by_the_core() {
    use mimesis_core::daemon::{parse_roster, parse_status};
    use mimesis_core::ids::JobId;
    use mimesis_core::job::{SessionKind, parse_state};
    use mimesis_core::status::{JobNeed, JobTempo};

    let st = |name: &str| parse_state(&read(name)).unwrap_or_else(|| panic!("{name} is not read"));
    let starting = st("state.starting.json");
    assert_eq!(starting.signal().tempo, JobTempo::Active);
    assert_eq!(starting.detail.as_deref(), Some("starting…"));
    let done = st("state.done.json");
    assert_eq!((done.shown_state().as_deref(), done.signal().tempo), (Some("done"), JobTempo::Idle));
    assert_eq!((done.intent.as_deref(), done.name.as_deref()), (Some("say hello"), Some("mock job")));
    let short = done.short.clone().unwrap();
    assert!(short.names(done.session_id.as_ref().unwrap()));
    assert_eq!(st("state.stopped.json").shown_state().as_deref(), Some("done"));
    for (name, need) in [
        ("state.blocked.permission.json", JobNeed::Approval),
        ("state.blocked.question.json", JobNeed::Input),
        ("state.blocked.plan.json", JobNeed::Approval),
    ] {
        let s = st(name);
        assert_eq!(
            (s.shown_state().as_deref(), s.signal().tempo),
            (Some("blocked"), JobTempo::Blocked(need)),
            "{name}"
        );
    }
    // `claude agents --json`'s state is the one a row shows.
    for (agents, state) in
        [("agents.json", "state.done.json"), ("agents.waiting.json", "state.blocked.permission.json")]
    {
        assert_eq!(json(agents)[0]["state"].as_str(), st(state).shown_state().as_deref(), "{agents}");
    }

    for (name, attempt) in [("roster.json", 1), ("roster.respawned.json", 1), ("roster.after-crash.json", 2)] {
        let roster = parse_roster(&read(name)).unwrap_or_else(|| panic!("{name} is not read"));
        assert_eq!(roster.workers.len(), 1, "{name}");
        let w = &roster.workers[0];
        assert!(w.job.names(&w.session_id) && w.repl_pid.is_some() && w.proc_start.is_some(), "{name}");
        assert_eq!(w.attempt, Some(attempt), "{name}");
        assert!(
            !format!("{roster:?}").contains("rvAuth")
                && !format!("{roster:?}").contains("00000000000000000000000000000000")
        );
    }
    let status = parse_status(&read("daemon.status.json")).unwrap();
    assert_eq!(u64::from(status.supervisor_pid), json("daemon.status.json")["supervisorPid"].as_u64().unwrap());

    let raw = json("registry.bg.json");
    let entry = parse_entry(&read("registry.bg.json"), raw["pid"].as_u64().unwrap() as u32).unwrap();
    assert_eq!(entry.kind, Some(SessionKind::Background));
    assert_eq!(entry.job_id, Some(JobId::parse(raw["jobId"].as_str().unwrap()).unwrap()));
    let raw = json("registry.interactive.dialog-open.json");
    let entry =
        parse_entry(&read("registry.interactive.dialog-open.json"), raw["pid"].as_u64().unwrap() as u32).unwrap();
    assert_eq!((entry.kind, entry.job_id), (Some(SessionKind::Interactive), None));

    assert!(facts_of("transcript.bg.jsonl").background);
    assert!(!facts_of("transcript.interactive.jsonl").background);
}
