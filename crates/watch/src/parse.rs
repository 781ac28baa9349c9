//! The fast transcript parser: the core's record type read with `sonic-rs` (SIMD), which
//! is what the index and the tailer use. The core stays free of it (and of any I/O); its
//! own `SerdeJson` parses the same records the same way, more slowly. The depth guard runs
//! before either (`transcript::parse_line_with`).

use mimesis_core::transcript::{Fields, Malformed, Record, RecordParser, UsageRecord};

#[derive(Copy, Clone, Debug, Default)]
pub struct SonicJson;

impl RecordParser for SonicJson {
    fn parse_bytes<'a>(&self, line: &'a [u8], fields: Fields) -> Result<Record<'a>, Malformed> {
        match fields {
            Fields::All => sonic_rs::from_slice(line),
            Fields::Usage => sonic_rs::from_slice::<UsageRecord>(line).map(|r| r.0),
        }
        .map_err(|e| Malformed(e.to_string()))
    }
    fn parse_str<'a>(&self, line: &'a str, fields: Fields) -> Result<Record<'a>, Malformed> {
        match fields {
            Fields::All => sonic_rs::from_str(line),
            Fields::Usage => sonic_rs::from_str::<UsageRecord>(line).map(|r| r.0),
        }
        .map_err(|e| Malformed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::facts::SessionFacts;
    use mimesis_core::spend::FileUsage;
    use mimesis_core::transcript::SerdeJson;

    /// Both parsers make the same facts of the same lines, odd ones included.
    #[test]
    fn sonic_and_serde_agree() {
        let lines: &[&[u8]] = &[
            br#"{"type":"user","uuid":"u1","timestamp":"2026-11-24T00:00:00.000Z","cwd":"/p","message":{"role":"user","content":"fix \u00e9 \"it\""}}"#,
            br#"{"type":"assistant","uuid":"a1","timestamp":"2026-11-24T00:00:01.000Z","requestId":"r","message":{"id":"m1","model":"claude-opus-5-5","stop_reason":"end_turn","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":3,"output_tokens":-5}}}"#,
            b"{\"type\":\"user\",\"message\":{\"content\":\"bad \xff utf8\"}}",
            br#"{"type":"user","message":"#,
            br#"[1,2,3]"#,
        ];
        let (mut a, mut b) = (SessionFacts::default(), SessionFacts::default());
        let (mut s1, mut s2) = (String::new(), String::new());
        for l in lines {
            a.apply_line_with(&SonicJson, l, &mut s1);
            b.apply_line_with(&SerdeJson, l, &mut s2);
        }
        assert_eq!(
            (a.usage, a.malformed, a.malformed_fields, a.goal().map(str::to_owned), a.records),
            (b.usage, b.malformed, b.malformed_fields, b.goal().map(str::to_owned), b.records)
        );
        // And read for a cost report: the same requests.
        let (mut c, mut d) = (FileUsage::new("s", "p"), FileUsage::new("s", "p"));
        for l in lines {
            c.add_line(&SonicJson, l, &mut s1);
            d.add_line(&SerdeJson, l, &mut s2);
        }
        assert_eq!((c.entries, c.skipped), (d.entries, d.skipped));
    }
}
