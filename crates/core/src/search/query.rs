//! The query language: words ANDed, case-insensitive; "quoted phrases"; a leading `-`
//! excludes; a trailing `*` makes the last word a prefix. Words are what the index's
//! tokenizer (FTS5's `unicode61`) calls tokens: runs of letters and digits, so
//! `src/store.rs` is the phrase `src store rs` and punctuation is never an operator.

use std::fmt;

/// The longest query read (a query past this is refused in a sentence).
pub const MAX_QUERY_BYTES: usize = 2000;
/// The most terms (words or phrases, excluded ones included) in one query.
pub const MAX_TERMS: usize = 32;

/// One word, or several that must follow one another (a phrase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// Lower-case tokens, at least one.
    pub words: Vec<String>,
    /// The last word is a prefix (`cach*`).
    pub prefix: bool,
    /// For a prefix: the words of the index it stands for, when the index listed them
    /// (a query of these words is read lazily, newest first, where FTS5 reads every
    /// document of every word of a prefix before the first hit). Empty: the prefix as it is.
    pub alternatives: Vec<String>,
}

/// A parsed query: every term of `all` is in the text, none of `none` is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub all: Vec<Term>,
    pub none: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    Empty,
    OnlyExclusions,
    TooLong,
    TooManyTerms,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueryError::Empty => "the query has no word to look for: give one or more words, or \"a phrase\"",
            QueryError::OnlyExclusions => {
                "the query only excludes words (-word): give at least one word to look for as well"
            }
            QueryError::TooLong => "the query is longer than 2,000 bytes: search for a few words of it",
            QueryError::TooManyTerms => "the query has more than 32 words and phrases: search for fewer",
        })
    }
}

impl std::error::Error for QueryError {}

/// A character the tokenizer keeps in a word (letters, digits, private-use marks, and the
/// combining accents `unicode61 remove_diacritics 2` removes: `cafe\u{301}s` is `cafes`).
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c as u32,
            0xE000..=0xF8FF
                | 0x300..=0x304
                | 0x306..=0x30C
                | 0x30F
                | 0x311
                | 0x31B
                | 0x323..=0x328
                | 0x32D..=0x32E
                | 0x330..=0x331
        )
}

/// The words of `s`, as byte ranges, in order.
pub fn word_spans(s: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = s.char_indices().peekable();
    std::iter::from_fn(move || {
        let start = loop {
            let (i, c) = chars.next()?;
            if is_word_char(c) {
                break i;
            }
        };
        let mut end = s.len();
        while let Some(&(i, c)) = chars.peek() {
            if !is_word_char(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

/// The lower-case words of `s`.
pub fn words(s: &str) -> Vec<String> {
    word_spans(s).map(|(a, b)| s[a..b].to_lowercase()).collect()
}

/// Reads a query as typed. Quotes left open run to the end; a chunk without any word
/// (`-`, `*`, `"..."`) is ignored.
pub fn parse(s: &str) -> Result<Query, QueryError> {
    if s.len() > MAX_QUERY_BYTES {
        return Err(QueryError::TooLong);
    }
    let mut q = Query::default();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\0');
        if rest.is_empty() {
            break;
        }
        let exclude = rest.starts_with('-') && rest.len() > 1;
        if exclude {
            rest = &rest[1..];
        }
        let (chunk, prefix);
        if let Some(inner) = rest.strip_prefix('"') {
            let end = inner.find('"').unwrap_or(inner.len());
            chunk = &inner[..end];
            rest = inner.get(end + 1..).unwrap_or("");
            prefix = rest.starts_with('*');
            if prefix {
                rest = &rest[1..];
            }
        } else {
            let end = rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\0').unwrap_or(rest.len());
            chunk = &rest[..end];
            rest = &rest[end..];
            prefix = chunk.ends_with('*') && chunk.trim_end_matches('*').chars().last().is_some_and(is_word_char);
        }
        let words = words(chunk);
        if words.is_empty() {
            continue;
        }
        let term = Term { words, prefix, alternatives: Vec::new() };
        if exclude {
            q.none.push(term)
        } else {
            q.all.push(term)
        }
        if q.all.len() + q.none.len() > MAX_TERMS {
            return Err(QueryError::TooManyTerms);
        }
    }
    if q.all.is_empty() && q.none.is_empty() {
        return Err(QueryError::Empty);
    }
    Ok(q)
}

fn fts_term(t: &Term, out: &mut String) {
    if t.prefix && !t.alternatives.is_empty() {
        // `"a b c*"` with `c*` standing for `cat` and `cow`: `("a b cat" OR "a b cow")`.
        let head = &t.words[..t.words.len().saturating_sub(1)];
        out.push('(');
        for (i, alt) in t.alternatives.iter().enumerate() {
            if i > 0 {
                out.push_str(" OR ");
            }
            let words: Vec<&str> = head.iter().map(String::as_str).chain([alt.as_str()]).collect();
            out.push('"');
            out.push_str(&words.join(" ").replace('"', "\"\""));
            out.push('"');
        }
        out.push(')');
        return;
    }
    out.push('"');
    out.push_str(&t.words.join(" ").replace('"', "\"\""));
    out.push('"');
    if t.prefix {
        out.push('*');
    }
}

impl Query {
    /// The query in FTS5's syntax, every word quoted (never an operator), restricted to
    /// `columns` when some are named. None when there is nothing to look for.
    pub fn fts(&self, columns: &[&str]) -> Option<String> {
        if self.all.is_empty() {
            return None;
        }
        let mut out = String::new();
        if !columns.is_empty() {
            out.push('{');
            out.push_str(&columns.join(" "));
            out.push_str("} : (");
        }
        for (i, t) in self.all.iter().enumerate() {
            if i > 0 {
                out.push_str(" AND ");
            }
            fts_term(t, &mut out);
        }
        for t in &self.none {
            out.push_str(" NOT ");
            fts_term(t, &mut out);
        }
        if !columns.is_empty() {
            out.push(')');
        }
        Some(out)
    }

    /// Is every term of `all` in `text`, and none of `none` (the same reading as the
    /// index's)?
    pub fn matches(&self, text: &str) -> bool {
        let toks = words(text);
        self.all.iter().all(|t| find(&toks, t).is_some()) && !self.none.iter().any(|t| find(&toks, t).is_some())
    }
}

/// Where `t` first occurs in `toks` (an index into it), from `from` on.
pub fn find_from(toks: &[String], t: &Term, from: usize) -> Option<usize> {
    let n = t.words.len();
    if n == 0 || toks.len() < n {
        return None;
    }
    (from..=toks.len() - n).find(|&i| {
        t.words.iter().enumerate().all(|(k, w)| {
            let tok = &toks[i + k];
            if t.prefix && k == n - 1 { tok.starts_with(w.as_str()) } else { tok == w }
        })
    })
}

fn find(toks: &[String], t: &Term) -> Option<usize> {
    find_from(toks, t, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(ws: &[&str], prefix: bool) -> Term {
        Term { words: ws.iter().map(|w| w.to_string()).collect(), prefix, alternatives: Vec::new() }
    }

    #[test]
    fn words_phrases_exclusions_and_prefixes() {
        let q = parse(r#"Cache "drop the" -redis store* src/store.rs"#).unwrap();
        assert_eq!(
            q.all,
            [
                term(&["cache"], false),
                term(&["drop", "the"], false),
                term(&["store"], true),
                term(&["src", "store", "rs"], false)
            ]
        );
        assert_eq!(q.none, [term(&["redis"], false)]);
        assert_eq!(q.fts(&[]).unwrap(), r#""cache" AND "drop the" AND "store"* AND "src store rs" NOT "redis""#);
        assert_eq!(q.fts(&["reply", "thinking"]).unwrap(), format!("{{reply thinking}} : ({})", q.fts(&[]).unwrap()));
        // A prefix the index listed the words of: those words, ORed (a phrase's too).
        let mut q = parse("\"drop the ca\"* -sto*").unwrap();
        q.all[0].alternatives = vec!["cache".into(), "ca\"t".into()];
        assert_eq!(q.fts(&[]).unwrap(), r#"("drop the cache" OR "drop the ca""t") NOT "sto"*"#);
    }

    #[test]
    fn bad_input_is_a_result_or_a_sentence() {
        // Quotes left open run to the end.
        assert_eq!(parse(r#"fix "the parser"#).unwrap().all, [term(&["fix"], false), term(&["the", "parser"], false)]);
        // Only operators, punctuation, NUL bytes.
        for s in ["", "-", "\"\"", "* - \" -\"", "\0\0", "   ", "AND OR NOT"] {
            match parse(s) {
                Ok(q) => assert!(q.fts(&[]).is_some_and(|f| f.contains("\"and\"")), "{s:?}"),
                Err(e) => assert!(!e.to_string().contains('\n'), "{s:?}"),
            }
        }
        assert_eq!(parse("-cache -redis").unwrap().all, []);
        // Regex metacharacters are not words.
        assert_eq!(parse(r"^(a|b)+$ .* \d{3}").unwrap().all, [term(&["a", "b"], false), term(&["d", "3"], false)]);
        // Another script.
        assert_eq!(parse("Ошибка 缓存").unwrap().all, [term(&["ошибка"], false), term(&["缓存"], false)]);
        // An accent FTS5 removes is inside its word, precomposed or not; one it keeps is not.
        assert_eq!(parse("Cafe\u{301}s café").unwrap().all, [term(&["cafe\u{301}s"], false), term(&["café"], false)]);
        assert_eq!(parse("a\u{305}b").unwrap().all, [term(&["a", "b"], false)]);
        assert_eq!(parse("a\0b").unwrap().all, [term(&["a"], false), term(&["b"], false)]);
        // Too long or too many.
        assert_eq!(parse(&"word ".repeat(2048)), Err(QueryError::TooLong));
        assert_eq!(parse(&"w ".repeat(40)), Err(QueryError::TooManyTerms));
    }

    #[test]
    fn matching_reads_like_the_index() {
        let q = parse(r#"store "drop the" -redis"#).unwrap();
        assert!(q.matches("We should DROP THE cache in the Store."));
        assert!(!q.matches("We should drop the cache in the Redis store."));
        assert!(!q.matches("the drop store"));
        assert!(parse("stor*").unwrap().matches("storage"));
    }
}
