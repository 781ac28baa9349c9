//! Sessions on other machines over the user's own SSH (issue 13): the wire protocol
//! between a Mimesis and `mimesis serve --stdio` on another host, SSH destinations,
//! quoting for the remote shell, ssh's failures in sentences, and each host's connection
//! state with its reconnect back-off. Pure: the ssh process and its pipes live in
//! `mimesis-wiring`'s `remote` module.
//!
//! The protocol is JSON Lines over ssh's stdin/stdout. The local side speaks first
//! (`hello` with its protocol number); the remote answers `hello` (its protocol, version,
//! OS and architecture), then `snapshot` once its first index is done, then one `event`
//! per roster change; `show` requests are answered by `timeline` or `error` carrying the
//! request's number, and one `supervision` per supervision event of the sessions its
//! supervisors (each `mimesis run` there) run; `cost` requests by `cost` (also one-shot, in
//! place of the hello). The remote stops when its stdin closes, so it never outlives the
//! connection.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{Mono, Timestamp};
use crate::session::{StoreEvent, TrackedSession};
use crate::spend::{CostQuery, CostReport};
use crate::supervision::SupervisionEvent;
use crate::timeline::TimelineItem;

/// The protocol this build speaks. A remote that answers with another one is a helper of
/// another version: the user is offered to install this build's.
/// 2: `supervision` messages. 3: `cost` requests.
pub const PROTOCOL: u32 = 3;

/// What a host may send, and what this side holds of it (issue 32): a hostile or broken
/// remote is cut off with a sentence when it passes one, never followed into memory.
/// The longest `snapshot` line (a 2,000-session snapshot is about 6 MB).
pub const MAX_SNAPSHOT_LINE: usize = 64 * 1024 * 1024;
/// The longest `timeline` line (only read while a `show` waits for one): a timeline holds
/// a transcript's text in full.
pub const MAX_TIMELINE_LINE: usize = 256 * 1024 * 1024;
/// The longest line of any other message (`event`, `supervision`, `hello`, `error`): one
/// row is a few kilobytes.
pub const MAX_EVENT_LINE: usize = 1024 * 1024;
/// The most sessions held from one host.
pub const MAX_HOST_SESSIONS: usize = 20_000;
/// The most held from one host's rows, as JSON: what the longest snapshot could bring.
pub const MAX_HOST_BYTES: usize = MAX_SNAPSHOT_LINE;
/// The most characters of a remote's own words an error quotes.
pub const QUOTE_MAX: usize = 200;

/// A remote's words, fit to quote in a sentence: one line, no control or invisible
/// characters, at most [`QUOTE_MAX`] characters (then `…`).
pub fn quote(s: &str) -> String {
    crate::text::clean_text(s, QUOTE_MAX)
}

/// `n` bytes for a person: "1.5 MiB".
pub fn size_words(n: usize) -> String {
    match n {
        0..1024 => format!("{n} bytes"),
        1024..0x100000 => format!("{} KiB", n / 1024),
        _ => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
    }
}

/// How long Mimesis waits on a host, each wait bounded. Policy: the feed's waits run on
/// its injectable clock. `MIMESIS_REMOTE_WAIT_SECS` ([`Waits::with_env`]) sets every one
/// of them, for a slow link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    /// From starting ssh to the remote's hello (ssh's own connect timeout is shorter).
    pub hello: Duration,
    /// From the hello to the first snapshot (the remote indexes its sessions first).
    pub snapshot: Duration,
    /// From a `show` to its answer.
    pub reply: Duration,
    /// Copying this build to the host.
    pub install: Duration,
}

pub const WAIT_ENV: &str = "MIMESIS_REMOTE_WAIT_SECS";

impl Default for Waits {
    fn default() -> Self {
        Waits {
            hello: Duration::from_secs(60),
            snapshot: Duration::from_secs(120),
            reply: Duration::from_secs(120),
            install: Duration::from_secs(600),
        }
    }
}

impl Waits {
    /// The defaults, or every wait `value` seconds when it is a positive number (the value
    /// of [`WAIT_ENV`]).
    pub fn with_env(value: Option<&str>) -> Waits {
        match value.and_then(|v| v.trim().parse::<f64>().ok()).filter(|s| s.is_finite() && *s > 0.0) {
            Some(secs) => {
                let d = Duration::from_secs_f64(secs.min(86_400.0));
                Waits { hello: d, snapshot: d, reply: d, install: d }
            }
            None => Waits::default(),
        }
    }
}

/// "12 s", "2 min", "1.5 s": a wait as a sentence says it.
pub fn wait_words(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        _ if ms.is_multiple_of(60_000) && ms >= 120_000 => format!("{} min", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{} s", ms / 1000),
        _ => format!("{:.1} s", d.as_secs_f64()),
    }
}

/// Local → remote.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ToRemote {
    Hello {
        protocol: u32,
    },
    /// The timeline of one session (with the earlier segments of its chain).
    Show {
        req: u64,
        session_id: String,
    },
    /// A cost report of the host's transcripts (`mimesis cost --host`). Sent in place of
    /// `hello` it is a one-shot request: answered from the files, without indexing or
    /// watching, and the remote stops.
    Cost {
        req: u64,
        query: CostQuery,
    },
    /// A search over the host's history (issue 35).
    Search {
        req: u64,
        request: crate::search::Request,
    },
}

/// Remote → local.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum FromRemote {
    Hello {
        protocol: u32,
        version: String,
        os: String,
        arch: String,
    },
    /// The whole roster, once the remote's first index is done (at most
    /// [`MAX_HOST_SESSIONS`] read: the parse stops at the next one).
    Snapshot {
        #[serde(deserialize_with = "at_most_host_sessions")]
        sessions: Vec<TrackedSession>,
    },
    Event {
        event: StoreEvent,
    },
    /// What a supervisor on the host said of one of its sessions (its row's `supervision`
    /// has changed already: the event follows the state it describes).
    Supervision {
        event: SupervisionEvent,
    },
    Timeline {
        req: u64,
        items: Vec<TimelineItem>,
    },
    Cost {
        req: u64,
        report: Box<CostReport>,
    },
    /// What a `search` found on the host (its hits' `host` is null: the local side sets it).
    SearchResults {
        req: u64,
        results: crate::search::Results,
    },
    /// A request that failed (`req`), or the remote stopping (no `req`).
    Error {
        req: Option<u64>,
        message: String,
    },
}

/// The error a snapshot of too many sessions stops with (said by [`FromRemote::parse`]).
const TOO_MANY_SESSIONS: &str = "mimesis: more sessions than held from one host";

fn at_most_host_sessions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<TrackedSession>, D::Error> {
    struct Capped;
    impl<'de> serde::de::Visitor<'de> for Capped {
        type Value = Vec<TrackedSession>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of sessions")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(s) = seq.next_element()? {
                if out.len() == MAX_HOST_SESSIONS {
                    return Err(serde::de::Error::custom(TOO_MANY_SESSIONS));
                }
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Capped)
}

impl Failure {
    /// A host with more sessions than Mimesis holds from one machine.
    pub fn too_many_sessions() -> Failure {
        Failure::Protocol(format!(
            "the host has more than {} sessions, more than Mimesis follows on one machine; it stopped reading it",
            thousands(MAX_HOST_SESSIONS)
        ))
    }

    /// A host whose rows together pass [`MAX_HOST_BYTES`].
    pub fn too_much_data() -> Failure {
        Failure::Protocol(format!(
            "the host's sessions take more than {}, more than Mimesis holds from one machine; it stopped reading it",
            size_words(MAX_HOST_BYTES)
        ))
    }
}

fn thousands(n: usize) -> String {
    crate::spend::thousands(n as u64)
}

impl FromRemote {
    /// One line from the remote: untrusted. Depth-guarded; ids are validated by their
    /// types (a bad session id fails the whole message); a snapshot holds at most
    /// [`MAX_HOST_SESSIONS`], and every message but a snapshot or a timeline fits in
    /// [`MAX_EVENT_LINE`]. What the remote wrote is quoted, cleaned and cut.
    pub fn parse(line: &[u8]) -> Result<FromRemote, Failure> {
        let msg: FromRemote = crate::json::from_slice(line).map_err(|e| {
            let e = e.to_string();
            if e.contains(TOO_MANY_SESSIONS) {
                Failure::too_many_sessions()
            } else {
                Failure::Protocol(format!("the host sent a bad message: {}", quote(&e)))
            }
        })?;
        let (kind, max) = match &msg {
            FromRemote::Snapshot { .. } => ("snapshot", MAX_SNAPSHOT_LINE),
            FromRemote::Timeline { .. } => ("timeline", MAX_TIMELINE_LINE),
            // A report by session has a row a session: a snapshot's size.
            FromRemote::Cost { .. } => ("cost", MAX_SNAPSHOT_LINE),
            FromRemote::SearchResults { .. } => ("search results", MAX_SNAPSHOT_LINE),
            FromRemote::Hello { .. } => ("hello", MAX_EVENT_LINE),
            FromRemote::Event { .. } => ("event", MAX_EVENT_LINE),
            FromRemote::Supervision { .. } => ("supervision", MAX_EVENT_LINE),
            FromRemote::Error { .. } => ("error", MAX_EVENT_LINE),
        };
        if line.len() > max {
            return Err(Failure::Protocol(format!(
                "the host sent {} in one {kind} message, more than the {} Mimesis accepts; it stopped reading it",
                size_words(line.len()),
                size_words(max)
            )));
        }
        Ok(msg)
    }

    /// The longest line to read next: a timeline's only while a `show` waits for one.
    pub fn line_cap(show_waiting: bool) -> usize {
        if show_waiting { MAX_TIMELINE_LINE } else { MAX_SNAPSHOT_LINE }
    }
}

/// What a host's `updated` event may change of its own row: every field of a patch but
/// the ones that are not the host's word. `sessionId` is the id the event was sent for
/// (a patch never renames a row); `host` is this side's; `transcriptPath` is a path on
/// the host, never one here, and it only ever comes with the full row.
pub fn remote_patch(mut p: crate::session::SessionPatch) -> crate::session::SessionPatch {
    p.session_id = None;
    p.host = None;
    p.transcript_path = None;
    p
}

impl ToRemote {
    pub fn parse(line: &[u8]) -> Result<ToRemote, crate::json::JsonError> {
        crate::json::from_slice(line)
    }
}

/// This machine's OS and architecture as `uname -sm` prints them ("Linux x86_64"), to
/// compare with a remote before copying this build's binary there.
pub fn uname_of(os: &str, arch: &str) -> String {
    let os = match os {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    let arch = match (os, arch) {
        ("Darwin", "aarch64") => "arm64",
        (_, a) => a,
    };
    format!("{os} {arch}")
}

/// Why a text is not an SSH destination (each variant holds the text given, trimmed): the
/// sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("an SSH destination is needed (an alias from ~/.ssh/config, user@host or ssh://user@host:port)")]
    Empty,
    #[error("that SSH destination is longer than 255 characters")]
    TooLong,
    #[error("{0:?} is not an SSH destination: it must not start with '-'")]
    Dash(String),
    #[error("{0:?} is not an SSH destination: the user name may hold letters, digits, '.', '_' and '-'")]
    User(String),
    #[error("{0:?} is not an SSH destination: use an alias from ~/.ssh/config, user@host or ssh://user@host:port")]
    Host(String),
    #[error("{0:?}: the port must be a number from 1 to 65535")]
    Port(String),
}

/// An SSH destination as the user gave it: an alias from `~/.ssh/config`, `host`,
/// `user@host`, or `ssh://[user@]host[:port]`. Passed to `ssh` as one argument after
/// `--`, so it can never be read as an option; its characters are limited so it can
/// never be read as anything but a destination either.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Destination(String);

impl Destination {
    pub fn parse(s: &str) -> Result<Destination, DestinationError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(DestinationError::Empty);
        }
        if s.len() > 255 {
            return Err(DestinationError::TooLong);
        }
        let given = || s.to_owned();
        if s.starts_with('-') {
            return Err(DestinationError::Dash(given()));
        }
        let rest = s.strip_prefix("ssh://").unwrap_or(s);
        let (user, host) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let user_ok = |u: &str| !u.is_empty() && u.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if let Some(u) = user
            && (!user_ok(u) || u.starts_with('-'))
        {
            return Err(DestinationError::User(given()));
        }
        // host, host:port (ssh:// only), [v6]:port
        let host_ok = |h: &str| {
            !h.is_empty()
                && !h.starts_with('-')
                && h.chars().all(|c| c.is_ascii_alphanumeric() || ".-_:[]%".contains(c))
        };
        let (name, port) = if s.starts_with("ssh://") {
            match host.rsplit_once(':') {
                Some((n, p)) if !n.ends_with(':') && p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
                    (n, Some(p))
                }
                _ => (host, None),
            }
        } else {
            (host, None)
        };
        if !host_ok(name) || (s.starts_with("ssh://") && name.is_empty()) {
            return Err(DestinationError::Host(given()));
        }
        if let Some(p) = port
            && !p.parse::<u16>().is_ok_and(|p| p > 0)
        {
            return Err(DestinationError::Port(given()));
        }
        Ok(Destination(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Destination {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Destination::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A session on the command line: `id`, or `host:id` for a session on a remote host.
/// Session ids hold no ':', so the id is what follows the last one.
pub fn split_host_id(arg: &str) -> (Option<&str>, &str) {
    match arg.rsplit_once(':') {
        Some((host, id)) if !host.is_empty() => (Some(host), id),
        _ => (None, arg),
    }
}

/// One word for a POSIX shell: single-quoted, so nothing in it is expanded or run.
pub fn sh_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A command line for the remote shell: every word quoted.
pub fn sh_command<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| sh_quote(w.as_ref())).collect::<Vec<_>>().join(" ")
}

/// Where the helper lives on the remote: `$MIMESIS_DATA_DIR`, else the XDG data dir, as
/// the remote `mimesis` itself resolves its data dir. A shell expression.
const REMOTE_BIN_DIR: &str = r#""${MIMESIS_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/mimesis}/bin""#;

/// The exit status the remote script gives when no `mimesis` is there.
pub const EXIT_HELPER_MISSING: i32 = 127;

/// The remote command that runs `mimesis <args>` there: the helper Mimesis installed,
/// else a `mimesis` on the remote's PATH; exit 127 with a line on stderr when neither
/// exists. Run by `sh -c` whatever the user's login shell is.
pub fn remote_mimesis(args: &[&str]) -> String {
    let script = format!(
        "d={REMOTE_BIN_DIR}; m=\"$d/mimesis\"; [ -x \"$m\" ] || m=$(command -v mimesis) || \
         {{ echo \"mimesis-helper-missing $(uname -sm)\" >&2; exit {EXIT_HELPER_MISSING}; }}; exec \"$m\" {}",
        sh_command(args)
    );
    sh_command(&["sh", "-c", &script])
}

/// The remote command that receives this build's binary on stdin and installs it as the
/// helper: only into the helper's folder, only as the connecting user, readable by them
/// alone; kept only when its SHA-256 is `sha256`. Prints `installed <path>`.
pub fn remote_install(sha256: &str) -> String {
    debug_assert!(sha256.chars().all(|c| c.is_ascii_hexdigit()));
    let script = format!(
        "set -e; umask 077; d={REMOTE_BIN_DIR}; mkdir -p \"$d\"; t=\"$d/.mimesis.part.$$\"; \
         trap 'rm -f \"$t\"' EXIT; cat > \"$t\"; \
         if command -v sha256sum >/dev/null; then s=$(sha256sum \"$t\"); else s=$(shasum -a 256 \"$t\"); fi; \
         s=${{s%% *}}; if [ \"$s\" != {sha256} ]; then echo \"mimesis-checksum-mismatch $s\" >&2; exit 3; fi; \
         chmod 700 \"$t\"; mv -f \"$t\" \"$d/mimesis\"; trap - EXIT; echo \"installed $d/mimesis\""
    );
    sh_command(&["sh", "-c", &script])
}

/// The remote command that prints `uname -sm`.
pub fn remote_uname() -> String {
    sh_command(&["uname", "-sm"])
}

/// Why a connection to a host failed, from ssh's exit status and what it wrote on
/// stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The host is not there, refuses, or the network fails: retried with back-off.
    Unreachable(String),
    /// SSH itself said no (key refused, host key changed): retried with back-off too (the
    /// user may fix it meanwhile), and said plainly.
    Refused(String),
    /// No `mimesis` on the host (`uname -sm` of the host, when known).
    HelperMissing { uname: Option<String> },
    /// A `mimesis` that speaks another protocol (or knows no `serve`).
    HelperMismatch(String),
    /// The remote answered something that is not the protocol.
    Protocol(String),
}

impl Failure {
    /// From ssh's exit status (None: killed) and its stderr, for a connection that ended
    /// before the remote said hello.
    pub fn classify(exit: Option<i32>, stderr: &str) -> Failure {
        let line = |needle: &str| stderr.lines().find(|l| l.contains(needle)).map(str::trim);
        if let Some(l) = line("mimesis-helper-missing") {
            let uname = l.split_once("mimesis-helper-missing").map(|(_, u)| quote(u)).filter(|u| !u.is_empty());
            return Failure::HelperMissing { uname };
        }
        if stderr.contains("unrecognized subcommand") {
            return Failure::HelperMismatch("the mimesis on the host is older and cannot serve this Mimesis".into());
        }
        if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
            return Failure::Refused(
                "the host's key has changed since you last connected: check it, then fix ~/.ssh/known_hosts yourself (Mimesis never accepts a host key)".into(),
            );
        }
        if stderr.contains("Host key verification failed") || stderr.contains("No ED25519 host key is known") {
            return Failure::Refused(
                "the host's key is not known: connect once with ssh in a terminal to check and accept it (Mimesis never accepts a host key)".into(),
            );
        }
        if stderr.contains("Permission denied") {
            return Failure::Refused(
                "the host refused the login: Mimesis connects with keys or the SSH agent only (it never asks for a password); add your key to the agent or to the host's authorized_keys".into(),
            );
        }
        if let Some(l) = line("Could not resolve hostname") {
            return Failure::Unreachable(format!("the host's name is unknown ({})", tail_of(l)));
        }
        if stderr.contains("Connection refused") {
            return Failure::Unreachable("the host refused the connection (no SSH server on that port?)".into());
        }
        if stderr.contains("timed out") {
            return Failure::Unreachable("the connection timed out".into());
        }
        if stderr.contains("No route to host") || stderr.contains("Network is unreachable") {
            return Failure::Unreachable("there is no route to the host".into());
        }
        if stderr.contains("Connection closed") || stderr.contains("Connection reset") || stderr.contains("closed by") {
            return Failure::Unreachable("the connection was closed".into());
        }
        if exit == Some(EXIT_HELPER_MISSING) {
            return Failure::HelperMissing { uname: None };
        }
        let last = stderr.lines().map(str::trim).rfind(|l| !l.is_empty());
        match (exit, last) {
            (_, Some(l)) => Failure::Unreachable(format!("ssh failed: {}", quote(l))),
            (Some(code), None) => Failure::Unreachable(format!("ssh exited with status {code}")),
            (None, None) => Failure::Unreachable("ssh was stopped".into()),
        }
    }

    /// The failure in a sentence for the user: one line, whatever a remote's words in it
    /// held (each quote in it is cut to [`QUOTE_MAX`] where it was made).
    pub fn sentence(&self) -> String {
        let s = match self {
            Failure::Unreachable(s) | Failure::Refused(s) | Failure::Protocol(s) | Failure::HelperMismatch(s) => {
                s.clone()
            }
            Failure::HelperMissing { uname: Some(u) } => format!("Mimesis is not installed on the host ({u})"),
            Failure::HelperMissing { uname: None } => "Mimesis is not installed on the host".into(),
        };
        crate::text::clean_text(&s, 4 * QUOTE_MAX)
    }

    /// Installing this build's binary would fix it.
    pub fn wants_helper(&self) -> bool {
        matches!(self, Failure::HelperMissing { .. } | Failure::HelperMismatch(_))
    }
}

fn tail_of(l: &str) -> String {
    quote(l.rsplit_once(": ").map(|(_, t)| t).unwrap_or(l))
}

/// A remote's hello of another protocol, in a sentence (its version quoted, cut short).
pub fn other_protocol(version: &str, protocol: u32) -> Failure {
    Failure::HelperMismatch(format!(
        "the host has Mimesis {}, which speaks protocol {protocol}; this Mimesis speaks {PROTOCOL}",
        crate::text::clean_text(version, 40)
    ))
}

/// What the user sees of a host (docs/ipc.md `hosts`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HostState {
    Connecting,
    Live,
    /// Was live; the connection dropped: its last roster is kept.
    Stale,
    Unreachable,
    HelperMissing,
}

/// How long before the next attempt after `failures` failures in a row: 1 s, 2 s, 4 s …
/// up to a minute. A host that stays away is asked once a minute, never more often.
pub fn backoff(failures: u32) -> Duration {
    let secs = 1u64 << failures.saturating_sub(1).min(6);
    Duration::from_secs(secs.min(60))
}

/// One host's connection, as a state machine fed with what happened and when. Sans-IO:
/// the wiring connects when [`HostLink::due`] says so and reports back.
#[derive(Clone, Debug)]
pub struct HostLink {
    pub state: HostState,
    /// The last failure, in a sentence (none while live).
    pub message: Option<String>,
    /// When the host last sent something (wall clock, for "last seen").
    pub last_seen: Option<Timestamp>,
    /// Failures since the host was last live.
    pub failures: u32,
    /// When to try again (None: connected, connecting, or waiting for the user).
    pub retry_at: Option<Mono>,
    /// Whether a roster from it is held (then a drop is `stale`, not `unreachable`).
    pub has_data: bool,
}

impl Default for HostLink {
    fn default() -> Self {
        HostLink {
            state: HostState::Connecting,
            message: None,
            last_seen: None,
            failures: 0,
            retry_at: None,
            has_data: false,
        }
    }
}

impl HostLink {
    /// A connection attempt starts.
    pub fn connecting(&mut self) {
        self.retry_at = None;
        if !self.has_data {
            self.state = HostState::Connecting;
        }
    }

    /// The remote said hello and sent its roster.
    pub fn live(&mut self, now: Timestamp) {
        self.state = HostState::Live;
        self.message = None;
        self.failures = 0;
        self.retry_at = None;
        self.has_data = true;
        self.last_seen = Some(now);
    }

    /// Something arrived from a live host.
    pub fn heard(&mut self, now: Timestamp) {
        self.last_seen = Some(now);
    }

    /// The attempt failed or the connection dropped. Returns when to try again, or None
    /// when only the user can fix it (no helper: it waits for "Install").
    pub fn failed(&mut self, failure: &Failure, now: Mono) -> Option<Mono> {
        self.failures = self.failures.saturating_add(1);
        self.message = Some(failure.sentence());
        if failure.wants_helper() {
            self.state = HostState::HelperMissing;
            self.retry_at = None;
            return None;
        }
        self.state = if self.has_data { HostState::Stale } else { HostState::Unreachable };
        let at = now.plus(backoff(self.failures));
        self.retry_at = Some(at);
        Some(at)
    }

    /// The user asked to connect now (or installed the helper).
    pub fn retry_now(&mut self, now: Mono) {
        self.failures = 0;
        self.retry_at = Some(now);
    }

    pub fn due(&self, now: Mono) -> bool {
        self.retry_at.is_some_and(|at| at <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33: a host's rows say which of its sessions run in Claude Code's background
    /// service and their jobs; a job id that is not the service's short id fails the line.
    #[test]
    fn a_hosts_rows_carry_kind_and_job_and_only_valid_job_ids() {
        let line = |job_id: &str| {
            let row = serde_json::json!({
                "sessionId": "aa2e1246-0000-4000-8000-000000000001", "projectId": "-p", "cwd": "/p", "repoRoot": null,
                "branch": null, "goal": "say hello", "summary": null, "title": null, "status": "working",
                "hasPendingToolUse": false, "pendingTool": null, "lastActivityAt": "2026-11-01T00:00:00.000Z",
                "createdAt": null, "model": null,
                "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 3, "cacheReadInputTokens": 4},
                "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null,
                "supersededAt": null, "workChainId": "w", "workChainName": null, "chainLength": 1, "source": "watcher",
                "supervision": null, "live": true, "pid": 7, "transcriptPath": "/r/p/s.jsonl", "permissionMode": null,
                "malformedLines": 0, "statusFile": null, "name": null, "subagents": 0,
                "cost": {"estimatedUsd": null, "unknownModels": [], "pricesAsOf": "2026-11-20", "billed": null},
                "kind": "background",
                "job": {"id": job_id, "state": "working", "detail": "Writing bg", "intent": "say hello", "attempt": 2}
            });
            serde_json::to_vec(&serde_json::json!({"type": "snapshot", "sessions": [row]})).unwrap()
        };
        let Ok(FromRemote::Snapshot { sessions }) = FromRemote::parse(&line("aa2e1246")) else { panic!() };
        assert_eq!(sessions[0].kind, Some(crate::job::SessionKind::Background));
        let job = sessions[0].job.as_ref().unwrap();
        assert_eq!((job.id.as_str(), job.state.as_deref(), job.attempt), ("aa2e1246", Some("working"), Some(2)));
        for bad in ["aa2e1246; rm -rf ~", "AA2E", "--help", ""] {
            assert!(FromRemote::parse(&line(bad)).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn destinations_are_aliases_user_at_host_or_ssh_urls() {
        for ok in ["devbox", "me@devbox", "ssh://me@devbox:2222", "ssh://devbox", "me@10.0.0.1", "me@[::1]", "a.b-c_d"]
        {
            assert_eq!(Destination::parse(ok).unwrap().as_str(), ok, "{ok}");
        }
        for bad in [
            "",
            "-oProxyCommand=touch /tmp/x",
            "me@-oProxyCommand=x",
            "host;rm -rf /",
            "$(touch x)",
            "a b",
            "me@",
            "@host",
            "ssh://me@host:99999",
            "ho`st`",
            "host\nx",
            "ssh://",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(serde_json::from_str::<Destination>("\"-oX\"").is_err());
    }

    #[test]
    fn quoting_keeps_every_word_one_literal_word() {
        assert_eq!(sh_quote("abc"), "'abc'");
        assert_eq!(sh_quote("it's $(rm -rf ~) `x` ; | & \n"), "'it'\\''s $(rm -rf ~) `x` ; | & \n'");
        assert_eq!(sh_command(&["mimesis", "run", "--resume", "a'b"]), "'mimesis' 'run' '--resume' 'a'\\''b'");
    }

    #[test]
    fn host_and_id_split_at_the_last_colon() {
        assert_eq!(split_host_id("abc-123"), (None, "abc-123"));
        assert_eq!(split_host_id("devbox:abc"), (Some("devbox"), "abc"));
        assert_eq!(split_host_id("ssh://me@h:22:abc"), (Some("ssh://me@h:22"), "abc"));
        assert_eq!(split_host_id(":abc"), (None, ":abc"));
    }

    #[test]
    fn ssh_failures_read_as_sentences() {
        let f = Failure::classify(Some(255), "ssh: connect to host 127.0.0.1 port 2222: Connection refused\r\n");
        assert!(matches!(&f, Failure::Unreachable(s) if s.contains("refused the connection")), "{f:?}");
        let f = Failure::classify(Some(255), "root@127.0.0.1: Permission denied (publickey).\n");
        assert!(matches!(&f, Failure::Refused(s) if s.contains("never asks for a password")));
        let f = Failure::classify(Some(255), "Host key verification failed.\n");
        assert!(matches!(&f, Failure::Refused(s) if s.contains("never accepts a host key")));
        let f = Failure::classify(Some(127), "mimesis-helper-missing Linux x86_64\n");
        assert_eq!(f, Failure::HelperMissing { uname: Some("Linux x86_64".into()) });
        assert!(f.wants_helper());
        let f = Failure::classify(Some(2), "error: unrecognized subcommand 'serve'\n");
        assert!(f.wants_helper());
        let f = Failure::classify(Some(255), "ssh: Could not resolve hostname nope: Name or service not known\n");
        assert_eq!(f.sentence(), "the host's name is unknown (Name or service not known)");
        let f = Failure::classify(Some(1), "\x1b[31mweird\x1b[0m\n");
        assert!(!f.sentence().contains('\x1b'));
    }

    /// What a hostile remote may put in its words: a clipboard write, a title, a clear.
    const HOSTILE: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J\u{9b}31m\u{202e}";

    fn assert_fit_to_quote(s: &str) {
        assert!(!s.chars().any(|c| c.is_control() || c == '\u{202e}'), "{s:?}");
    }

    #[test]
    fn a_remotes_words_in_an_error_are_cleaned_and_cut() {
        let long = format!("{HOSTILE}{}", "A".repeat(5_000));
        // The system name after mimesis-helper-missing.
        let f = Failure::classify(Some(127), &format!("mimesis-helper-missing {long}\n"));
        let Failure::HelperMissing { uname: Some(u) } = &f else { panic!("{f:?}") };
        assert_fit_to_quote(u);
        assert!(u.chars().count() <= QUOTE_MAX + 1 && u.ends_with('…'), "{u}");
        // The version in "speaks protocol 99".
        let f = other_protocol(&long, 99);
        assert_fit_to_quote(&f.sentence());
        assert!(f.sentence().contains("protocol 99") && f.sentence().len() < 300, "{}", f.sentence());
        // serde's "unknown variant `…`".
        let line = serde_json::json!({"type": long}).to_string();
        let f = FromRemote::parse(line.as_bytes()).unwrap_err();
        assert!(f.sentence().contains("unknown variant"), "{f:?}");
        assert_fit_to_quote(&f.sentence());
        assert!(f.sentence().chars().count() < QUOTE_MAX + 60, "{}", f.sentence());
        // ssh's last line, and any sentence at all.
        let f = Failure::classify(Some(1), &long);
        assert_fit_to_quote(&f.sentence());
        assert!(f.sentence().chars().count() < QUOTE_MAX + 20);
        let f = Failure::Protocol(long.clone());
        assert_fit_to_quote(&f.sentence());
        assert!(f.sentence().chars().count() <= 4 * QUOTE_MAX + 1);
    }

    fn row_json(n: usize) -> serde_json::Value {
        serde_json::json!({
            "sessionId": format!("s{n}"), "projectId": "-p", "cwd": null, "repoRoot": null, "branch": null,
            "goal": null, "summary": null, "title": null, "status": "idle", "hasPendingToolUse": false,
            "pendingTool": null, "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": null,
            "usage": {"inputTokens": 0, "outputTokens": 0, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
            "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null,
            "supersededAt": null, "workChainId": null, "workChainName": null, "chainLength": 1, "source": "watcher",
            "supervision": null, "live": false, "pid": null, "transcriptPath": "/x.jsonl", "permissionMode": null,
            "malformedLines": 0, "statusFile": null, "name": null
        })
    }

    #[test]
    fn a_snapshot_of_more_sessions_than_held_from_one_host_is_refused_with_a_sentence() {
        let rows = |n: usize| (0..n).map(row_json).collect::<Vec<_>>();
        let line = serde_json::json!({"type": "snapshot", "sessions": rows(MAX_HOST_SESSIONS)}).to_string();
        let Ok(FromRemote::Snapshot { sessions }) = FromRemote::parse(line.as_bytes()) else { panic!("refused") };
        assert_eq!(sessions.len(), MAX_HOST_SESSIONS);
        let line = serde_json::json!({"type": "snapshot", "sessions": rows(MAX_HOST_SESSIONS + 1)}).to_string();
        let f = FromRemote::parse(line.as_bytes()).unwrap_err();
        assert_eq!(f, Failure::too_many_sessions());
        assert!(f.sentence().contains("more than 20,000 sessions"), "{}", f.sentence());
    }

    #[test]
    fn only_a_snapshot_or_a_timeline_may_be_long() {
        let mut row = row_json(1);
        row["goal"] = "g".repeat(MAX_EVENT_LINE).into();
        let event = serde_json::json!({"type": "event", "event": {"type": "discovered", "session": row}}).to_string();
        let f = FromRemote::parse(event.as_bytes()).unwrap_err();
        assert!(f.sentence().contains("in one event message") && f.sentence().contains("1.0 MiB"), "{}", f.sentence());
        let snapshot = serde_json::json!({"type": "snapshot", "sessions": [row]}).to_string();
        assert!(FromRemote::parse(snapshot.as_bytes()).is_ok());
        assert_eq!(FromRemote::line_cap(false), MAX_SNAPSHOT_LINE);
        assert_eq!(FromRemote::line_cap(true), MAX_TIMELINE_LINE);
    }

    #[test]
    fn a_remote_patch_carries_only_what_a_host_may_change_of_its_own_row() {
        let line = br#"{"type":"event","event":{"type":"updated","sessionId":"abc","changes":
            {"sessionId":"hijack","transcriptPath":"/etc/shadow","host":"elsewhere","goal":"ok","unknown":1}}}"#;
        let Ok(FromRemote::Event { event: crate::session::StoreEvent::Updated { session_id, changes } }) =
            FromRemote::parse(line)
        else {
            panic!("not an update")
        };
        assert_eq!(session_id.as_str(), "abc");
        assert_eq!(changes.fields(), ["sessionId", "goal", "transcriptPath", "host"], "decoded as sent");
        let kept = remote_patch(*changes);
        assert_eq!(kept.fields(), ["goal"]);
        assert_eq!(kept.goal, Some(Some("ok".into())));
    }

    #[test]
    fn every_wait_on_a_host_is_bounded_and_one_setting_moves_them_all() {
        let d = Waits::default();
        assert!([d.hello, d.snapshot, d.reply, d.install].iter().all(|w| !w.is_zero() && w.as_secs() <= 600));
        assert_eq!(Waits::with_env(None), d);
        for bad in ["", "0", "-3", "x", "NaN", "inf"] {
            assert_eq!(Waits::with_env(Some(bad)), d, "{bad:?}");
        }
        let w = Waits::with_env(Some("1.5"));
        assert_eq!([w.hello, w.snapshot, w.reply, w.install], [Duration::from_millis(1500); 4]);
        assert_eq!(wait_words(Duration::from_secs(120)), "2 min");
        assert_eq!(wait_words(Duration::from_secs(60)), "60 s");
        assert_eq!(wait_words(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn a_host_that_stays_away_is_asked_at_most_once_a_minute() {
        let mut l = HostLink::default();
        let mut now = Mono::from_millis(0);
        let drop = Failure::Unreachable("x".into());
        let mut gaps = vec![];
        for _ in 0..10 {
            l.connecting();
            let at = l.failed(&drop, now).unwrap();
            gaps.push(at.since(now).as_secs());
            assert!(!l.due(now));
            assert!(l.due(at));
            now = at;
        }
        assert_eq!(gaps, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        assert_eq!(l.state, HostState::Unreachable);
    }

    #[test]
    fn a_drop_after_data_is_stale_and_keeps_last_seen() {
        let mut l = HostLink::default();
        l.connecting();
        let seen = Timestamp::from_millis(5_000);
        l.live(seen);
        assert_eq!(l.state, HostState::Live);
        l.failed(&Failure::Unreachable("the connection was closed".into()), Mono::from_millis(10));
        assert_eq!(l.state, HostState::Stale);
        assert_eq!(l.last_seen, Some(seen));
        l.connecting();
        assert_eq!(l.state, HostState::Stale, "reconnecting keeps showing the held roster");
        l.live(Timestamp::from_millis(9_000));
        assert_eq!((l.state, l.failures), (HostState::Live, 0));
    }

    #[test]
    fn a_missing_helper_waits_for_the_user() {
        let mut l = HostLink::default();
        assert_eq!(l.failed(&Failure::HelperMissing { uname: None }, Mono::from_millis(0)), None);
        assert_eq!(l.state, HostState::HelperMissing);
        assert!(!l.due(Mono::from_millis(u64::MAX)));
        l.retry_now(Mono::from_millis(7));
        assert!(l.due(Mono::from_millis(7)));
    }

    #[test]
    fn a_machine_is_added_once_and_removed_once() {
        let mut m = crate::settings::MachineSettings::default();
        let d = Destination::parse("devbox").unwrap();
        assert!(m.change(&d, true).is_ok());
        assert!(m.change(&d, true).unwrap_err().to_string().contains("already"));
        assert_eq!(m.hosts, ["devbox"]);
        assert!(m.change(&d, false).is_ok());
        assert!(m.change(&d, false).unwrap_err().to_string().contains("not in the list"));
        assert!(m.hosts.is_empty());
    }

    #[test]
    fn the_remote_scripts_quote_their_arguments() {
        let c = remote_mimesis(&["serve", "--stdio"]);
        assert!(c.starts_with("'sh' '-c' '"), "{c}");
        assert!(c.contains("serve"));
        let i = remote_install(&"ab".repeat(32));
        assert!(i.contains(&"ab".repeat(32)));
        assert_eq!(uname_of("linux", "x86_64"), "Linux x86_64");
        assert_eq!(uname_of("macos", "aarch64"), "Darwin arm64");
    }

    #[test]
    fn protocol_lines_round_trip_and_reject_bad_ids() {
        let hello = FromRemote::Hello {
            protocol: PROTOCOL,
            version: "0.1.0".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
        };
        let line = serde_json::to_vec(&hello).unwrap();
        assert_eq!(FromRemote::parse(&line).unwrap(), hello);
        assert!(FromRemote::parse(br#"{"type":"event","event":{"type":"removed","sessionId":"../../etc"}}"#).is_err());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(FromRemote::parse(deep.as_bytes()).is_err());
        let show = ToRemote::Show { req: 3, session_id: "abc".into() };
        assert_eq!(ToRemote::parse(&serde_json::to_vec(&show).unwrap()).unwrap(), show);
    }
}
