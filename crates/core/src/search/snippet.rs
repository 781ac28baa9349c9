//! One line of text around the first match, with where the matches are: plain text with
//! control and invisible characters dropped and whitespace collapsed, so it can go to a
//! terminal or a text node as it is.

use super::query::{Query, find_from, is_word_char, word_spans};
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

/// Bytes of text read at first when looking for the first match (then four times more
/// each time): a huge tool result is not read whole for one line of it.
const FIRST_PIECE: usize = 16 << 10;
/// Bytes of text after the snippet's start in which its matches are marked: more than
/// [`WIDTH`] characters of any script, with whitespace runs to spare.
const WINDOW: usize = 4 << 10;

/// `text` cut at or before `at`, between two words (never inside one).
fn cut_before(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut i = at;
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    match text[..i].char_indices().rev().find(|&(_, c)| !is_word_char(c)) {
        Some((j, _)) => j,
        None => 0,
    }
}

/// Where the first match of `q` in `text` starts, reading growing pieces of it.
fn first_match(text: &str, q: &Query) -> Option<usize> {
    let mut piece = FIRST_PIECE;
    loop {
        let end = cut_before(text, piece);
        if let Some(&(a, _)) = match_spans(&text[..end], q).first() {
            return Some(a);
        }
        if end >= text.len() || piece >= text.len() {
            return None;
        }
        piece = piece.saturating_mul(4);
    }
}

/// About [`WIDTH`] characters of `text` around its first match of `q` (its start when
/// none), and the matches in it as `[start, end)` character offsets. Only the text around
/// the snippet is read for its marks.
pub fn snippet(text: &str, q: &Query) -> (String, Vec<[usize; 2]>) {
    let first = first_match(text, q).unwrap_or(0);
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
    // The matches near the snippet, from the start of the word it starts in.
    let from = match text[..start].char_indices().rev().find(|&(_, c)| !is_word_char(c)) {
        Some((j, c)) => j + c.len_utf8(),
        None => 0,
    };
    let to = cut_before(text, start.saturating_add(WINDOW));
    let to = if to <= first { text.len() } else { to };
    let spans: Vec<(usize, usize)> =
        match_spans(&text[from..to], q).into_iter().map(|(a, b)| (a + from, b + from)).collect();
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
    fn a_match_deep_in_a_huge_text_is_found_and_marked() {
        // Past the first pieces read, and a phrase across the first piece's end.
        let text =
            format!("{}we drop the Cache here {}and the cache again", "lorem ".repeat(100_000), "ipsum ".repeat(2_000));
        let (s, marks) = snippet(&text, &parse("cache").unwrap());
        assert!(s.starts_with('…') && s.contains("we drop the Cache here"), "{s}");
        assert_eq!(marked(&s, &marks), ["Cache"]);
        let text = format!("{}drop the cache", "x ".repeat(8_191));
        let (s, marks) = snippet(&text, &parse("\"drop the\" cache").unwrap());
        assert_eq!(marked(&s, &marks), ["drop the", "cache"], "{s}");
        // A word cut by the window's start is not half marked.
        let (s, marks) = snippet(&format!("{}cachedrop cache", "a".repeat(100)), &parse("cache").unwrap());
        assert_eq!(marked(&s, &marks), ["cache"], "{s}");
    }

    #[test]
    fn paths_with_nul_or_control_characters_are_refused() {
        assert!(check_path("src/store.rs").is_ok());
        assert!(check_path("a\0b").is_err());
        assert!(check_path("a\u{1b}[2Jb").is_err());
        assert!(check_path(&"a/".repeat(3000)).is_err());
    }
}
