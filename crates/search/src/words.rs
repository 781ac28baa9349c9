//! The words a worker meets while indexing, for `terms` (every word indexed, so a prefix
//! is read as the words it stands for), when an update collects them as it goes (one
//! that reads little: a first build fills `terms` from FTS5's own words instead).

use std::collections::HashSet;
use std::sync::Arc;

use crate::fold::folded;
use crate::term_of;

/// The most words a worker remembers having met (past it, it forgets them all: a word
/// met again is only inserted again, and ignored).
const MAX_SEEN: usize = 1 << 20;

/// The words met (under FxHash: not keys an adversary picks to collide; the default
/// hasher was a third of the words' cost), and a buffer for the one being read.
#[derive(Default)]
pub(crate) struct Words {
    seen: HashSet<Arc<str>, rustc_hash::FxBuildHasher>,
    word: String,
}

impl Words {
    /// The words of `text` not met before, lower case, as the index's tokenizer reads
    /// them (a prefix of plain ASCII finds what FTS5 would). Runs of ASCII letters and
    /// digits are read byte by byte; a word with other characters is read as
    /// `query::word_spans` reads it, and kept as FTS5 reads it (`cafés` as `cafes`: FTS5
    /// removes the accent, so `cafes*` finds it).
    pub(crate) fn new_terms(&mut self, text: &str, out: &mut Vec<Arc<str>>) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] < 0x80 && !bytes[i].is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            let start = i;
            let mut ascii = true;
            while let Some(&b) = bytes.get(i) {
                if b < 0x80 {
                    if !b.is_ascii_alphanumeric() {
                        break;
                    }
                } else {
                    ascii = false;
                }
                i += 1;
            }
            let run = &text[start..i];
            if ascii && run.len() <= crate::MAX_TERM_BYTES {
                self.ascii(run, out);
            } else {
                // Letters of other scripts, and characters that are not letters: as the query reads them.
                for (a, b) in mimesis_core::search::query::word_spans(run) {
                    let mut word = std::mem::take(&mut self.word);
                    word.clear();
                    word.extend(run[a..b].chars().flat_map(char::to_lowercase));
                    let kept = folded(&word);
                    self.keep(&term_of(kept.as_deref().unwrap_or(&word)), out);
                    self.word = word;
                }
            }
        }
    }

    /// A run of ASCII letters and digits, looked up as it lies in the text when it has no
    /// capital.
    fn ascii(&mut self, run: &str, out: &mut Vec<Arc<str>>) {
        if !run.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.keep(run, out);
        }
        let mut word = std::mem::take(&mut self.word);
        word.clear();
        word.push_str(run);
        word.make_ascii_lowercase();
        self.keep(&word, out);
        self.word = word;
    }

    /// Remembers a lower-case word and hands it over, if it is new.
    fn keep(&mut self, w: &str, out: &mut Vec<Arc<str>>) {
        if self.seen.contains(w) {
            return;
        }
        if self.seen.len() >= MAX_SEEN {
            self.seen.clear();
        }
        let w: Arc<str> = Arc::from(w);
        self.seen.insert(w.clone());
        out.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_terms(words: &mut Words, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        words.new_terms(text, &mut out);
        out.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_words_kept_for_prefixes_are_the_querys_words() {
        let text = "Refactor the PARSER: src/store.rs, naïve café cafe\u{301}s Ошибка 2026-11-01 x\u{1b}[31my a\u{a0}b";
        let mut words = Words::default();
        let out = new_terms(&mut words, text);
        let mut unique = Vec::new();
        for w in mimesis_core::search::query::words(text) {
            let w = folded(&w).unwrap_or(w);
            if !unique.contains(&w) {
                unique.push(w);
            }
        }
        assert_eq!(out, unique);
        // Accents FTS5 removes are removed, precomposed or not.
        assert_eq!(out[6..10], ["naive", "cafe", "cafes", "ошибка"]);
        // Met again (in any case, beside a character that is not ASCII): not handed over again.
        assert_eq!(new_terms(&mut words, "the Parser again, Ошибка\u{a0}the"), ["again"]);
        // A long word is kept as its stub, once.
        let long = format!("{}Z{}", "a".repeat(40), "b".repeat(40));
        let stub = format!("{}\u{10FFFF}", "a".repeat(32));
        assert_eq!(new_terms(&mut words, &format!("{long} {}", long.to_lowercase())), [stub]);
        assert_eq!(new_terms(&mut words, &"a".repeat(64)), ["a".repeat(64)]);
    }
}
