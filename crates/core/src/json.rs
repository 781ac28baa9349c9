//! The guard in front of every parse of JSON that comes from outside (transcripts, hook
//! payloads, settings files, status and marker files, the live registry): a line nested
//! deeper than [`MAX_DEPTH`] is refused before any recursive parser sees it, so no input
//! can overflow a stack. Linear, allocation-free, and for ordinary lines one `memchr`
//! pass: a line with fewer brackets than the limit cannot nest deeper than it.

/// The deepest nesting accepted. Claude Code's records nest a dozen levels at most; this
/// is serde_json's own recursion limit.
pub const MAX_DEPTH: usize = 128;

/// `v` with the keys of every object sorted (serde_json keeps the order keys came in).
pub fn sorted(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Does the JSON text `bytes` nest arrays and objects deeper than `max`? Brackets inside
/// strings do not count. Not a validator: anything else is left to the parser.
pub fn too_deep(bytes: &[u8], max: usize) -> bool {
    if memchr::memchr2_iter(b'[', b'{', bytes).nth(max).is_none() {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// `serde_json::from_slice`, after the depth guard.
pub fn from_slice<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, JsonError> {
    if too_deep(bytes, MAX_DEPTH) {
        return Err(JsonError::TooDeep);
    }
    Ok(serde_json::from_slice(bytes)?)
}

/// Why untrusted JSON was not read: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// serde_json's own words (with the line and column).
    #[error(transparent)]
    Invalid(#[from] serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nesting_outside_strings_only() {
        assert!(!too_deep(b"{\"a\":[1,{\"b\":[]}]}", 4));
        assert!(too_deep(b"{\"a\":[1,{\"b\":[]}]}", 3));
        let brackets_in_a_string = format!("{{\"s\":\"{}\"}}", "[".repeat(10_000));
        assert!(!too_deep(brackets_in_a_string.as_bytes(), MAX_DEPTH));
        let escaped_quote = format!("{{\"s\":\"\\\"{}\"}}", "[".repeat(500));
        assert!(!too_deep(escaped_quote.as_bytes(), MAX_DEPTH));
        let deep = "[".repeat(50_000);
        assert!(too_deep(deep.as_bytes(), MAX_DEPTH));
        assert!(from_slice::<serde_json::Value>(deep.as_bytes()).is_err());
    }
}
