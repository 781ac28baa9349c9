//! The index on real files and a real SQLite: built, extended by appends, rebuilt when
//! damaged, and queried.

use std::io::Write;
use std::path::PathBuf;

use mimesis_core::clock::Timestamp;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::search::{Kind, Request};

use super::*;

const NOW: &str = "2026-11-10T00:00:00.000Z";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        Fixture { root, data, _dir: dir }
    }

    fn path(&self, project: &str, session: &str) -> PathBuf {
        self.root.join("projects").join(project).join(format!("{session}.jsonl"))
    }

    fn append(&self, project: &str, session: &str, lines: &[String]) {
        let p = self.path(project, session);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn files(&self) -> Vec<TranscriptLocation> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(self.root.join("projects")) else { return out };
        for p in rd.flatten() {
            for f in std::fs::read_dir(p.path()).unwrap().flatten() {
                out.extend(TranscriptLocation::of(&self.root, &f.path()));
            }
        }
        out
    }

    fn index(&self) -> Index {
        let mut ix = Index::open(&self.data, NOW).unwrap();
        ix.update(&self.files(), &mut |_, _| {}).unwrap();
        ix
    }
}

fn prompt(uuid: &str, at: &str, text: &str) -> String {
    serde_json::json!({"type": "user", "uuid": uuid, "timestamp": at, "message": {"role": "user", "content": text}})
        .to_string()
}

fn reply(uuid: &str, at: &str, text: &str) -> String {
    serde_json::json!({"type": "assistant", "uuid": uuid, "timestamp": at,
        "message": {"content": [{"type": "text", "text": text}]}})
    .to_string()
}

fn tool(uuid: &str, at: &str, id: &str, name: &str, input: serde_json::Value) -> String {
    serde_json::json!({"type": "assistant", "uuid": uuid, "timestamp": at,
        "message": {"content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}})
    .to_string()
}

fn result(uuid: &str, at: &str, id: &str, text: &str) -> String {
    serde_json::json!({"type": "user", "uuid": uuid, "timestamp": at,
        "message": {"content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}})
    .to_string()
}

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";

fn search(ix: &Index, q: &str) -> Vec<(String, Kind)> {
    let r = ix.search(&Request { query: q.into(), ..Default::default() }).unwrap();
    r.hits.into_iter().map(|h| (h.uuid, h.kind)).collect()
}

fn two_sessions(fx: &Fixture) {
    fx.append(
        "-home-me-app",
        S1,
        &[
            prompt("p1", "2026-11-01T10:00:00Z", "Where should we drop the cache?"),
            reply("a1", "2026-11-01T10:00:05Z", "We could drop the Redis cache entirely."),
            tool(
                "t1",
                "2026-11-01T10:00:06Z",
                "toolu_1",
                "Edit",
                serde_json::json!({"file_path": "/home/me/app/src/store.rs", "old_string": "cache", "new_string": ""}),
            ),
            result("r1", "2026-11-01T10:00:07Z", "toolu_1", "The file has been updated: zebrafish"),
        ],
    );
    fx.append(
        "-home-me-lib",
        S2,
        &[
            prompt("p2", "2026-11-02T09:00:00Z", "run the migration"),
            tool(
                "t2",
                "2026-11-02T09:00:01Z",
                "toolu_2",
                "Read",
                serde_json::json!({"file_path": "/home/me/lib/src/mystore.rs"}),
            ),
            tool(
                "t3",
                "2026-11-02T09:00:02Z",
                "toolu_3",
                "Write",
                serde_json::json!({"file_path": "/home/me/lib/src/store.rs", "content": "fn main() {}"}),
            ),
            reply("a2", "2026-11-02T09:00:03Z", "The cache is gone."),
        ],
    );
}

#[test]
fn words_phrases_exclusions_kinds_projects_and_times() {
    let fx = Fixture::new();
    two_sessions(&fx);
    let ix = fx.index();
    // Newest first, every kind.
    assert_eq!(
        search(&ix, "cache"),
        [
            ("a2".into(), Kind::Reply),
            ("t1".into(), Kind::ToolCall),
            ("a1".into(), Kind::Reply),
            ("p1".into(), Kind::Prompt)
        ]
    );
    assert_eq!(search(&ix, "\"drop the\" CACHE"), [("a1".into(), Kind::Reply), ("p1".into(), Kind::Prompt)]);
    assert_eq!(search(&ix, "cache -redis -edit"), [("a2".into(), Kind::Reply), ("p1".into(), Kind::Prompt)]);
    assert_eq!(search(&ix, "migra*"), [("p2".into(), Kind::Prompt)]);
    // A prefix is read as the words it stands for (the index's `terms`), in phrases and
    // exclusions too; one that stands for no word finds nothing.
    assert!(!search(&ix, "cache").is_empty());
    assert_eq!(search(&ix, "cach*"), search(&ix, "cache"));
    assert_eq!(search(&ix, "CA*"), search(&ix, "cache"));
    assert_eq!(search(&ix, "\"drop the ca\"*"), search(&ix, "\"drop the cache\""));
    assert_eq!(search(&ix, "cache -redi*"), search(&ix, "cache -redis"));
    assert_eq!(search(&ix, "cachezz*"), []);
    // A tool result is found on its call's item.
    assert_eq!(search(&ix, "zebrafish"), [("t1".into(), Kind::ToolResult)]);
    let r = |f: &dyn Fn(&mut Request)| {
        let mut req = Request { query: "cache".into(), ..Default::default() };
        f(&mut req);
        ix.search(&req).unwrap().hits.into_iter().map(|h| h.uuid).collect::<Vec<_>>()
    };
    assert_eq!(r(&|q| q.kinds = vec![Kind::Prompt, Kind::ToolCall]), ["t1", "p1"]);
    assert_eq!(r(&|q| q.project = Some("lib".into())), ["a2"]);
    assert_eq!(r(&|q| q.project = Some("/home/me/app".into())), ["t1", "a1", "p1"]);
    assert_eq!(r(&|q| q.since = Timestamp::parse("2026-11-02T00:00:00Z")), ["a2"]);
    assert_eq!(r(&|q| q.limit = Some(1)), ["a2"]);
    let all = ix.search(&Request { query: "cache".into(), limit: Some(1), ..Default::default() }).unwrap();
    assert_eq!((all.total, all.total_capped), (4, false));
    let h = &all.hits[0];
    assert_eq!((h.session_id.as_str(), h.project.as_str()), (S2, "-home-me-lib"));
    assert_eq!(h.at, Timestamp::parse("2026-11-02T09:00:03Z").unwrap());
    assert_eq!(h.snippet, "The cache is gone.");
    assert_eq!(h.marks, [[4, 9]]);
}

#[test]
fn who_read_edited_or_wrote_a_file() {
    let fx = Fixture::new();
    two_sessions(&fx);
    let ix = fx.index();
    let file = |f: &str, q: &str| {
        let req = Request { query: q.into(), file: Some(f.into()), ..Default::default() };
        ix.search(&req).unwrap().hits.into_iter().map(|h| h.uuid).collect::<Vec<_>>()
    };
    assert_eq!(file("store.rs", ""), ["t3", "t1"]);
    assert_eq!(file("src/store.rs", ""), ["t3", "t1"]);
    assert_eq!(file("/home/me/app/src/store.rs", ""), ["t1"]);
    assert_eq!(file("mystore.rs", ""), ["t2"]);
    assert_eq!(file("tore.rs", ""), Vec::<String>::new());
    assert_eq!(file("store.rs", "cache"), ["t1"]);
}

#[test]
fn appends_are_read_from_where_the_index_stopped() {
    let fx = Fixture::new();
    two_sessions(&fx);
    let mut ix = fx.index();
    let docs = |ix: &Index| ix.conn.query_row("SELECT count(*) FROM docs", [], |r| r.get::<_, i64>(0)).unwrap();
    let before = docs(&ix);
    assert!(search(&ix, "kingfisher").is_empty());
    fx.append("-home-me-app", S1, &[prompt("p3", "2026-11-03T00:00:00Z", "kingfisher sighting")]);
    // A line still being written is not read until it is whole.
    let p = fx.path("-home-me-app", S1);
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    let half = prompt("p4", "2026-11-03T00:00:01Z", "kingfisher again");
    f.write_all(&half.as_bytes()[..20]).unwrap();
    let u = ix.update(&fx.files(), &mut |_, _| {}).unwrap();
    assert_eq!((u.files, u.docs), (1, 1));
    assert_eq!(search(&ix, "kingfisher"), [("p3".into(), Kind::Prompt)]);
    writeln!(f, "{}", &half[20..]).unwrap();
    ix.update(&fx.files(), &mut |_, _| {}).unwrap();
    assert_eq!(search(&ix, "kingfisher"), [("p4".into(), Kind::Prompt), ("p3".into(), Kind::Prompt)]);
    assert_eq!(docs(&ix), before + 2);
    // Nothing changed: nothing read.
    assert_eq!(ix.update(&fx.files(), &mut |_, _| {}).unwrap(), Updated::default());
    // A restart keeps the index.
    drop(ix);
    let mut ix = Index::open(&fx.data, NOW).unwrap();
    assert_eq!(ix.update(&fx.files(), &mut |_, _| {}).unwrap(), Updated::default());
    // A transcript rewritten shorter is read again, without doubles; one deleted is forgotten.
    std::fs::write(&p, format!("{}\n", prompt("p9", "2026-11-04T00:00:00Z", "kingfisher only"))).unwrap();
    std::fs::remove_file(fx.path("-home-me-lib", S2)).unwrap();
    let u = ix.update(&fx.files(), &mut |_, _| {}).unwrap();
    assert_eq!((u.files, u.docs, u.removed), (1, 1, 1));
    assert_eq!(search(&ix, "kingfisher"), [("p9".into(), Kind::Prompt)]);
    assert_eq!(docs(&ix), 1);
}

#[test]
fn a_damaged_or_deleted_index_is_built_anew() {
    let fx = Fixture::new();
    two_sessions(&fx);
    drop(fx.index());
    std::fs::write(fx.data.join(FILE_NAME), b"this is not a database, it was overwritten").unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(fx.data.join(format!("{FILE_NAME}{suffix}")));
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(fx.data.join(FILE_NAME)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the history is the user's alone");
    let st = Index::status(&fx.data);
    assert!(st.problem.is_some(), "{st:?}");
    let ix = fx.index();
    assert_eq!(search(&ix, "zebrafish").len(), 1);
    let st = Index::status(&fx.data);
    let (why, _) = st.built.clone().unwrap();
    assert!(why.contains("damaged"), "{st:?}");
    assert_eq!((st.files, st.problem), (2, None));
    drop(ix);
    std::fs::remove_file(fx.data.join(FILE_NAME)).unwrap();
    let ix = fx.index();
    assert_eq!(search(&ix, "zebrafish").len(), 1);
}

#[test]
fn bad_queries_get_a_result_or_a_sentence_and_snippets_are_plain_text() {
    let fx = Fixture::new();
    two_sessions(&fx);
    fx.append(
        "-home-me-app",
        S1,
        &[reply(
            "a9",
            "2026-11-05T00:00:00Z",
            "escape \u{1b}[2J\u{1b}]0;title\u{7} <script>alert(1)</script> cache\u{202e}evil",
        )],
    );
    let ix = fx.index();
    let long = "cache ".repeat(2000);
    let queries = [
        "\"drop the",
        "- \" * -",
        &long,
        r"^(cache|redis)+$ .* [a-z]{3}",
        "ca\0che",
        "缓存 Ошибка",
        "\"\"",
        "NEAR(a b)",
        "a:b {x}",
    ];
    for q in queries {
        match ix.search(&Request { query: q.to_string(), ..Default::default() }) {
            Ok(r) => {
                for h in r.hits {
                    assert!(!h.snippet.chars().any(|c| c.is_control() || c == '\u{202e}'), "{q:?}: {:?}", h.snippet);
                }
            }
            Err(IndexError::Request(e)) => assert!(!e.contains('\n') && !e.is_empty(), "{q:?}"),
            Err(e) => panic!("{q:?}: {e}"),
        }
    }
    let r = ix.search(&Request { query: "script".into(), ..Default::default() }).unwrap();
    assert!(r.hits[0].snippet.contains("<script>"), "text, kept as text: {:?}", r.hits[0].snippet);
}

/// Prompts with words that share beginnings, capitals, accents precomposed and
/// decomposed (which FTS5 removes), other scripts, ligatures and long words (kept as stubs).
fn many_words(fx: &Fixture) -> Vec<&'static str> {
    let texts = vec![
        "Refactor the parser",
        "refactoring REFACTORED refactors",
        "café cafés cafeteria",
        "cafe\u{301}s naïve naive résumé",
        "Ångström ǖber ṩx",
        "Ошибка ошибки",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaatail",
        "aaaa aab",
        "straße strasse",
        "İstanbul istanbul",
        "x\u{301}y xylophone",
        "ﬁsh fisher",
        "\u{212A}elvin kelp",
    ];
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| prompt(&format!("u{i:02}"), &format!("2026-11-01T10:00:{i:02}Z"), t))
        .collect();
    fx.append("-home-me-app", S1, &lines);
    texts
}

/// Every prefix of plain ASCII of the words of `texts` finds what FTS5 finds for it.
fn prefixes_read_like_fts5(ix: &Index, texts: &[&str]) {
    let mut prefixes: std::collections::BTreeSet<String> =
        ["cafes", "cafe", "naiv", "resum", "ang", "ub", "sx", "istanb", "xy", "kel", "elv", "fis", "strass"]
            .into_iter()
            .map(String::from)
            .collect();
    prefixes.extend((1..40).map(|n| "a".repeat(n)));
    for w in texts.iter().flat_map(|t| mimesis_core::search::query::words(t)) {
        prefixes.extend((1..=w.len()).filter_map(|k| w.get(..k)).filter(|p| p.is_ascii()).map(String::from));
    }
    let mut st = ix
        .conn
        .prepare(
            "SELECT d.uuid FROM fts JOIN docs d ON d.id = fts.rowid
             WHERE fts MATCH '{prompt reply tool_call tool_result thinking} : \"' || ?1 || '\"*' ORDER BY fts.rowid DESC",
        )
        .unwrap();
    for p in &prefixes {
        let fts5: Vec<String> = st.query_map([p], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        let ours: Vec<String> = search(ix, &format!("{p}*")).into_iter().map(|(u, _)| u).collect();
        assert_eq!(ours, fts5, "{p}*");
    }
}

fn terms(ix: &Index) -> Vec<String> {
    let mut st = ix.conn.prepare("SELECT term FROM terms ORDER BY term").unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_prefix_finds_what_fts5_reads_for_it() {
    let fx = Fixture::new();
    let texts = many_words(&fx);
    let ix = fx.index();
    prefixes_read_like_fts5(&ix, &texts);
    // Not a vacuous comparison: these are read as the words they stand for.
    let mut q = mimesis_core::search::query::parse("refactor* kel* fish* cafe*").unwrap();
    ix.expand_prefixes(&mut q).unwrap();
    let alts: Vec<&[String]> = q.all.iter().map(|t| t.alternatives.as_slice()).collect();
    assert_eq!(
        alts,
        [
            &["refactor", "refactored", "refactoring", "refactors"][..],
            &["kelp", "kelvin"],
            &["fisher"],
            &["cafe", "cafes", "cafeteria"]
        ]
    );

    // A bulk update (a first build) fills `terms` from FTS5's own words when it is done:
    // the same words as collected one by one.
    let bulk = Fixture::new();
    many_words(&bulk);
    let mut bix = Index::open(&bulk.data, NOW).unwrap();
    bix.bulk_bytes = 0;
    bix.update(&bulk.files(), &mut |_, _| {}).unwrap();
    assert!(!bix.terms_stale().unwrap());
    assert_eq!(terms(&bix), terms(&ix));
    prefixes_read_like_fts5(&bix, &texts);

    // One stopped midway (its documents written, `terms` not filled): prefixes are read by
    // FTS5 meanwhile, and the next update fills it.
    bix.conn.execute_batch("DELETE FROM terms; INSERT INTO meta (key, value) VALUES ('terms_stale', '1')").unwrap();
    prefixes_read_like_fts5(&bix, &texts);
    let mut q = mimesis_core::search::query::parse("refactor*").unwrap();
    bix.expand_prefixes(&mut q).unwrap();
    assert!(q.all[0].alternatives.is_empty());
    assert_eq!(bix.update(&bulk.files(), &mut |_, _| {}).unwrap().files, 0);
    assert_eq!(terms(&bix), terms(&ix));

    // An append (little to read) collects its words as it goes.
    bulk.append("-home-me-app", S1, &[prompt("u99", "2026-11-02T10:00:00Z", "Refactorize it")]);
    assert_eq!(bix.update(&bulk.files(), &mut |_, _| {}).unwrap().docs, 1);
    assert!(!bix.terms_stale().unwrap());
    let mut q = mimesis_core::search::query::parse("refactori*").unwrap();
    bix.expand_prefixes(&mut q).unwrap();
    assert_eq!(q.all[0].alternatives, ["refactoring", "refactorize"]);
}
