//! The words a worker meets while indexing, for `terms` (every word indexed, so a prefix
//! is read as the words it stands for): each word is looked up where it lies in the text,
//! with no copy, by a hash computed from its bytes lower-cased eight at a time (most
//! words are short and plain ASCII, and met again and again: this lookup was most of
//! what `terms` cost a first build).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::fold::folded;
use crate::term_of;

/// The most words a worker remembers having met (past it, it forgets them all: a word
/// met again is only inserted again, and ignored).
const MAX_SEEN: usize = 1 << 20;

/// The words met, by their hash; a word whose hash another word had first is in
/// `more` (under FxHash: not keys an adversary picks to collide).
#[derive(Default)]
pub(crate) struct Words {
    first: HashMap<u64, Arc<str>, BuildHasherDefault<Given>>,
    more: HashSet<Arc<str>, rustc_hash::FxBuildHasher>,
    word: String,
}

/// The hash is already mixed: hashbrown takes it as it is.
#[derive(Default)]
struct Given(u64);

impl Hasher for Given {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// The hash of `bytes` with `or` set in each byte (0x20 lower-cases ASCII letters and
/// leaves digits and lower case as they are; 0 reads the bytes as they are), so a run of
/// ASCII letters and digits hashes as its lower case does.
fn hash(bytes: &[u8], or: u8) -> u64 {
    let wide = u64::from_ne_bytes([or; 8]);
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let v = u64::from_le_bytes(c.try_into().unwrap_or_default()) | wide;
        h = (h ^ v).wrapping_mul(K).rotate_left(23);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        for (d, s) in b.iter_mut().zip(rest) {
            *d = s | or;
        }
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(23);
    }
    (h ^ (h >> 29)).wrapping_mul(K) ^ (h >> 32)
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
                    let kept = term_of(kept.as_deref().unwrap_or(&word));
                    if !self.met(hash(kept.as_bytes(), 0), &kept, false) {
                        self.keep(Arc::from(&*kept), out);
                    }
                    self.word = word;
                }
            }
        }
    }

    /// A run of ASCII letters and digits, looked up as it lies in the text.
    fn ascii(&mut self, run: &str, out: &mut Vec<Arc<str>>) {
        if !self.met(hash(run.as_bytes(), 0x20), run, true) {
            self.keep(Arc::from(run.to_ascii_lowercase()), out);
        }
    }

    /// Whether `w` (its hash `h`; `any_case`: `w` may have capitals) was met.
    fn met(&self, h: u64, w: &str, any_case: bool) -> bool {
        let Some(first) = self.first.get(&h) else { return false };
        let same = if any_case { first.eq_ignore_ascii_case(w) } else { **first == *w };
        if same || self.more.is_empty() {
            return same;
        }
        if any_case && w.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.more.contains(w.to_ascii_lowercase().as_str());
        }
        self.more.contains(w)
    }

    /// Remembers a new lower-case word and hands it over.
    fn keep(&mut self, w: Arc<str>, out: &mut Vec<Arc<str>>) {
        if self.first.len() + self.more.len() >= MAX_SEEN {
            self.first.clear();
            self.more.clear();
        }
        match self.first.entry(hash(w.as_bytes(), 0)) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(w.clone());
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.more.insert(w.clone());
            }
        }
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

    #[test]
    fn words_of_one_hash_are_told_apart() {
        let mut words = Words::default();
        // As if "cargo" had met another word's hash first.
        words.first.insert(hash(b"cargo", 0x20), Arc::from("other"));
        words.more.insert(Arc::from("elsewhere"));
        assert_eq!(new_terms(&mut words, "Cargo cargo CARGO"), ["cargo"]);
        assert_eq!(words.more.len(), 2);
        assert_eq!(new_terms(&mut words, "cArgo"), Vec::<String>::new());
        // The two readings of a word hash alike.
        assert_eq!(hash(b"Refactor2", 0x20), hash(b"refactor2", 0));
        assert_ne!(hash(b"refactor2", 0), hash(b"refactor3", 0));
    }
}
