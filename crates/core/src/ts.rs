//! TypeScript for the types whose JSON is written by hand (`feature = "ts"`): what they
//! serialize to, for the UI's generated IPC types. The derives on the other types follow
//! their serde attributes; these follow their `Serialize` impls.

use ts_rs::{Config, TS};

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::session::SessionPatch;

/// A type that crosses as a plain TypeScript type (no declaration of its own).
macro_rules! plain {
    ($ty:ty => $ts:literal) => {
        impl TS for $ty {
            type WithoutGenerics = Self;
            type OptionInnerType = Self;
            fn name(_: &Config) -> String {
                $ts.to_owned()
            }
            fn inline(_: &Config) -> String {
                $ts.to_owned()
            }
        }
    };
}

// `#[serde(transparent)]` over a validated string.
plain!(SessionId => "string");
plain!(crate::ids::JobId => "string");
// ISO-8601 with milliseconds, UTC (`Timestamp::to_iso`).
plain!(Timestamp => "string");

/// The changed fields of a row only, each with its new value (`SessionPatch`'s
/// `Serialize`): a partial row.
impl TS for SessionPatch {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;
    fn name(_: &Config) -> String {
        "SessionPatch".to_owned()
    }
    fn inline(_: &Config) -> String {
        "Partial<TrackedSession>".to_owned()
    }
    fn decl(cfg: &Config) -> String {
        format!("type SessionPatch = {};", Self::inline(cfg))
    }
    fn decl_concrete(cfg: &Config) -> String {
        Self::decl(cfg)
    }
    fn docs() -> Option<String> {
        Some("/** What changed in a roster row: the changed fields only, null included. */\n".to_owned())
    }
}
