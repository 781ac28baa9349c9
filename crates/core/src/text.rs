//! Text from transcripts, hooks and status files, made fit for one line of a roster:
//! whitespace collapsed, control characters dropped, cut to a length. The one place that
//! does it, so the roster, the tray and the CLI show the same words.

/// Characters that draw nothing or reorder what follows (zero-width, line/paragraph
/// separators, bidirectional overrides and isolates, the BOM): dropped, so untrusted
/// text can neither hide words nor make a line read backwards.
pub(crate) fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// Untrusted text as one line: whitespace runs as one space, control and invisible
/// characters dropped, at most `max` characters (then `…`).
pub fn clean_text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4));
    let mut n = 0;
    for word in s.split_whitespace() {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        // Printable ASCII (most words): nothing to drop, a character a byte.
        if word.bytes().all(|b| b.is_ascii_graphic()) {
            let room = max.saturating_sub(n);
            if word.len() <= room {
                out.push_str(word);
                n += word.len();
                continue;
            }
            out.push_str(&word[..room]);
            out.truncate(out.trim_end().len());
            out.push('…');
            return out;
        }
        for c in word.chars().filter(|&c| !invisible(c)) {
            if n >= max {
                out.truncate(out.trim_end().len());
                out.push('…');
                return out;
            }
            out.push(c);
            n += 1;
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Untrusted text that keeps its lines (a plan, a file's content, an edit): terminal
/// escapes, control characters other than newline and tab, and invisible characters
/// dropped; `\r\n` read as a newline; at most `max` characters (then `…`).
pub fn clean_block(s: &str, max: usize) -> String {
    let plain = strip_ansi(s);
    let mut out = String::with_capacity(plain.len().min(max * 4));
    for (n, c) in plain.chars().filter(|&c| c == '\n' || c == '\t' || !invisible(c)).enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// `s` without terminal escape sequences (colours, cursor moves, titles): what a command
/// printed for a terminal, as plain text. CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
/// `ESC \\`) and two-byte escapes are dropped; a lone ESC at the end too.
pub fn strip_ansi(s: &str) -> String {
    if !s.contains('\x1b') && !s.contains('\u{9b}') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// At most `max` bytes of `s`, cut on a character boundary.
pub fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_keeps_its_lines_and_loses_escapes_and_invisible_characters() {
        let s = "fn main() {\r\n\tprintln!(\"\x1b[31mhi\x1b[0m\");\u{202E}\n}\x07";
        assert_eq!(clean_block(s, 100), "fn main() {\n\tprintln!(\"hi\");\n}");
        assert_eq!(clean_block("abcdef", 3), "abc…");
    }

    /// `clean_text` as it was before its ASCII fast path: a character at a time.
    fn clean_text_by_char(s: &str, max: usize) -> String {
        let mut out = String::new();
        let mut n = 0;
        for word in s.split_whitespace() {
            if n > 0 {
                out.push(' ');
                n += 1;
            }
            for c in word.chars().filter(|&c| !invisible(c)) {
                if n >= max {
                    out.truncate(out.trim_end().len());
                    out.push('…');
                    return out;
                }
                out.push(c);
                n += 1;
            }
        }
        out.truncate(out.trim_end().len());
        out
    }

    /// Words of printable ASCII are copied whole, the rest a character at a time: the same
    /// text either way, cut at every length, whatever the mix of words, whitespace, control,
    /// invisible and wide characters.
    #[test]
    fn the_ascii_fast_path_cleans_like_the_slow_one() {
        let pieces = [
            "a",
            "word",
            "x=1;",
            "~!",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\u{b}",
            "\u{c}",
            "\u{1c}",
            "\u{7}",
            "\u{7f}",
            "\u{1b}[31m",
            "é",
            "日本",
            "\u{200b}",
            "\u{202e}",
            "\u{feff}",
            "\u{a0}",
            "\u{2028}",
            "\u{3000}",
            "\u{85}",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let text: String = (0..next(12)).map(|_| pieces[next(pieces.len())]).collect();
            let max = next(16);
            assert_eq!(clean_text(&text, max), clean_text_by_char(&text, max), "{text:?} cut at {max}");
        }
    }

    #[test]
    fn collapses_whitespace_drops_controls_and_cuts_on_characters() {
        assert_eq!(clean_text("  a\n\tb  c ", 10), "a b c");
        assert_eq!(clean_text("a\u{7}b", 10), "ab");
        assert_eq!(clean_text("ééééé", 3), "ééé…");
        assert_eq!(prefix("ééé", 3), "é");
        assert_eq!(clean_text("left\u{202e}thgir\u{200b}x", 20), "leftthgirx");
        assert_eq!(clean_text("one two", 4), "one…");
    }

    #[test]
    fn terminal_escapes_are_dropped() {
        assert_eq!(
            strip_ansi("\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m"),
            "Compacted (ctrl+o to see full summary)"
        );
        assert_eq!(strip_ansi("a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\c\x1b[1;31mred\x1b[0m\x1b"), "abcred");
        assert_eq!(strip_ansi("plain ✓"), "plain ✓");
    }
}
