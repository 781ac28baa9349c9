//! Identifiers that come from untrusted places (file names, transcript fields, hook
//! payloads). They are validated once, here, so that no path is ever built from an
//! unchecked string (SPEC C7).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// Why an identifier was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a valid session id (expected 1–128 letters, digits, '-' or '_')")]
pub struct InvalidId(pub String);

fn valid_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A Claude Code session id: the stem of `<root>/projects/<project>/<id>.jsonl`.
/// Usually a UUID; anything made of `[A-Za-z0-9_-]` is accepted so that path
/// separators, `..` and control characters can never get through.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    pub fn parse(s: &str) -> Result<Self, InvalidId> {
        if valid_id(s) { Ok(SessionId(s.to_owned())) } else { Err(InvalidId(s.to_owned())) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A UUID in its usual form (8-4-4-4-12 hex digits), as Claude Code's `--session-id`
    /// requires of a new session's id.
    pub fn is_uuid(&self) -> bool {
        let b = self.0.as_bytes();
        b.len() == 36
            && b.iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            })
    }

    /// An id that sorts after every valid one (for range bounds in ordered indexes).
    pub fn greatest() -> SessionId {
        SessionId("z".repeat(128))
    }

    /// A short prefix for tables and logs.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(8)]
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        SessionId::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for SessionId {
    type Err = InvalidId;
    fn from_str(s: &str) -> Result<Self, InvalidId> {
        SessionId::parse(s)
    }
}

/// The short id Claude Code's background service gives a session (2.1.332: `claude agents
/// --json`'s `id`, the name of `<config>/jobs/<id>/`): the first 8 hex digits of its session
/// id. Exactly 8 lowercase hex digits, so it can name a folder and be a verb's argument
/// (never a prefix or a name the CLI would match loosely).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct JobId(String);

/// Why a job id was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a background session's id (expected 8 hex digits, as `claude agents` lists them)")]
pub struct InvalidJobId(pub String);

impl JobId {
    pub fn parse(s: &str) -> Result<Self, InvalidJobId> {
        if s.len() == 8 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(JobId(s.to_owned()))
        } else {
            Err(InvalidJobId(s.chars().take(64).collect()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Is it the short id of `session` (its first 8 characters)?
    pub fn names(&self, session: &SessionId) -> bool {
        session.as_str().starts_with(&self.0)
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        JobId::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_uuids() {
        assert!(SessionId::parse("0b6d3a8e-6f1c-4c39-9d3e-2a1f5e7c9b10").unwrap().is_uuid());
        for not in [
            "abc",
            "0b6d3a8e-6f1c-4c39-9d3e-2a1f5e7c9b1",
            "0b6d3a8e_6f1c-4c39-9d3e-2a1f5e7c9b10",
            "zb6d3a8e-6f1c-4c39-9d3e-2a1f5e7c9b10",
        ] {
            assert!(!SessionId::parse(not).unwrap().is_uuid(), "{not}");
        }
    }

    #[test]
    fn accepts_uuids_and_rejects_paths() {
        assert!(SessionId::parse("3f1c2b9e-0000-4000-8000-000000000001").is_ok());
        for bad in ["", "../x", "a/b", "a\\b", "a.jsonl", "x\0", " a", &"a".repeat(129)] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn job_ids_are_eight_lowercase_hex_digits() {
        let id = JobId::parse("aa2e1246").unwrap();
        assert!(id.names(&SessionId::parse("aa2e1246-11cc-48b1-aa61-76af4aa5d5aa").unwrap()));
        assert!(!id.names(&SessionId::parse("aa2e124").unwrap()));
        for bad in ["", "aa2e124", "aa2e12461", "AA2E1246", "../../x", "aa2e124g", "aa2e-124", "aa2e1246\n"] {
            assert!(JobId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<JobId>("\"../jobs\"").is_err());
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"aa2e1246\"");
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<SessionId>("\"../../etc/passwd\"").is_err());
        assert_eq!(serde_json::from_str::<SessionId>("\"abc-1\"").unwrap().as_str(), "abc-1");
    }
}
