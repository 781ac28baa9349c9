//! Sessions on other machines (issue 13), over the user's own OpenSSH client: their
//! `~/.ssh/config`, agent, keys, ProxyJump and ControlMaster all apply. Mimesis runs
//! `ssh -T` in batch mode (it never answers a password or host-key prompt) with the same
//! `mimesis` binary on the far side as `mimesis serve --stdio`, which does the reading
//! there and sends only the roster and its changes (the protocol: `mimesis_core::remote`).
//!
//! - [`connect`]: one connection, its hello checked; [`Connection::recv`] / `send`.
//! - [`serve`]: the far side of it.
//! - [`install_helper`]: copies this build's binary to a host of the same OS and
//!   architecture, into the helper folder of the user's data dir there, checksum verified.
//! - [`HostFeed`]: one host kept connected (back-off on the injectable clock), its roster
//!   held through drops and turned into store events that carry the host.
//! - [`configured`], [`Hub`]: the machines of the settings, kept connected for a window.

mod feed;
mod hub;
mod serve;
mod ssh;
#[cfg(test)]
mod tests;

pub use feed::{FeedCmd, FeedMsg, HostFeed, HostInfo};
pub use hub::{Hub, HubEvent, change_configured, configured, face_row, face_supervision};
pub use serve::serve;
pub use ssh::{Connection, Hello, Ssh, connect, connect_or_install, cost, install_helper, roster, timeline};
