//! The CLI's remote machines (issue 13): `--host` on `ls`, `show` and `watch`, `mimesis
//! hosts`, and `mimesis serve --stdio`, the far side of every connection.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use mimesis_core::remote::{Destination, Failure, HostState};
use mimesis_core::{SystemClock, TrackedSession};
use mimesis_wiring::remote::{self, FeedMsg, HostFeed, HostInfo, Ssh};

#[derive(clap::Args, Clone, Default)]
pub struct RemoteArgs {
    /// Also the sessions of another machine, over your SSH (repeatable): an alias from
    /// ~/.ssh/config, user@host or ssh://user@host:port. Keys or the agent only.
    #[arg(long = "host", value_name = "DEST")]
    pub hosts: Vec<String>,
    /// Leave this machine's sessions out (with --host).
    #[arg(long = "no-local", requires = "hosts")]
    pub no_local: bool,
    /// Copy this build of Mimesis to a host that has none (same OS and architecture only;
    /// into your own data folder there, checksum verified).
    #[arg(long = "install-helper")]
    pub install_helper: bool,
}

impl RemoteArgs {
    pub fn dests(&self) -> anyhow::Result<Vec<Destination>> {
        let mut out: Vec<Destination> = Vec::new();
        for h in &self.hosts {
            let d = Destination::parse(h).map_err(anyhow::Error::msg)?;
            if !out.contains(&d) {
                out.push(d);
            }
        }
        Ok(out)
    }

    fn exe(&self) -> anyhow::Result<Option<PathBuf>> {
        if !self.install_helper {
            return Ok(None);
        }
        let exe = std::env::current_exe().context("cannot tell where this mimesis binary is")?;
        Ok(Some(exe))
    }
}

/// A host's failure on stderr, with what to do about a missing helper.
fn say_failure(dest: &Destination, f: &Failure) {
    let hint = if f.wants_helper() { " (run again with --install-helper to copy this Mimesis there)" } else { "" };
    crate::term::say(format_args!("mimesis: {dest}: {}{hint}", f.sentence()));
}

/// Asks every host of `args` at once (`ask` with ssh, the host, and this build's binary
/// when `--install-helper` allows copying it there); the answers in the hosts' order.
/// Failures are said on stderr; true when any host failed.
pub fn ask_each<T, F, Fut>(args: &RemoteArgs, ask: F) -> anyhow::Result<(Vec<(Destination, T)>, bool)>
where
    T: Send + 'static,
    F: Fn(Ssh, Destination, Option<PathBuf>) -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>> + Send + 'static,
{
    let dests = args.dests()?;
    if dests.is_empty() {
        return Ok((Vec::new(), false));
    }
    let exe = args.exe()?;
    let ssh = Ssh::from_env();
    let results = crate::runtime()?.block_on(async {
        let tasks: Vec<_> = dests.iter().map(|d| tokio::spawn(ask(ssh.clone(), d.clone(), exe.clone()))).collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(Failure::Unreachable(e.to_string()))));
        }
        out
    });
    let mut answers = Vec::new();
    let mut failed = false;
    for (d, r) in dests.into_iter().zip(results) {
        match r {
            Ok(a) => answers.push((d, a)),
            Err(f) => {
                say_failure(&d, &f);
                failed = true;
            }
        }
    }
    Ok((answers, failed))
}

/// The roster of every host, fetched at once. Failures are said on stderr; true when
/// any host failed.
pub fn rosters(args: &RemoteArgs) -> anyhow::Result<(Vec<TrackedSession>, bool)> {
    let (answers, failed) = ask_each(args, |ssh, d, exe| async move {
        remote::roster(&ssh, &d, exe.as_deref(), &SystemClock).await.map(|r| r.1)
    })?;
    Ok((answers.into_iter().flat_map(|(_, rows)| rows).collect(), failed))
}

/// `show host:id`: the timeline of a session on another machine.
pub fn timeline(args: &RemoteArgs, host: &str, id: &str) -> anyhow::Result<Vec<mimesis_core::timeline::TimelineItem>> {
    let dest = Destination::parse(host).map_err(anyhow::Error::msg)?;
    if mimesis_core::SessionId::parse(id).is_err() {
        bail!("{id:?} is not a session id (ids are made of letters, digits, '-' and '_')");
    }
    let exe = args.exe()?;
    let ssh = Ssh::from_env();
    crate::runtime()?.block_on(remote::timeline(&ssh, &dest, id, exe.as_deref(), &SystemClock)).map_err(|f| {
        let hint = if f.wants_helper() { " (run again with --install-helper)" } else { "" };
        anyhow::anyhow!("{dest}: {}{hint}", f.sentence())
    })
}

/// One line of `watch --json` for a remote event: the event, with `host` on updates and
/// removals (a discovered session carries it already).
pub fn event_json(ev: &mimesis_core::StoreEvent, host: &str) -> serde_json::Value {
    let mut v = serde_json::to_value(ev).unwrap_or_default();
    if let Some(o) = v.as_object_mut()
        && !o.contains_key("session")
    {
        o.insert("host".into(), host.into());
    }
    v
}

/// What every host's feed says, with the host's name.
pub type HostMessages = tokio::sync::mpsc::Receiver<(String, FeedMsg)>;

/// The feeds of `watch --host`, merged into one channel of (host, message).
pub fn start_feeds(args: &RemoteArgs) -> anyhow::Result<(Vec<HostFeed>, HostMessages)> {
    let exe = args.exe()?;
    let ssh = Ssh::from_env();
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    let mut feeds = Vec::new();
    for d in args.dests()? {
        let (feed, mut msgs) = HostFeed::start(ssh.clone(), d.clone(), Arc::new(SystemClock), exe.clone());
        let tx = tx.clone();
        let host = d.as_str().to_owned();
        tokio::spawn(async move {
            while let Some(m) = msgs.recv().await {
                if tx.send((host.clone(), m)).await.is_err() {
                    return;
                }
            }
        });
        feeds.push(feed);
    }
    Ok((feeds, rx))
}

pub fn host_line(i: &HostInfo) -> String {
    let state = match i.state {
        HostState::Connecting => "connecting",
        HostState::Live => "live",
        HostState::Stale => "stale",
        HostState::Unreachable => "unreachable",
        HostState::HelperMissing => "no Mimesis there",
    };
    let mut s = format!("{}  {state}", i.host);
    if matches!(i.state, HostState::Live | HostState::Stale) {
        s.push_str(&format!("  {} session{}", i.sessions, if i.sessions == 1 { "" } else { "s" }));
    }
    if let Some(v) = &i.version {
        s.push_str(&format!("  Mimesis {v}"));
    }
    if let Some(m) = &i.message {
        s.push_str(&format!(": {m}"));
    }
    s
}

#[derive(clap::Subcommand)]
pub enum HostsAction {
    /// Add a machine (an SSH destination) to the list the window connects to.
    Add { dest: String },
    /// Remove a machine from the list.
    Remove { dest: String },
}

/// `mimesis hosts [add|remove]`: the configured machines and their state now (each is
/// connected to once, all at the same time).
pub fn hosts_cmd(data_dir: &Path, action: Option<HostsAction>, json: bool, install: bool) -> anyhow::Result<()> {
    match action {
        Some(HostsAction::Add { dest }) | Some(HostsAction::Remove { dest }) if json => {
            let _ = dest;
            bail!("--json goes with `mimesis hosts` alone");
        }
        Some(HostsAction::Add { dest }) => {
            let d = Destination::parse(&dest).map_err(anyhow::Error::msg)?;
            remote::change_configured(data_dir, &d, true).map_err(anyhow::Error::msg)?;
            writeln!(crate::term::Term::stdout(), "Added {d}. `mimesis hosts` shows its state.")?;
            return Ok(());
        }
        Some(HostsAction::Remove { dest }) => {
            let d = Destination::parse(&dest).map_err(anyhow::Error::msg)?;
            remote::change_configured(data_dir, &d, false).map_err(anyhow::Error::msg)?;
            writeln!(crate::term::Term::stdout(), "Removed {d}.")?;
            return Ok(());
        }
        None => {}
    }
    let dests = remote::configured(data_dir);
    let args = RemoteArgs {
        hosts: dests.iter().map(|d| d.as_str().to_owned()).collect(),
        no_local: true,
        install_helper: install,
    };
    let infos = probe(&args)?;
    let mut out = crate::term::Term::stdout();
    if json {
        crate::term::json_line(&mut out, &infos)?;
    } else if infos.is_empty() {
        writeln!(out, "No machines yet. Add one with `mimesis hosts add <ssh destination>`.")?;
    } else {
        for i in &infos {
            writeln!(out, "{}", crate::render::sanitize(&host_line(i), false))?;
        }
    }
    Ok(out.flush()?)
}

/// Each host's state now, from one connection each.
fn probe(args: &RemoteArgs) -> anyhow::Result<Vec<HostInfo>> {
    let dests = args.dests()?;
    let exe = args.exe()?;
    let ssh = Ssh::from_env();
    crate::runtime()?.block_on(async move {
        let tasks: Vec<_> = dests
            .into_iter()
            .map(|d| {
                let (ssh, exe) = (ssh.clone(), exe.clone());
                tokio::spawn(async move {
                    let mut info = HostInfo {
                        host: d.as_str().to_owned(),
                        state: HostState::Live,
                        message: None,
                        last_seen: None,
                        sessions: 0,
                        version: None,
                        retry_in_secs: None,
                    };
                    match remote::roster(&ssh, &d, exe.as_deref(), &SystemClock).await {
                        Ok((hello, sessions)) => {
                            info.version = Some(mimesis_core::text::clean_text(&hello.version, 40));
                            info.sessions = sessions.len();
                            info.last_seen = Some(mimesis_core::Clock::now(&SystemClock));
                        }
                        Err(f) => {
                            info.state =
                                if f.wants_helper() { HostState::HelperMissing } else { HostState::Unreachable };
                            info.message = Some(f.sentence());
                        }
                    }
                    info
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.context("a host's check stopped")?);
        }
        Ok(out)
    })
}

/// `mimesis serve --stdio`.
pub fn serve(roots: Vec<PathBuf>, data_dir: PathBuf) -> anyhow::Result<()> {
    crate::runtime()?.block_on(async move {
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        remote::serve(roots, data_dir, input, tokio::io::stdout()).await.context("serving over stdio")
    })
}
