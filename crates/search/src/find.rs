//! Queries over the index: FTS5 finds the documents newest first (their rowids are their
//! times), the filters FTS5 does not know are applied here, and each hit's snippet is cut
//! from its transcript's line.

use std::io::{Read, Seek, SeekFrom};

use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::search::extract::{parse_line, record_docs};
use mimesis_core::search::query::{self, Query};
use mimesis_core::search::snippet::snippet;
use mimesis_core::search::{Hit, Kind, Request, Results, TOTAL_CAP};
use rusqlite::{OptionalExtension, params};

use crate::build::reversed;
use crate::{Index, IndexError, LONG, STUB_CHARS, id_base, id_time};

/// A document found, before its snippet.
struct Found {
    id: i64,
    kind: Kind,
    uuid: String,
    tool_use_id: Option<String>,
    offset: u64,
    len: u64,
    part: usize,
    path: String,
    session_id: String,
    project: String,
}

/// The longest line a snippet is read from (past it the hit has no snippet).
const MAX_LINE: u64 = 64 << 20;
/// The most words a prefix is read as (more: FTS5 reads the prefix itself).
const MAX_ALTERNATIVES: usize = 64;

impl Index {
    /// The hits of `req` on this machine, most recent first.
    pub fn search(&self, req: &Request) -> Result<Results, IndexError> {
        let mut q = req.checked().map_err(IndexError::Request)?;
        self.expand_prefixes(&mut q)?;
        // The user's words are looked for in the text columns only, never in `project`.
        let kinds: &[Kind] = if req.kinds.is_empty() { &Kind::ALL } else { &req.kinds };
        let cols: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let since = req.since.map_or(0, |t| id_base(t.millis()));
        let project = req.project.as_deref().map(str::trim).filter(|p| !p.is_empty()).map(|p| p.to_lowercase());
        // A project is a phrase of its words in the `project` column (`project-007`,
        // `/home/me/src/project-007`); the tool calls of a file are few, and filtered here.
        let project_phrase = project.as_deref().map(query::words).filter(|w| !w.is_empty()).map(|w| w.join(" "));
        let limit = req.limit();
        let mut hits = Vec::new();
        let mut total = 0usize;
        let mut capped = false;
        let file = req.file.as_deref().map(str::trim).filter(|f| !f.is_empty());
        let by_file = file.is_some();
        // Matches are counted up to a cap (a common word's total is "200+", not a scan).
        let cap = TOTAL_CAP.max(limit);
        let mut consider = |this: &Index, id: i64| -> Result<bool, IndexError> {
            if total >= cap {
                capped = true;
                return Ok(false);
            }
            let need_row = (by_file && project.is_some()) || hits.len() < limit;
            if need_row {
                let Some(f) = this.found(id)? else { return Ok(true) };
                if by_file
                    && let Some(p) = &project
                    && !in_project(&f.project, p)
                {
                    return Ok(true);
                }
                if hits.len() < limit {
                    hits.push(f);
                }
            }
            total += 1;
            Ok(true)
        };
        match file {
            Some(file) => {
                if !(req.kinds.is_empty() || req.kinds.contains(&Kind::ToolCall)) {
                    return Ok(Results::default());
                }
                let touching = self.touching(file)?;
                // With words too: the tool calls whose text has the path's words and the
                // query's, newest first from FTS5, kept when they touched the file.
                let words = query::words(file);
                if !q.all.is_empty() && !words.is_empty() {
                    let touched: std::collections::HashSet<i64> = touching.into_iter().collect();
                    let mut both = q.clone();
                    both.all.push(query::Term { words, prefix: false, alternatives: Vec::new() });
                    let fts = both.fts(&[Kind::ToolCall.as_str()]).unwrap_or_default();
                    let mut st = self.conn.prepare_cached(
                        "SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid >= ?2 ORDER BY rowid DESC",
                    )?;
                    let mut rows = st.query(params![fts, since])?;
                    while let Some(r) = rows.next()? {
                        let id: i64 = r.get(0)?;
                        if touched.contains(&id) && !consider(self, id)? {
                            break;
                        }
                    }
                } else {
                    let fts = q.fts(&[]);
                    let mut matches =
                        self.conn.prepare_cached("SELECT 1 FROM fts WHERE fts MATCH ?1 AND rowid = ?2")?;
                    for id in touching {
                        if id < since {
                            continue;
                        }
                        if let Some(f) = &fts
                            && !matches.exists(params![f, id])?
                        {
                            continue;
                        }
                        if !consider(self, id)? {
                            break;
                        }
                    }
                }
            }
            None => {
                let mut fts = q.fts(&cols).ok_or_else(|| IndexError::Request("nothing to look for".into()))?;
                if let Some(p) = &project_phrase {
                    fts = format!("({fts}) AND {{project}} : \"{}\"", p.replace('"', "\"\""));
                }
                let mut st = self
                    .conn
                    .prepare_cached("SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid >= ?2 ORDER BY rowid DESC")?;
                let mut rows = st.query(params![fts, since])?;
                while let Some(r) = rows.next()? {
                    if !consider(self, r.get(0)?)? {
                        break;
                    }
                }
            }
        }
        // Each hit's text is read again from its transcript's line (and parsed) and its
        // snippet cut: a few threads share that work when there are many.
        let cut = snippets(&hits, &q);
        let hits = hits.into_iter().zip(cut).map(|(f, cut)| self.hit(f, cut)).collect::<Result<Vec<_>, _>>()?;
        Ok(Results { hits, total, total_capped: capped, failed: Vec::new() })
    }

    /// Each prefix of `q` that stands for at most [`MAX_ALTERNATIVES`] words of the index,
    /// as those words (read lazily by FTS5, where a prefix is read whole first). A prefix
    /// stays a prefix when it is not plain ASCII, stands for more words, or meets a long
    /// word's stub (`terms` keeps words as FTS5 reads them: `cafés` as `cafes`), and
    /// every prefix does while `terms` lacks words (a bulk update is under way).
    pub(crate) fn expand_prefixes(&self, q: &mut Query) -> Result<(), IndexError> {
        let mut st = self.conn.prepare_cached(
            "SELECT term FROM terms WHERE term >= ?1 AND term < ?1 || char(1114111) ORDER BY term LIMIT ?2",
        )?;
        if self.terms_stale()? {
            return Ok(());
        }
        for t in q.all.iter_mut().chain(q.none.iter_mut()) {
            let Some(last) = t.words.last().filter(|w| t.prefix && w.is_ascii() && w.len() < STUB_CHARS) else {
                continue;
            };
            let words: Vec<String> =
                st.query_map(params![last, MAX_ALTERNATIVES as i64 + 1], |r| r.get(0))?.collect::<Result<_, _>>()?;
            if !words.is_empty() && words.len() <= MAX_ALTERNATIVES && !words.iter().any(|w| w.ends_with(LONG)) {
                t.alternatives = words;
            }
        }
        Ok(())
    }

    /// The tool calls that read, edited or wrote `file` (a path or the end of one), newest first.
    fn touching(&self, file: &str) -> Result<Vec<i64>, IndexError> {
        let r = reversed(file.trim_end_matches('/'));
        // Every reversed path that starts with `r`: `r` up to `r` followed by the last character.
        let mut st = self
            .conn
            .prepare_cached("SELECT rpath, doc FROM touched WHERE rpath >= ?1 AND rpath < ?1 || char(1114111)")?;
        let mut ids: Vec<i64> = Vec::new();
        let mut rows = st.query([r.as_str()])?;
        while let Some(row) = rows.next()? {
            let rpath: String = row.get(0)?;
            // The whole path, or whole components at its end (`store.rs` is not `mystore.rs`).
            let rest = &rpath[r.len()..];
            if rest.is_empty() || rest.starts_with('/') {
                ids.push(row.get(1)?);
            }
        }
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids)
    }

    fn found(&self, id: i64) -> Result<Option<Found>, IndexError> {
        let mut st = self.conn.prepare_cached(
            "SELECT d.kind, d.uuid, d.tool_use_id, d.offset, d.len, d.part, f.path, f.session_id, f.project
             FROM docs d JOIN files f ON f.id = d.file_id WHERE d.id = ?1",
        )?;
        let f = st
            .query_row([id], |r| {
                Ok(Found {
                    id,
                    kind: Kind::from_code(r.get(0)?).unwrap_or(Kind::Reply),
                    uuid: r.get(1)?,
                    tool_use_id: r.get(2)?,
                    offset: r.get::<_, i64>(3)? as u64,
                    len: r.get::<_, i64>(4)? as u64,
                    part: r.get::<_, i64>(5)? as usize,
                    path: r.get(6)?,
                    session_id: r.get(7)?,
                    project: r.get(8)?,
                })
            })
            .optional()?;
        Ok(f)
    }

    fn hit(&self, f: Found, (snippet, marks): Snippet) -> Result<Hit, IndexError> {
        // A tool result is shown on its call's item.
        let mut uuid = f.uuid;
        let mut tool_use_id = None;
        if f.kind == Kind::ToolResult
            && let Some(t) = f.tool_use_id
        {
            let mut st =
                self.conn.prepare_cached("SELECT uuid FROM docs WHERE tool_use_id = ?1 AND kind = 2 LIMIT 1")?;
            match st.query_row([&t], |r| r.get::<_, String>(0)).optional()? {
                Some(call) => uuid = call,
                None => tool_use_id = Some(t),
            }
        }
        Ok(Hit {
            session_id: SessionId::parse(&f.session_id).map_err(|e| IndexError::Request(e.to_string()))?,
            host: None,
            uuid,
            tool_use_id,
            at: Timestamp::from_millis(id_time(f.id)),
            kind: f.kind,
            snippet,
            marks,
            project: f.project,
            work_chain_id: None,
            work_chain_name: None,
            superseded: false,
            chain_head: None,
        })
    }
}

/// A session's project folder (`-home-me-src-app`) contains `needle`, given as a folder
/// name or a path (lower case).
fn in_project(project: &str, needle: &str) -> bool {
    let project = project.to_lowercase();
    let encoded: String = needle.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    project.contains(needle) || project.contains(&encoded)
}

/// The snippets of `found`, in order, read and cut on up to four threads when there are
/// many.
fn snippets(found: &[Found], q: &Query) -> Vec<Snippet> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    if threads < 2 || found.len() < 8 {
        return Reader::default().snippets(found, q);
    }
    let per = found.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> =
            found.chunks(per).map(|part| (part.len(), s.spawn(move || Reader::default().snippets(part, q)))).collect();
        // A part whose thread failed has no snippets; its hits stay.
        parts.into_iter().flat_map(|(n, h)| h.join().unwrap_or_else(|_| vec![Snippet::default(); n])).collect()
    })
}

/// A hit's snippet and its marks.
type Snippet = (String, Vec<[usize; 2]>);

/// Reads found documents' lines, keeping the last transcript open and the last line's
/// documents (the hits of one record, or of one session, come one after another).
#[derive(Default)]
struct Reader {
    file: Option<(String, std::fs::File)>,
    line: Option<(String, u64, Vec<String>)>,
}

impl Reader {
    fn snippets(&mut self, found: &[Found], q: &Query) -> Vec<Snippet> {
        found.iter().map(|f| snippet(self.text(f).unwrap_or_default(), q)).collect()
    }

    /// The text of a found document, cut from its transcript's line again.
    fn text(&mut self, f: &Found) -> Option<&str> {
        let cached = matches!(&self.line, Some((p, o, _)) if *p == f.path && *o == f.offset);
        if !cached {
            self.line = None;
            let texts = self.read(f).unwrap_or_default();
            self.line = Some((f.path.clone(), f.offset, texts));
        }
        self.line.as_ref()?.2.get(f.part).map(String::as_str)
    }

    fn read(&mut self, f: &Found) -> Option<Vec<String>> {
        if f.len > MAX_LINE {
            return None;
        }
        if !matches!(&self.file, Some((p, _)) if *p == f.path) {
            self.file = Some((f.path.clone(), std::fs::File::open(&f.path).ok()?));
        }
        let file = &mut self.file.as_mut()?.1;
        file.seek(SeekFrom::Start(f.offset)).ok()?;
        let mut line = vec![0; f.len as usize];
        file.read_exact(&mut line).ok()?;
        let v = parse_line(&line)?;
        Some(record_docs(&v).into_iter().map(|d| d.text).collect())
    }
}
