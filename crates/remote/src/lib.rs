//! Sessions on other machines (issue 13), over the user's own OpenSSH client: their
//! `~/.ssh/config`, agent, keys, ProxyJump and ControlMaster all apply. Mimesis runs
//! `ssh -T` in batch mode (it never answers a password or host-key prompt) with the same
//! `mimesis` binary on the far side as `mimesis serve --stdio`, which does the reading
//! there and sends only the roster and its changes (the protocol: `mimesis_core::remote`).
//!
//! - [`connect`]: one connection, its hello checked; [`Connection::recv`] / `send`.
//! - the far side of it, `serve`, composes a whole Mimesis: it is in the wiring crate
//!   (`mimesis_wiring::remote::serve`), reading lines with [`read_line`].
//! - [`install_helper`]: copies this build's binary to a host of the same OS and
//!   architecture, into the helper folder of the user's data dir there, checksum verified.
//! - [`HostFeed`]: one host kept connected (back-off on the injectable clock), its roster
//!   held through drops and turned into store events that carry the host.
//! - [`Hub`]: the machines of the settings, kept connected for a window (the settings
//!   themselves are read and written by the wiring crate).

mod feed;
mod hub;
mod ssh;
#[cfg(test)]
mod tests;

pub use feed::{FeedCmd, FeedMsg, HostFeed, HostInfo};
pub use hub::{Hub, HubEvent, face_row, face_supervision};
pub use ssh::{
    Connection, Hello, InstallError, Ssh, connect, connect_or_install, cost, install_helper, read_line, roster, search,
    timeline,
};

/// Why a request to another machine failed: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{0} is not in the list of machines")]
    NotListed(mimesis_core::remote::Destination),
    #[error("{0} is not connected")]
    NotConnected(mimesis_core::remote::Destination),
    #[error("not a session of another machine")]
    NotRemote,
    #[error(transparent)]
    Destination(#[from] mimesis_core::remote::DestinationError),
    #[error("that is not a session id")]
    NotASessionId,
    #[error("the connection to the host dropped")]
    Dropped,
    #[error("the host is not connected")]
    HostNotConnected,
    /// The host's own words (quoted and cleaned when shown).
    #[error("{}", mimesis_core::remote::quote(.0))]
    HostSaid(String),
    #[error("cannot write to the host: {0}")]
    Write(std::io::Error),
    #[error("{}", .0.sentence())]
    Failed(mimesis_core::remote::Failure),
    /// The host answered a request with a reply of another kind.
    #[error("the host answered something else")]
    WrongAnswer,
    /// A search asked of a machine whose connection is still being made.
    #[error("still connecting; search again in a moment")]
    StillConnecting,
    /// A search asked of a machine that is not connected: why (the feed's own words).
    #[error("not reachable — {0}")]
    NotReachable(String),
}
