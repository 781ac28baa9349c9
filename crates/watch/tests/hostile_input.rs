//! A standing guard against hostile input (issue 10): random and adversarial bytes through
//! the transcript parser (facts and timeline), the tailer (records cut at every byte, the
//! file grown in random pieces), the hook payload reader, the readers of the live registry
//! and of the background service's job, roster and status files (issue 33), the permission
//! socket's messages and typed targets, and the remote protocol (what a hostile machine sends
//! over `--host`) (issue 32). Nothing may panic, hang or overflow a stack, a tailed file must
//! give the same facts however it was cut, and a remote's words in an error reach the user
//! cleaned and cut short.
//!
//! Deterministic per seed; time-boxed: `MIMESIS_FUZZ_SECS` (default 3 s per target) and
//! `MIMESIS_FUZZ_SEED`. The run's executions are printed.

use std::io::Write;
use std::time::{Duration, Instant};

use mimesis_core::approval::{self, Pending, ToFace};
use mimesis_core::clock::Timestamp;
use mimesis_core::facts::SessionFacts;
use mimesis_core::hook_event::{TerminalContext, parse_payload};
use mimesis_core::ids::SessionId;
use mimesis_core::timeline::TimelineBuilder;
use mimesis_watch::parse::SonicJson;
use mimesis_watch::tail::FileTail;

/// xorshift64*: small, fast and deterministic; no dependency needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn budget() -> Duration {
    let secs = std::env::var("MIMESIS_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0f64);
    Duration::from_secs_f64(secs)
}

fn seed() -> u64 {
    std::env::var("MIMESIS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234_abcd_0001)
}

/// Real-looking records of every kind Mimesis reads, to mutate.
const SEEDS: &[&str] = &[
    r#"{"type":"user","uuid":"u1","timestamp":"2026-11-24T00:00:00.000Z","cwd":"/p","sessionId":"s","message":{"role":"user","content":"fix the parser"}}"#,
    r#"{"type":"assistant","uuid":"a1","timestamp":"2026-11-24T00:00:01.000Z","requestId":"r","message":{"id":"m1","model":"claude-opus-5-5","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"output_tokens":5}}}"#,
    r#"{"type":"user","uuid":"u2","timestamp":"2026-11-24T00:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}]}}"#,
    r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","timestamp":"2026-11-24T00:00:03.000Z","compactMetadata":{"trigger":"auto","preTokens":160000}}"#,
    r#"{"type":"user","isCompactSummary":true,"uuid":"s1","timestamp":"2026-11-24T00:00:04.000Z","message":{"content":"This session is being continued from a previous conversation"}}"#,
    r#"{"type":"cost-state","sessionId":"s","totalCostUSD":0.0176,"modelUsage":{"claude-opus-5-5":{"inputTokens":4000,"outputTokens":80}}}"#,
    r#"{"parentUuid":"p","isSidechain":false,"attachment":{"type":"prompt_snapshot","systemPrompt":["x"]},"type":"attachment","uuid":"at","timestamp":"2026-11-24T00:00:05.000Z"}"#,
    r#"{"type":"api-request-shape","sessionId":"s","shape":{"system":[{"type":"text","text":"y"}]}}"#,
    r#"{"type":"last-prompt","lastPrompt":"go on","sessionId":"s"}"#,
    r#"{"type":"system","subtype":"local_command","content":"<local-command-stdout>\u001b[2mdone\u001b[22m</local-command-stdout>"}"#,
];

const HOOK_SEEDS: &[&str] = &[
    r#"{"session_id":"abc","hook_event_name":"SessionStart","source":"startup","cwd":"/p","transcript_path":"/p/x.jsonl"}"#,
    r#"{"session_id":"abc","hook_event_name":"Notification","notification_type":"permission_prompt"}"#,
    r#"{"session_id":"abc","hook_event_name":"StopFailure"}"#,
];

/// Claude Code 2.1.332's background service files: a job's state, the roster (with its
/// secrets), the status file, a background session's registry entry.
const BACKGROUND_SEEDS: &[&str] = &[
    r#"{"state":"working","detail":"starting…","tempo":"blocked","needs":"answer: Which? (Red · Blue)","block":{"questions":[{"question":"Which?","options":[{"label":"Red"}]}]},"intent":"say hello","sessionId":"aa2e1246-11cc-48b1-aa61-76af4aa5d5aa","daemonShort":"aa2e1246","cwd":"/p","updatedAt":"2026-11-28T21:02:56.644Z","linkScanPath":"/h/.claude/projects/-p/aa2e1246-11cc-48b1-aa61-76af4aa5d5aa.jsonl"}"#,
    r#"{"proto":1,"supervisorPid":26791,"workers":{"aa2e1246":{"pid":26802,"procStart":"268567","sessionId":"aa2e1246-11cc-48b1-aa61-76af4aa5d5aa","attempt":2,"cwd":"/p","rvAuth":"00","ptyAuth":"00","replPid":26820,"replProcStart":"268594","dispatch":{"launch":{"mode":"prompt","args":["--session-id"]}}}}}"#,
    r#"{"supervisorPid":26791,"supervisorProcStart":"268524","writtenAt":1795899772708,"workers":{}}"#,
    r#"{"pid":26820,"sessionId":"aa2e1246-11cc-48b1-aa61-76af4aa5d5aa","kind":"bg","jobId":"aa2e1246","status":"waiting","waitingFor":"permission prompt","procStart":"268594"}"#,
];

/// Hostile fragments spliced into records.
const NASTY: &[&str] = &[
    "1.5e300",
    "-1",
    "18446744073709551616",
    "\"\\ud800\"",
    "null",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":",
    "\u{202e}",
    "\\",
    "\"",
    "\n",
    "\0",
    "\u{feff}",
    "{\"type\":\"user\"}",
    "\u{1b}]52;c;cm0gLXJmIH4=\u{7}",
    "\u{1b}]0;pwned\u{7}",
    "\u{1b}[2J",
    "\u{9b}31m",
    "\\u001b]2;x\\u0007",
    "\\u009b",
];

/// What a remote machine sends (`mimesis serve --stdio`), to mutate.
const REMOTE_SEEDS: &[&str] = &[
    r#"{"type":"hello","protocol":2,"version":"0.1.0","os":"linux","arch":"x86_64"}"#,
    r#"{"type":"snapshot","sessions":[{"sessionId":"s1","projectId":"-p","cwd":"/p","repoRoot":null,"branch":"main","goal":"fix","summary":null,"title":null,"status":"idle","hasPendingToolUse":false,"pendingTool":null,"lastActivityAt":"2026-11-25T10:00:00.000Z","createdAt":null,"model":"claude-opus-5","usage":{"inputTokens":1,"outputTokens":2,"cacheCreationInputTokens":0,"cacheReadInputTokens":0},"apiError":false,"compactionCount":0,"superseded":false,"supersededBy":null,"supersededAt":null,"workChainId":null,"workChainName":null,"chainLength":1,"source":"watcher","supervision":null,"live":true,"pid":7,"transcriptPath":"/p/s1.jsonl","permissionMode":null,"malformedLines":0,"statusFile":null,"name":null}]}"#,
    r#"{"type":"event","event":{"type":"updated","sessionId":"s1","changes":{"sessionId":"hijack","transcriptPath":"/etc/shadow","host":"x","goal":"ok","status":"working"}}}"#,
    r#"{"type":"event","event":{"type":"removed","sessionId":"s1"}}"#,
    r#"{"type":"timeline","req":1,"items":[{"kind":"segment","uuid":"u","timestamp":null,"sessionId":"s1","previousSessionId":"s0","reason":"clear"}]}"#,
    r#"{"type":"error","req":null,"message":"this Mimesis speaks protocol 2, not 99"}"#,
    r#"{"type":"supervision","event":{"type":"session_started","sessionId":"s1","at":"2026-11-25T10:00:00.000Z"}}"#,
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.truncate(i);
            }
            2 => {
                let i = rng.below(v.len() + 1);
                let n = rng.pick(NASTY).as_bytes().to_vec();
                v.splice(i..i, n);
            }
            3 => {
                let depth = 1 + rng.below(60_000);
                let i = rng.below(v.len() + 1);
                v.splice(i..i, std::iter::repeat_n(if rng.below(2) == 0 { b'[' } else { b'{' }, depth));
            }
            4 => {
                let i = rng.below(v.len() + 1);
                let junk: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
                v.splice(i..i, junk);
            }
            5 => {
                let other = rng.pick(SEEDS).as_bytes();
                v.extend_from_slice(other);
            }
            _ => {}
        }
    }
    v
}

#[test]
fn the_parsers_survive_anything() {
    let mut rng = Rng(seed());
    let started = Instant::now();
    let mut runs = 0u64;
    let mut scratch = String::new();
    while started.elapsed() < budget() {
        let base = *rng.pick(SEEDS);
        let line = mutate(&mut rng, base.as_bytes());
        let mut facts = SessionFacts::default();
        facts.apply_line(&line, &mut scratch);
        assert!(facts.usage.total() < u64::MAX / 2, "no absurd totals from {:?}", String::from_utf8_lossy(&line));
        // The index's SIMD parser, on the same line.
        let mut fast = SessionFacts::default();
        fast.apply_line_with(&SonicJson, &line, &mut scratch);
        assert!(fast.usage.total() < u64::MAX / 2);
        let mut tl = TimelineBuilder::new();
        tl.push_line(&line, &mut Vec::new());
        let base = *rng.pick(HOOK_SEEDS);
        let hook = mutate(&mut rng, base.as_bytes());
        let _ = parse_payload(&hook, Timestamp::from_millis(0), TerminalContext::default());
        let base = *rng.pick(BACKGROUND_SEEDS);
        let file = mutate(&mut rng, base.as_bytes());
        if let Some(st) = mimesis_core::job::parse_state(&file) {
            for t in [&st.detail, &st.needs, &st.intent, &st.name].into_iter().flatten() {
                assert!(!t.chars().any(char::is_control), "a job's text reaches a row clean: {t:?}");
            }
            let _ = st.signal();
        }
        if let Some(r) = mimesis_core::daemon::parse_roster(&file) {
            assert!(r.workers.len() <= mimesis_core::daemon::MAX_WORKERS);
            assert!(r.workers.iter().all(|w| w.pid > 0 && w.pid <= i32::MAX as u32), "only real PIDs: {r:?}");
        }
        let _ = mimesis_core::daemon::parse_status(&file);
        let _ = mimesis_core::registry::parse_entry(&file, 26820);
        runs += 1;
    }
    eprintln!("parsers: {runs} inputs in {:.1} s", started.elapsed().as_secs_f64());
    assert!(runs > 100, "the fuzz loop ran");
}

/// A hostile machine's lines: parsed or refused, never a panic; a refusal is a sentence
/// with no control or bidi character that quotes the remote at most `QUOTE_MAX`
/// characters; an update keeps only what a host may change of its own row.
#[test]
fn the_remote_protocol_survives_anything_and_its_errors_quote_it_cleanly() {
    use mimesis_core::remote::{FromRemote, QUOTE_MAX, remote_patch};
    use mimesis_core::session::StoreEvent;
    let mut rng = Rng(seed() ^ 0x3e30);
    let started = Instant::now();
    let (mut runs, mut refused) = (0u64, 0u64);
    while started.elapsed() < budget() {
        let base = *rng.pick(REMOTE_SEEDS);
        let line = mutate(&mut rng, base.as_bytes());
        match FromRemote::parse(&line) {
            Err(f) => {
                refused += 1;
                let s = f.sentence();
                assert!(
                    !s.chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                    "{s:?} from {:?}",
                    String::from_utf8_lossy(&line)
                );
                assert!(s.chars().count() <= 4 * QUOTE_MAX + 1, "{s:?}");
            }
            Ok(FromRemote::Event { event: StoreEvent::Updated { changes, .. } }) => {
                let kept = remote_patch(*changes);
                assert!(kept.session_id.is_none() && kept.transcript_path.is_none() && kept.host.is_none());
            }
            Ok(_) => {}
        }
        runs += 1;
    }
    eprintln!("remote protocol: {runs} lines ({refused} refused) in {:.1} s", started.elapsed().as_secs_f64());
    assert!(runs > 100, "the fuzz loop ran");
}

/// A file grown in random pieces (records cut at any byte, torn ends) gives the facts that
/// reading it whole gives.
#[test]
fn the_tailer_gives_the_same_facts_however_the_file_grows() {
    let mut rng = Rng(seed() ^ 0x7a11);
    let started = Instant::now();
    let mut runs = 0u64;
    let dir = tempfile::tempdir().unwrap();
    while started.elapsed() < budget() {
        let mut content = Vec::new();
        for _ in 0..1 + rng.below(12) {
            let base = *rng.pick(SEEDS);
            let rec = if rng.below(5) == 0 { mutate(&mut rng, base.as_bytes()) } else { base.as_bytes().to_vec() };
            content.extend_from_slice(&rec);
            content.push(b'\n');
        }
        let path = dir.path().join(format!("{runs}.jsonl"));
        let whole = facts_of_whole(&path, &content);
        // The same bytes, appended in random pieces with a read after each.
        std::fs::write(&path, b"").unwrap();
        let mut tail = FileTail::new(&path);
        let mut facts = SessionFacts::default();
        let mut scratch = String::new();
        let mut at = 0;
        while at < content.len() {
            let n = 1 + rng.below(content.len() - at);
            std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&content[at..at + n]).unwrap();
            at += n;
            tail.read_new(|l| facts.apply_line(l, &mut scratch)).unwrap();
        }
        assert_eq!(
            (facts.usage, facts.records, facts.malformed, facts.goal().map(str::to_owned)),
            (whole.usage, whole.records, whole.malformed, whole.goal().map(str::to_owned)),
            "pieces and whole differ for {:?}",
            String::from_utf8_lossy(&content)
        );
        runs += 1;
    }
    eprintln!("tailer: {runs} files in {:.1} s", started.elapsed().as_secs_f64());
    assert!(runs > 10, "the fuzz loop ran");
}

fn facts_of_whole(path: &std::path::Path, content: &[u8]) -> SessionFacts {
    std::fs::write(path, content).unwrap();
    let mut tail = FileTail::new(path);
    let mut facts = SessionFacts::default();
    let mut scratch = String::new();
    tail.read_new(|l| facts.apply_line(l, &mut scratch)).unwrap();
    facts
}

/// What the permission socket carries (issue 32): the face's messages, and the hook payloads
/// a request is made from.
const APPROVAL_SEEDS: &[&str] = &[
    r#"{"op":"request","sessionId":"5bd58612-9f00","tool":"Bash","target":"rm -rf ~/important","cwd":"/p","detail":{"kind":"write","file":"/p/a","content":"x"}}"#,
    r#"{"op":"list","cursor":"17"}"#,
    r#"{"op":"decide","target":"req_5bd586","behavior":"allow","message":null,"answersInOrder":["SQLite"],"via":"window"}"#,
    r#"{"session_id":"abc","hook_event_name":"PermissionRequest","cwd":"/p","tool_name":"MultiEdit","tool_input":{"file_path":"/p/a","edits":[{"old_string":"a","new_string":"b"}]}}"#,
    r#"{"session_id":"abc","hook_event_name":"PermissionRequest","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}}"#,
];

/// Issue 32, 3: which open request a typed target names, said again plainly: its id
/// (whole), or the one request whose id alone begins with it, or the one request of the one
/// session whose id alone begins with it; a prefix of at least 4 characters besides `req_`,
/// or a whole session id.
fn named(target: &str, open: &[&Pending], exact: bool) -> Option<usize> {
    let t = target.trim();
    if t.is_empty() {
        return None;
    }
    if let Some(i) = open.iter().position(|p| p.id == t) {
        return Some(i);
    }
    if exact {
        return None;
    }
    let whole_session = open.iter().any(|p| p.request.session_id.as_str() == t);
    if t.strip_prefix("req_").unwrap_or(t).chars().count() < 4 && !whole_session {
        return None;
    }
    let by_id: Vec<usize> = (0..open.len())
        .filter(|&i| open[i].id.starts_with(t) || (!t.starts_with("req_") && open[i].id[4..].starts_with(t)))
        .collect();
    let by_session: Vec<usize> =
        (0..open.len()).filter(|&i| open[i].request.session_id.as_str().starts_with(t)).collect();
    match (by_id.as_slice(), by_session.as_slice()) {
        ([i], []) | ([], [i]) => Some(*i),
        _ => None,
    }
}

/// Mutated socket lines and hook payloads never panic, and a request made from a payload
/// fits a line; a target the user types names a request exactly when it names only one
/// (requests whose ids and session ids share prefixes on purpose).
#[test]
fn permission_messages_and_typed_targets_survive_anything() {
    let mut rng = Rng(seed() ^ 0xa991);
    let started = Instant::now();
    let (mut runs, mut named_one, mut both_kinds) = (0u64, 0u64, 0u64);
    let hex = |rng: &mut Rng, n: usize| -> String { (0..n).map(|_| format!("{:x}", rng.below(16))).collect() };
    while started.elapsed() < budget() {
        let seed = *rng.pick(APPROVAL_SEEDS);
        let line = mutate(&mut rng, seed.as_bytes());
        let _ = serde_json::from_slice::<ToFace>(&line);
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
            let r = approval::request_of(SessionId::parse("s").unwrap(), None, &v);
            let size = serde_json::to_vec(&ToFace::Request(r.clone())).unwrap().len();
            assert!(size <= 2 * line.len() + 4096 && size < approval::MAX_LINE, "{size} from {} bytes", line.len());
            assert!(r.target.is_none_or(|t| t.chars().count() <= 301 && !t.chars().any(char::is_control)));
        }

        // Open requests sharing prefixes across kinds; targets cut from them, or junk.
        let n = rng.below(7);
        let common = hex(&mut rng, n);
        let open: Vec<Pending> = (0..1 + rng.below(5))
            .map(|_| {
                let id = format!("req_{common}{}", hex(&mut rng, 32 - common.len()));
                let session = match rng.below(3) {
                    0 => format!("{common}{}-9f00", hex(&mut rng, 4)),
                    1 => format!("req_{common}{}", hex(&mut rng, 2)),
                    _ => format!("{}-{}", hex(&mut rng, 8), hex(&mut rng, 4)),
                };
                let request = approval::Request {
                    session_id: SessionId::parse(&session).unwrap(),
                    tool: "Bash".into(),
                    target: Some("ls".into()),
                    cwd: None,
                    detail: None,
                };
                let mut p = Pending::hook(id, request, Timestamp::from_millis(0));
                p.known_session = true;
                p
            })
            .collect();
        let list: Vec<&Pending> = open.iter().collect();
        for _ in 0..8 {
            let p = rng.pick(&open);
            let whole = match rng.below(4) {
                0 => p.id.clone(),
                1 => p.id[4..].to_owned(),
                2 => p.request.session_id.as_str().to_owned(),
                _ => String::from_utf8_lossy(&mutate(&mut rng, p.id.as_bytes())).into_owned(),
            };
            let cut: String = whole.chars().take(rng.below(whole.chars().count() + 1)).collect();
            let target = if rng.below(6) == 0 { format!(" {cut}\t") } else { cut };
            for exact in [false, true] {
                let got = approval::resolve(&target, &list, exact);
                assert_eq!(
                    got.as_ref().ok().copied(),
                    named(&target, &list, exact),
                    "{target:?} (exact: {exact}) in {open:#?}"
                );
                match got {
                    Ok(_) => named_one += 1,
                    Err(approval::ResolveError::Ambiguous { .. }) => both_kinds += 1,
                    Err(_) => {}
                }
            }
        }
        runs += 1;
    }
    eprintln!(
        "permission messages: {runs} rounds in {:.1} s; {named_one} targets named one request, {both_kinds} began ids of both kinds",
        started.elapsed().as_secs_f64()
    );
    assert!(runs > 100 && named_one > 0 && both_kinds > 0, "the fuzz loop ran through both outcomes");
}
