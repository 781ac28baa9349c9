//! What FTS5's `unicode61 remove_diacritics 2` makes of letters with accents: the plain
//! ASCII letter (`é` is `e`), or nothing for a combining accent (`e` + U+0301 is `e`). The
//! table was read from FTS5 itself (every character between two ASCII letters, kept when
//! the token came out plain ASCII); `every_folded_character_is_what_fts5_reads` checks it
//! against the SQLite in the build.

/// Runs of consecutive characters from their first: each byte is the letter of one
/// character, `_` for an accent removed.
const RUNS: &[(u32, &str)] = &[
    (0x00C0, "aaaaaa"),
    (0x00C7, "ceeeeiiii"),
    (0x00D1, "nooooo"),
    (0x00D9, "uuuuy"),
    (0x00E0, "aaaaaa"),
    (0x00E7, "ceeeeiiii"),
    (0x00F1, "nooooo"),
    (0x00F9, "uuuuy"),
    (0x00FF, "yaaaaaaccccccccdd"),
    (0x0112, "eeeeeeeeeegggggggghh"),
    (0x0128, "iiiiiiiii"),
    (0x0134, "jjkk"),
    (0x0139, "llllll"),
    (0x0143, "nnnnnn"),
    (0x014C, "oooooo"),
    (0x0154, "rrrrrrsssssssstttt"),
    (0x0168, "uuuuuuuuuuuuwwyyyzzzzzzs"),
    (0x01A0, "oo"),
    (0x01AF, "uu"),
    (0x01CD, "aaiioouuuuuuuuuu"),
    (0x01DE, "aa"),
    (0x01E6, "ggkkoooo"),
    (0x01F0, "j"),
    (0x01F4, "gg"),
    (0x01F8, "nnaa"),
    (0x0200, "aaaaeeeeiiiioooorrrruuuusstt"),
    (0x021E, "hh"),
    (0x0226, "aaeeooooooooyy"),
    (0x0300, "_____"),
    (0x0306, "_______"),
    (0x030F, "_"),
    (0x0311, "_"),
    (0x031B, "_"),
    (0x0323, "______"),
    (0x032D, "__"),
    (0x0330, "__"),
    (
        0x1E00,
        "aabbbbbbccddddddddddeeeeeeeeeeffgghhhhhhhhhhiiiikkkkkkllllllllmmmmmmnnnnnnnnoooooooopppprrrrrrrrssssssssssttttttttuuuuuuuuuuvvvvwwwwwwwwwwxxxxyyzzzzzzhtwy",
    ),
    (0x1E9B, "s"),
    (0x1EA0, "aaaaaaaaaaaaaaaaaaaaaaaaeeeeeeeeeeeeeeeeiiiioooooooooooooooooooooooouuuuuuuuuuuuuuyyyyyyyy"),
    (0x212A, "ka"),
];

/// The ASCII letter FTS5 reads `c` as (`Some(None)`: nothing, an accent it removes), or
/// None when `c` is not one it folds to ASCII.
pub(crate) fn fold(c: char) -> Option<Option<char>> {
    let c = c as u32;
    let i = RUNS.partition_point(|&(start, _)| start <= c).checked_sub(1)?;
    let (start, letters) = RUNS[i];
    let b = *letters.as_bytes().get((c - start) as usize)?;
    Some((b != b'_').then_some(b as char))
}

/// `word` as FTS5 indexes it, when it has letters it folds to ASCII (`cafés` → `cafes`).
pub(crate) fn folded(word: &str) -> Option<String> {
    if word.is_ascii() || !word.chars().any(|c| fold(c).is_some()) {
        return None;
    }
    Some(word.chars().filter_map(|c| fold(c).unwrap_or(Some(c))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_folded_character_is_what_fts5_reads() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE f USING fts5(a, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance');",
        )
        .unwrap();
        let mut all = Vec::new();
        for &(start, letters) in RUNS {
            all.extend((0..letters.len() as u32).filter_map(|i| char::from_u32(start + i)));
        }
        assert_eq!(all.len(), 515);
        let mut ins = conn.prepare("INSERT INTO f (rowid, a) VALUES (?1, ?2)").unwrap();
        for (i, c) in all.iter().enumerate() {
            ins.execute(rusqlite::params![i as i64, format!("x{c}y")]).unwrap();
        }
        let mut st = conn.prepare("SELECT doc, term FROM v ORDER BY doc").unwrap();
        let got: Vec<(i64, String)> =
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
        assert_eq!(got.len(), all.len(), "each character is inside its token");
        for (doc, term) in got {
            let c = all[doc as usize];
            let want: String = ["x", &fold(c).unwrap().map(String::from).unwrap_or_default(), "y"].concat();
            assert_eq!(term, want, "U+{:04X}", c as u32);
        }
        assert_eq!(folded("Ångström").as_deref(), Some("angstrom"));
        assert_eq!(folded("cafe\u{301}s").as_deref(), Some("cafes"));
        assert_eq!(folded("ошибка"), None);
        assert_eq!(folded("ǖber-straße").as_deref(), Some("uber-straße"));
        assert_eq!((fold('a'), fold('\u{305}'), fold('\u{1EFA}')), (None, None, None));
    }
}
