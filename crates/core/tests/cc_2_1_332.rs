//! Sanitized real files of Claude Code 2.1.332 (`tests/fixtures/cc-2.1.332/`, written by
//! `MIMESIS_BLESS=1 cargo test -p mimesis-tests --test bg_real_cli`; what they are:
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
    for entry in std::fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
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
