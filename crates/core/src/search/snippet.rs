//! One line of text around the first match, with where the matches are: plain text with
//! control and invisible characters dropped and whitespace collapsed, so it can go to a
//! terminal or a text node as it is.

use super::query::{Query, find_from, word_spans};
use crate::text::invisible;

/// Characters of a snippet (about one line).
pub const WIDTH: usize = 160;
/// Characters shown before the first match.
const BEFORE: usize = 50;

/// The matches of `q`'s terms in `text`, as byte ranges, in order, not overlapping.
pub fn match_spans(text: &str, q: &Query) -> Vec<(usize, usize)> {
    let spans: Vec<(usize, usize)> = word_spans(text).collect();
    let toks: Vec<String> = spans.iter().map(|&(a, b)| text[a..b].to_lowercase()).collect();
    let mut out = Vec::new();
    for t in &q.all {
        let mut from = 0;
        while let Some(i) = find_from(&toks, t, from) {
            let last = i + t.words.len() - 1;
            out.push((spans[i].0, spans[last].1));
            from = last + 1;
        }
    }
    out.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(out.len());
    for (a, b) in out {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// About [`WIDTH`] characters of `text` around its first match of `q` (its start when
/// none), and the matches in it as `[start, end)` character offsets.
pub fn snippet(text: &str, q: &Query) -> (String, Vec<[usize; 2]>) {
    let spans = match_spans(text, q);
    let first = spans.first().map_or(0, |s| s.0);
    // Start up to BEFORE characters before the first match, at a word's start if one is near.
    let mut start = first;
    for (n, (i, _)) in text[..first].char_indices().rev().enumerate() {
        start = i;
        if n + 1 >= BEFORE {
            break;
        }
    }
    if start > 0
        && let Some(sp) = text[start..first].find(char::is_whitespace)
    {
        start += sp;
    }
    let mut out = String::new();
    let mut marks = Vec::new();
    let mut n = 0usize; // characters written
    let mut open: Option<usize> = None;
    let mut spans = spans.into_iter().filter(|s| s.1 > start).peekable();
    if start > 0 {
        out.push('…');
        n += 1;
    }
    let mut space = true;
    for (i, c) in text[start..].char_indices() {
        let i = i + start;
        if open.is_none()
            && let Some(&(a, _)) = spans.peek()
            && i >= a
        {
            open = Some(n);
        }
        if let (Some(o), Some(&(_, b))) = (open, spans.peek())
            && i >= b
        {
            if n > o {
                marks.push([o, n]);
            }
            open = None;
            spans.next();
            if let Some(&(a, _)) = spans.peek()
                && i >= a
            {
                open = Some(n);
            }
        }
        if n >= WIDTH && open.is_none() {
            out.push('…');
            return (out, marks);
        }
        if c.is_whitespace() {
            if !space {
                out.push(' ');
                n += 1;
                space = true;
            }
        } else if !invisible(c) {
            out.push(c);
            n += 1;
            space = false;
        }
    }
    if let Some(o) = open
        && n > o
    {
        marks.push([o, n]);
    }
    let trimmed = out.trim_end().len();
    if trimmed < out.len() {
        out.truncate(trimmed);
        let len = out.chars().count();
        for m in &mut marks {
            m[1] = m[1].min(len);
        }
        marks.retain(|m| m[0] < m[1]);
    }
    (out, marks)
}

/// A file path given to search by: refused when it could not be a path.
pub fn check_path(p: &str) -> Result<(), String> {
    if p.len() > 4096 {
        return Err("the file path is longer than any path; give the path or its last parts".into());
    }
    if p.chars().any(|c| c == '\0' || c.is_control()) {
        return Err("the file path has control characters or NUL bytes; give the path as it is written".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::parse;

    fn marked(s: &str, marks: &[[usize; 2]]) -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        marks.iter().map(|m| chars[m[0]..m[1]].iter().collect()).collect()
    }

    #[test]
    fn the_snippet_is_one_line_around_the_first_match() {
        let text = format!("{}\n\nwe decided to Drop the cache\tbecause {}", "x ".repeat(200), "y ".repeat(200));
        let (s, marks) = snippet(&text, &parse("cache \"drop the\"").unwrap());
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(!s.contains('\n') && !s.contains('\t') && !s.contains("  "), "{s}");
        assert_eq!(marked(&s, &marks), ["Drop the", "cache"]);
        assert!(s.chars().count() <= WIDTH + 2);
    }

    #[test]
    fn marks_count_characters_and_escapes_are_dropped() {
        let (s, marks) = snippet("Ошибка в \u{1b}[31mкэше\u{1b}[0m: кэш <b>сломан</b>", &parse("кэш").unwrap());
        assert!(!s.contains('\u{1b}'), "{s}");
        assert_eq!(marked(&s, &marks), ["кэш"]);
        let (s, marks) = snippet("short text", &parse("absent").unwrap());
        assert_eq!((s.as_str(), marks.len()), ("short text", 0));
        let (_, marks) = snippet("a cache, the Cache, CACHE", &parse("cache").unwrap());
        assert_eq!(marks.len(), 3);
    }

    #[test]
    fn paths_with_nul_or_control_characters_are_refused() {
        assert!(check_path("src/store.rs").is_ok());
        assert!(check_path("a\0b").is_err());
        assert!(check_path("a\u{1b}[2Jb").is_err());
        assert!(check_path(&"a/".repeat(3000)).is_err());
    }
}
