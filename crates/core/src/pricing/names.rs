//! Which table entry a model name means, when the table has no entry of that exact name:
//! the rule ccusage 20 uses (its `pricing_key_matches`), so a name prices the same in
//! both. A table entry matches a name that contains it between word boundaries (what
//! comes after it may be a date, `-20250929`, or a suffix such as `[1m]` or `-v1:0`, but
//! not another version number: `claude-opus-4` does not match `claude-opus-4-8`), or, the
//! other way round, that it contains (a bare name and a table of dated or prefixed ids).
//! Both are also tried with `.` and `@` read as `-`. The longest matching entry wins (the
//! most specific), ties going to the first in alphabetical order.
//!
//! One difference from ccusage: a name with no digit at all (`sonnet`, `claude`) is never
//! matched to an entry that merely contains it. It names a family, not a model, and ccusage
//! prices it as whichever such entry is longest; here it is an unknown model.

use std::borrow::Cow;

/// Anthropic dates model ids `-YYYYMMDD`: a suffix of this many digits is a date, any
/// other number a version.
const DATE_DIGITS: usize = 8;

/// The key of `keys` that `model` means, if any (see the module doc).
pub fn best_match<'a>(model: &str, keys: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if model.is_empty() || model.len() > 200 {
        return None;
    }
    let normalized = normalize(model);
    let versioned = model.bytes().any(|b| b.is_ascii_digit());
    keys.filter(|k| matches(k, model, &normalized, versioned))
        .max_by(|a, b| a.len().cmp(&b.len()).then_with(|| b.cmp(a)))
}

fn matches(key: &str, model: &str, normalized_model: &str, versioned: bool) -> bool {
    if contains_key(model, key) || (versioned && contains_key(key, model)) {
        return true;
    }
    let key = normalize(key);
    contains_key(normalized_model, &key) || (versioned && contains_key(&key, normalized_model))
}

fn normalize(s: &str) -> Cow<'_, str> {
    if s.contains(['.', '@']) { Cow::Owned(s.replace(['.', '@'], "-")) } else { Cow::Borrowed(s) }
}

/// Does `value` contain `key` with a word boundary before it, and after it either the end,
/// or a separator that does not start another version number?
fn contains_key(value: &str, key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    value.match_indices(key).any(|(at, _)| {
        let before_ok = at == 0 || !value.as_bytes()[at - 1].is_ascii_alphanumeric();
        before_ok && suffix_ok(key, &value[at + key.len()..])
    })
}

fn suffix_ok(key: &str, suffix: &str) -> bool {
    let Some(&first) = suffix.as_bytes().first() else { return true };
    if first.is_ascii_alphanumeric() {
        return false;
    }
    !starts_another_version(key, suffix)
}

/// `claude-opus-4` then `-8`: another version, not the same model. A date (8 digits) is
/// the same model.
fn starts_another_version(key: &str, suffix: &str) -> bool {
    if !key.as_bytes().last().is_some_and(u8::is_ascii_digit) || !matches!(suffix.as_bytes()[0], b'-' | b'.') {
        return false;
    }
    let rest = &suffix.as_bytes()[1..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return false;
    }
    let after = rest.get(digits);
    !(digits == DATE_DIGITS && after.is_none_or(|b| !b.is_ascii_alphanumeric()))
}
