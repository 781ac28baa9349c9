//! Answering from Mimesis: the socket and its requests are the `mimesis-approvals` crate;
//! here its requests are marked with the sessions the engine follows ([`follow_roster`]).

mod roster;
#[cfg(test)]
mod tests;

pub use mimesis_approvals::*;
pub use roster::{Row, Rows, follow as follow_roster};
