//! `mimesis`: the roster, timelines and live events of every Claude Code session on this
//! machine, in a terminal (also over SSH, with no display). A thin face on the engine;
//! the JSON it prints is a contract (docs/ipc.md).

mod control;
mod cost_cmd;
mod remote_cmd;
mod render;
// Its terminal is the agent's, passed through as it is (crate::term's one exception).
mod run;
mod run_log;
mod run_status;
mod search_cmd;
mod term;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use mimesis_core::approval::{Behavior, Decided, ToFace, Via};
use mimesis_core::{Clock, SessionId, SystemClock, TrackedSession};
use mimesis_os::roots;
use mimesis_wiring::hooks::{self, install};
use mimesis_wiring::{Mimesis, Options, doctor, once};
use term::Term;

#[derive(Parser)]
#[command(
    name = "mimesis",
    version,
    about = "Every Claude Code session on this machine: its status, its goal, what it did.",
    after_help = "Sessions are read from $CLAUDE_CONFIG_DIR (a comma-separated list is allowed), else ~/.claude \
                  (plus ~/.config/claude when it exists). --config-dir overrides both.\n\
                  With no command, `mimesis` runs `mimesis ls`."
)]
struct Cli {
    /// A Claude Code config folder to read (repeatable). Overrides $CLAUDE_CONFIG_DIR and ~/.claude.
    #[arg(long = "config-dir", value_name = "DIR", global = true)]
    config_dir: Vec<PathBuf>,
    /// Mimesis's data folder (fleet database, recorded hook events). Overrides $MIMESIS_DATA_DIR.
    #[arg(long = "data-dir", value_name = "DIR", global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The roster: every session, grouped by project, most recently active first.
    Ls {
        /// Print one JSON array of sessions.
        #[arg(long)]
        json: bool,
        /// Include sessions superseded by a successor in their work chain.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        remote: remote_cmd::RemoteArgs,
    },
    /// The timeline of one session: prompts, replies, tool calls and their results.
    Show {
        /// The session id, or an unambiguous prefix of it; `host:id` for a session on
        /// another machine.
        session_id: String,
        /// Print one JSON array of timeline items.
        #[arg(long)]
        json: bool,
        /// Copy this build of Mimesis to the host first if it has none.
        #[arg(long = "install-helper")]
        install_helper: bool,
    },
    /// Search every session's history: prompts, replies, tool calls and their results,
    /// thinking; most recent first.
    Search(Box<search_cmd::SearchArgs>),
    /// Stay running and print every change to the roster as it happens.
    Watch {
        /// One JSON event per line: discovered, updated (changed fields only), removed.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        remote: remote_cmd::RemoteArgs,
    },
    /// What Claude Code cost: tokens and estimated dollars by day, week, month, session,
    /// project or model, each API request counted once and priced by itself (LiteLLM's
    /// price table). Reads the transcripts only: no database, no running Mimesis.
    Cost(Box<cost_cmd::CostArgs>),
    /// Other machines whose sessions the window shows: their state now, or add/remove one.
    Hosts {
        #[command(subcommand)]
        action: Option<remote_cmd::HostsAction>,
        /// Print a JSON array of hosts.
        #[arg(long)]
        json: bool,
        /// Copy this build of Mimesis to hosts that have none.
        #[arg(long = "install-helper")]
        install_helper: bool,
    },
    /// Serve this machine's roster and timelines to another Mimesis over stdin and stdout
    /// (what `--host` runs on the far side of ssh). Stops when stdin closes.
    Serve {
        /// Speak the protocol on stdin/stdout (the only transport).
        #[arg(long, required = true)]
        stdio: bool,
    },
    /// Run by Claude Code's hooks: records the event read on stdin. Prints nothing, always exits 0
    /// (at a permission dialog: the decision made in a running Mimesis, if one is made).
    Hook,
    /// Bring the terminal of a session forward (its tmux pane, kitty window or WezTerm pane).
    Focus {
        /// The session id, or an unambiguous prefix of it.
        session_id: String,
    },
    /// The permission requests waiting for an answer in the running Mimesis.
    Pending {
        /// Print {"pending": [...]} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Allow one waiting tool call, once: by request id, or session id (prefix).
    Approve {
        /// A request id from `mimesis pending` (req_…) or a prefix of one, or a session id or
        /// prefix of one whose session has a single open request; an ambiguous one is refused.
        target: String,
        /// An answer to the request's question (AskUserQuestion): an option's label or
        /// your own words; once per question, in their order.
        #[arg(long = "answer", value_name = "TEXT")]
        answers: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Refuse one waiting tool call, optionally telling Claude why.
    Deny {
        /// A request id from `mimesis pending` (req_…) or a prefix of one, or a session id or
        /// prefix of one whose session has a single open request; an ambiguous one is refused.
        target: String,
        /// What Claude is told (it goes on with this).
        #[arg(long)]
        message: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Install, remove or check Mimesis's hooks in Claude Code's settings.json.
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// Check the installation: config folders, hooks, Claude Code, file watching, database.
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run Claude Code supervised in this terminal: crashes are recovered; memory, duration
    /// and idleness are kept in check. Durations read like 500ms, 90s, 10m, 4h.
    Run(Box<run::RunArgs>),
    /// Start a session in Claude Code's background service (`claude --bg`); prints its
    /// session id.
    Bg(control::BgArgs),
    /// Open a background session in this terminal (`claude attach`; Ctrl+Z detaches and
    /// leaves it running).
    Attach {
        /// A session id or unique prefix, a background session's short id, or `host:id`.
        session_id: String,
    },
    /// A background session's recent screen, as plain text.
    Logs {
        /// A session id or unique prefix, a background session's short id, or `host:id`.
        session_id: String,
    },
    /// Stop a background session (`claude stop`; it can be respawned).
    Stop {
        /// A session id or unique prefix, a background session's short id, or `host:id`.
        session_id: String,
    },
    /// Restart a background session from its transcript (`claude respawn`).
    Respawn {
        /// A session id or unique prefix, a background session's short id, or `host:id`.
        session_id: String,
    },
    /// Remove a background session from the service (`claude rm`; the transcript stays).
    Rm {
        /// A session id or unique prefix, a background session's short id, or `host:id`.
        session_id: String,
    },
    /// Metrics of every running supervisor (the app, each `mimesis run`), as Prometheus text.
    Metrics {
        /// Print the summed metrics as one JSON object instead.
        #[arg(long)]
        json: bool,
    },
    /// Write generated live sessions into a folder, to try Mimesis without Claude Code.
    Demo {
        /// Where to write (a config root). Default: <data dir>/demo.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Make everything happen this many times faster.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
}

#[derive(Subcommand)]
enum HooksAction {
    /// Add the hooks to settings.json of every config folder (keeps everything else; idempotent).
    Install {
        #[arg(long)]
        json: bool,
    },
    /// Remove exactly the hooks Mimesis added.
    Uninstall {
        #[arg(long)]
        json: bool,
    },
    /// Show whether the hooks are installed.
    Status {
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // The hook runs inside Claude Code several times per turn: no argument parser, no
    // logging set-up, no runtime. Anything that goes wrong is logged to a file.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "hook") {
        hooks::run_hook(&args[2..]);
        return ExitCode::SUCCESS;
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Usage errors exit with 2; --help and --version print and exit 0.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let roots = roots::from_env(&cli.config_dir);
    let data_dir = cli.data_dir.as_deref().map(roots::absolute).unwrap_or_else(roots::data_dir);
    init_logging(matches!(cli.command, Some(Command::Run(_))).then_some(data_dir.as_path()));
    let command = cli.command.unwrap_or(Command::Ls { json: false, all: false, remote: Default::default() });
    if let Command::Run(args) = command {
        return match run::run(*args, &cli.config_dir, &data_dir) {
            Ok(code) => code,
            Err(e) => {
                term::say(format_args!("mimesis run: {e:#}"));
                ExitCode::from(1)
            }
        };
    }
    let action = match &command {
        Command::Attach { session_id } => Some((control::Action::Attach, session_id.clone())),
        Command::Logs { session_id } => Some((control::Action::Logs, session_id.clone())),
        Command::Stop { session_id } => {
            Some((control::Action::Act(mimesis_wiring::background::Verb::Stop), session_id.clone()))
        }
        Command::Respawn { session_id } => {
            Some((control::Action::Act(mimesis_wiring::background::Verb::Respawn), session_id.clone()))
        }
        Command::Rm { session_id } => {
            Some((control::Action::Act(mimesis_wiring::background::Verb::Remove), session_id.clone()))
        }
        _ => None,
    };
    if let Some((action, id)) = action {
        return match control::act(&roots, &data_dir, action, &id) {
            Ok(code) => code,
            Err(e) => {
                term::say(format_args!("mimesis: {e:#}"));
                ExitCode::from(1)
            }
        };
    }
    let result = match command {
        Command::Bg(args) => control::dispatch(&roots, &data_dir, args),
        Command::Ls { json, all, remote } => ls(&roots, &data_dir, json, all, &remote),
        Command::Show { session_id, json, install_helper } => {
            show(&roots, &data_dir, &session_id, json, install_helper)
        }
        Command::Search(args) => search_cmd::search(&roots, &data_dir, *args),
        Command::Watch { json, remote } => runtime().and_then(|rt| rt.block_on(watch(roots, data_dir, json, remote))),
        Command::Hosts { action, json, install_helper } => {
            remote_cmd::hosts_cmd(&data_dir, action, json, install_helper)
        }
        Command::Cost(args) => cost_cmd::run(&roots, &data_dir, *args),
        Command::Serve { stdio: _ } => remote_cmd::serve(roots, data_dir),
        Command::Hook => {
            hooks::record_from_stdin(&data_dir);
            Ok(())
        }
        Command::Hooks { action } => hooks_cmd(&roots, &data_dir, action),
        Command::Pending { json } => pending_cmd(&data_dir, json),
        Command::Focus { session_id } => focus_cmd(&roots, &data_dir, &session_id),
        Command::Approve { target, answers, json } => {
            decide_cmd(&data_dir, target, Behavior::Allow, None, (!answers.is_empty()).then_some(answers), json)
        }
        Command::Deny { target, message, json } => decide_cmd(&data_dir, target, Behavior::Deny, message, None, json),
        Command::Doctor { json } => doctor_cmd(&roots, &data_dir, json),
        Command::Metrics { json } => metrics_cmd(&data_dir, json),
        Command::Demo { dir, speed } => runtime().and_then(|rt| rt.block_on(demo(dir, speed))),
        Command::Run(_)
        | Command::Attach { .. }
        | Command::Logs { .. }
        | Command::Stop { .. }
        | Command::Respawn { .. }
        | Command::Rm { .. } => unreachable!("handled above"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            term::say(format_args!("mimesis: {e:#}"));
            ExitCode::from(1)
        }
    }
}

/// Logs go to stderr, but `mimesis run`'s (`run_log`: its terminal is the agent's) to a
/// file in the data dir, `info` and up unless `MIMESIS_LOG` says otherwise.
fn init_logging(run_in: Option<&std::path::Path>) {
    let default = if run_in.is_some() { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MIMESIS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Plain text through the terminal filter: a log line may quote a remote's words.
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_target(false);
    match run_in.map(run_log::RunLog::open) {
        Some(Ok(file)) => logs.with_writer(file).init(),
        // Nowhere to write it: never onto the agent's screen either.
        Some(Err(_)) => logs.with_writer(io::sink).init(),
        None => logs.with_writer(Term::stderr).init(),
    }
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// A row of `ls --json`: the roster row, and its `interrupted` mark when it has one.
#[derive(serde::Serialize)]
struct LsRow<'a> {
    #[serde(flatten)]
    row: &'a TrackedSession,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<&'a mimesis_core::supervision::interrupted::Interrupted>,
}

fn ls(
    roots: &[PathBuf],
    data_dir: &std::path::Path,
    json: bool,
    all: bool,
    remote: &remote_cmd::RemoteArgs,
) -> anyhow::Result<()> {
    let now = SystemClock.now();
    // Other machines first (they take longest), at the same time; their failures are
    // said on stderr and make the exit status 1, after everything else is printed.
    let (mut remote_rows, remote_failed) = remote_cmd::rosters(remote)?;
    remote_rows.retain(|s| all || !s.superseded);
    let local = !remote.no_local;
    let mut out = Term::stdout();
    if json {
        // Written row by row as each is derived: a roster of tens of thousands of sessions
        // is never all in memory.
        let mut written = Ok(0usize);
        out.write_all(b"[")?;
        // A session a quit or a crash of Mimesis interrupted, not supervised again since,
        // carries `interrupted` (docs/ipc.md).
        let interrupted = if local { once::interrupted(data_dir) } else { Vec::new() };
        let mut write_row = |row: &TrackedSession| {
            if let Ok(n) = &mut written {
                let sep: &[u8] = if *n == 0 { b"" } else { b"," };
                let mark = row
                    .supervision
                    .is_none()
                    .then(|| interrupted.iter().find(|i| i.session_id == row.session_id))
                    .flatten();
                let row = LsRow { row, interrupted: mark };
                written = out.write_all(sep).and_then(|_| term::json(&mut out, &row)).map(|_| *n + 1);
            }
        };
        if local {
            once::roster_each(roots, data_dir, now, |row| {
                if all || !row.superseded {
                    write_row(&row);
                }
            });
        }
        remote_rows.iter().for_each(&mut write_row);
        written?;
        out.write_all(b"]\n")?;
        out.flush()?;
        return remote_outcome(remote_failed);
    }
    let mut sessions = if local { once::roster(roots, data_dir, now) } else { Vec::new() };
    if !all {
        sessions.retain(|s| !s.superseded);
    }
    if !remote_rows.is_empty() {
        sessions.extend(remote_rows);
        sessions.sort_by_key(|s| std::cmp::Reverse(s.last_activity_at));
    }
    if sessions.is_empty() && !local {
        writeln!(out, "No Claude Code sessions found on {}.", remote.hosts.join(", "))?;
    } else if sessions.is_empty() {
        let searched: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        writeln!(out, "No Claude Code sessions found in {}.", searched.join(", "))?;
        writeln!(out, "Try `mimesis demo` to generate some, or point --config-dir at a config folder.")?;
    } else {
        render::roster(&mut out, &sessions, now)?;
    }
    out.flush()?;
    remote_outcome(remote_failed)
}

/// Exit 1 when a host failed (its error is on stderr already); what the others had is printed.
fn remote_outcome(failed: bool) -> anyhow::Result<()> {
    if failed {
        bail!("some machines could not be read (see above)");
    }
    Ok(())
}

/// Finds a session by id or unique id prefix, without indexing anything.
fn find_session(roots: &[PathBuf], query: &str) -> anyhow::Result<PathBuf> {
    if query.is_empty() || SessionId::parse(query).is_err() {
        bail!("{query:?} is not a session id (ids are made of letters, digits, '-' and '_'); `mimesis ls` lists them");
    }
    let matches: Vec<_> =
        roots.iter().flat_map(|r| once::discover(r)).filter(|l| l.session_id.as_str().starts_with(query)).collect();
    if let Some(exact) = matches.iter().find(|l| l.session_id.as_str() == query) {
        return Ok(exact.path.clone());
    }
    match matches.as_slice() {
        [] => {
            let searched: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            bail!("no session with id {query} in {}; `mimesis ls` lists the sessions", searched.join(", "))
        }
        [one] => Ok(one.path.clone()),
        many => {
            let ids: Vec<&str> = many.iter().take(5).map(|l| l.session_id.as_str()).collect();
            bail!("{query} matches {} sessions ({}…); give more of the id", many.len(), ids.join(", "))
        }
    }
}

fn show(roots: &[PathBuf], data_dir: &std::path::Path, query: &str, json: bool, install: bool) -> anyhow::Result<()> {
    let items = match mimesis_core::remote::split_host_id(query) {
        (Some(host), id) => {
            let args = remote_cmd::RemoteArgs { install_helper: install, ..Default::default() };
            remote_cmd::timeline(&args, host, id)?
        }
        (None, _) => {
            let path = find_session(roots, query)?;
            // A session that continues others shows the whole chain, oldest first.
            let mut items = once::chain_prefix(roots, data_dir, &path, SystemClock.now())
                .context("cannot read an earlier segment of the chain")?;
            items.extend(
                once::read_timeline(&path, Some(data_dir))
                    .with_context(|| format!("cannot read {}", path.display()))?,
            );
            items
        }
    };
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &items)?;
    } else {
        render::timeline(&mut out, &items)?;
    }
    out.flush()?;
    Ok(())
}

async fn watch(
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    json: bool,
    remote: remote_cmd::RemoteArgs,
) -> anyhow::Result<()> {
    // Before the first line is printed: whoever reads the snapshot may send SIGTERM at once.
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    // Other machines connect while this one indexes; their lines come as they arrive.
    let (_feeds, mut from_hosts) = remote_cmd::start_feeds(&remote)?;
    let mut hosts_open = !remote.hosts.is_empty();
    let mimesis = match remote.no_local {
        true => None,
        false => Some(Mimesis::start(Options::watching(roots.clone(), data_dir.clone())).await),
    };
    // The sessions `mimesis run`s supervise here: their rows carry their `supervision`.
    let _follower = mimesis.as_ref().map(|m| {
        let follow = mimesis_wiring::supervisors::follow(roots, data_dir, m.engine().clone(), None);
        AbortOnDrop(tokio::spawn(follow))
    });
    let mut out = Term::stdout();
    let emit_discovered = |s: &TrackedSession, out: &mut Term<_>| -> io::Result<()> {
        if json {
            term::json_line(out, &serde_json::json!({"type": "discovered", "session": s}))
        } else {
            render::event_discovered(out, s)
        }
    };
    let mut events = None;
    let mut last_seq = 0;
    if let Some(m) = &mimesis {
        let engine = m.engine();
        let rx = engine.subscribe();
        engine.ready().await;
        let snapshot = engine.snapshot().await?;
        for s in &snapshot.sessions {
            emit_discovered(s, &mut out)?;
        }
        out.flush()?;
        last_seq = snapshot.seq;
        // (Events queued while the snapshot was taken are skipped by their seq.)
        events = Some(rx);
    }
    loop {
        let local_event = async {
            match &mut events {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        let host_msg = async { if hosts_open { from_hosts.recv().await } else { std::future::pending().await } };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = sigterm.recv() => break,
            msg = host_msg => {
                let Some((host, msg)) = msg else { hosts_open = false; continue };
                match msg {
                    mimesis_wiring::remote::FeedMsg::Event(ev) if json => {
                        term::json_line(&mut out, &remote_cmd::event_json(&ev, &host))?;
                    }
                    mimesis_wiring::remote::FeedMsg::Event(ev) => {
                        write!(out, "{} ", render::sanitize(&host, false))?;
                        render::event(&mut out, &ev)?;
                    }
                    mimesis_wiring::remote::FeedMsg::State(info) if json => {
                        let mut v = serde_json::to_value(&info)?;
                        if let Some(o) = v.as_object_mut() {
                            o.insert("type".into(), "host".into());
                        }
                        term::json_line(&mut out, &v)?;
                    }
                    mimesis_wiring::remote::FeedMsg::State(info) => {
                        writeln!(out, "{}", render::sanitize(&remote_cmd::host_line(&info), false))?;
                    }
                    mimesis_wiring::remote::FeedMsg::Supervision(ev) if json => {
                        let line = serde_json::json!({"type": "supervision", "host": host.as_str(), "event": ev});
                        term::json_line(&mut out, &line)?;
                    }
                    mimesis_wiring::remote::FeedMsg::Supervision(ev) => {
                        let what = format!("{host} {} {}: {}", ev.session_id.short(), ev.type_name(), ev.message().unwrap_or(""));
                        writeln!(out, "{}", render::sanitize(&what, false))?;
                    }
                }
                out.flush()?;
            }
            ev = local_event => match ev {
                Ok(env) => {
                    if env.seq <= last_seq {
                        continue;
                    }
                    last_seq = env.seq;
                    if json {
                        term::json_line(&mut out, &env.event)?;
                    } else {
                        render::event(&mut out, &env.event)?;
                    }
                    out.flush()?;
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    // Fell behind: re-announce the whole roster (consumers treat
                    // `discovered` as "here is the full session").
                    tracing::warn!(missed = n, "fell behind the event stream; re-sending the roster");
                    let Some(m) = &mimesis else { continue };
                    let snap = m.engine().snapshot().await?;
                    last_seq = snap.seq;
                    for s in &snap.sessions {
                        emit_discovered(s, &mut out)?;
                    }
                    out.flush()?;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    }
    if let Some(m) = mimesis {
        m.shutdown().await;
    }
    Ok(())
}

fn focus_cmd(roots: &[PathBuf], data_dir: &std::path::Path, query: &str) -> anyhow::Result<()> {
    let path = find_session(roots, query)?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| SessionId::parse(s).ok())
        .context("the session's transcript has no session id for a name")?;
    match once::focus_terminal(roots, data_dir, &id) {
        Ok(done) => {
            let mut out = Term::stdout();
            writeln!(out, "{done}")?;
            Ok(out.flush()?)
        }
        Err(why) => bail!("cannot open the terminal of session {id}: {why}"),
    }
}

/// How long the CLI waits for the running Mimesis.
const FACE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long `approve` / `deny` wait for the answer to be taken.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

fn pending_cmd(data_dir: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let list = mimesis_wiring::hooks::approvals::list(data_dir, FACE_WAIT)?;
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &list)?;
    } else if list.pending.is_empty() {
        writeln!(out, "No permission request is waiting.")?;
    } else {
        let now = SystemClock.now();
        for p in &list.pending {
            let r = &p.request;
            let target = r.target.as_deref().map(|t| format!(" {}", render::sanitize(t, false))).unwrap_or_default();
            let age = render::ago(now, p.since);
            let session = match (p.known_session, &p.session_name) {
                (true, Some(name)) => format!("session {} ({})", r.session_id, render::sanitize(name, false)),
                (true, None) => format!("session {}", r.session_id),
                (false, _) => format!("unknown session {} (in no roster Mimesis follows)", r.session_id),
            };
            writeln!(out, "{}  {session}  {}{}  ({age})", p.id, render::sanitize(&r.tool, false), target)?;
            if let Some(line) = dialog_line(p) {
                writeln!(out, "    {}", render::sanitize(&line, false))?;
            }
        }
        writeln!(out, "Answer with `mimesis approve <id>` or `mimesis deny <id> [--message TEXT]`.")?;
    }
    Ok(out.flush()?)
}

/// What a dialog's request is and what approving it does (a hook's request says it in
/// its first line).
fn dialog_line(p: &mimesis_core::approval::Pending) -> Option<String> {
    let kind = p.dialog?;
    let short = p.request.session_id.short();
    Some(match (&p.answer_in, &p.approve, &p.deny) {
        (Some(why), ..) => {
            format!("{} on its screen: {why}; `mimesis focus {short}` brings its terminal forward", kind.words())
        }
        (None, Some(yes), Some(no)) => format!(
            "{} on its screen, answered {}: approve = {}: {} deny = {}: {}",
            kind.words(),
            p.channel.words(),
            yes.label,
            yes.means,
            no.label,
            no.means
        ),
        _ => format!("{} on its screen, answered {}", kind.words(), p.channel.words()),
    })
}

fn decide_cmd(
    data_dir: &std::path::Path,
    target: String,
    behavior: Behavior,
    message: Option<String>,
    answers_in_order: Option<Vec<String>>,
    json: bool,
) -> anyhow::Result<()> {
    let msg = ToFace::Decide { target, behavior, message, answers: None, answers_in_order, via: Via::Cli };
    // A dialog's answer is typed into its screen and checked gone: that takes seconds.
    let decided: Decided = mimesis_wiring::hooks::approvals::call(data_dir, &msg, ANSWER_WAIT)?;
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &decided)?;
    }
    match (decided.answered, decided.error) {
        (Some(p), _) => {
            if !json {
                writeln!(
                    out,
                    "{}.",
                    render::sanitize(&p.answered_sentence(behavior, decided.choice.as_deref()), false)
                )?;
            }
            Ok(out.flush()?)
        }
        (None, e) => bail!("{}", e.unwrap_or_else(|| "the running Mimesis answered nothing".into())),
    }
}

fn hooks_cmd(roots: &[PathBuf], data_dir: &std::path::Path, action: HooksAction) -> anyhow::Result<()> {
    let now = SystemClock.now();
    let (json, result) = match action {
        HooksAction::Install { json } => {
            let exe = std::env::current_exe().context("cannot tell where this mimesis binary is")?;
            let exe = exe.canonicalize().unwrap_or(exe);
            let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_owned());
            (json, install::install_all(roots, &install::hook_command(&exe, &data_dir), now))
        }
        HooksAction::Uninstall { json } => (json, install::uninstall_all(roots, now)),
        HooksAction::Status { json } => (json, Ok(roots.iter().map(|r| install::status(r)).collect())),
    };
    // All or nothing: on an error no root was changed; show where things stand.
    let failed = result.as_ref().err().map(ToString::to_string);
    let statuses = result.unwrap_or_else(|_| roots.iter().map(|r| install::status(r)).collect());
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &statuses)?;
    } else {
        for s in &statuses {
            let state = match (&s.error, s.installed, s.partial) {
                (Some(e), _, _) => format!("error: {e}"),
                (None, true, _) => "installed".to_owned(),
                (None, false, true) => "partly installed".to_owned(),
                (None, false, false) => "not installed".to_owned(),
            };
            writeln!(out, "{}: {state}", s.settings_path.display())?;
        }
    }
    out.flush()?;
    if let Some(e) = failed {
        bail!("{e}");
    }
    Ok(())
}

fn doctor_cmd(roots: &[PathBuf], data_dir: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let report = doctor::run(roots, data_dir, None);
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &report)?;
        return Ok(out.flush()?);
    }
    for line in report.lines() {
        writeln!(out, "{line}")?;
    }
    let problems = report.problems();
    if problems.is_empty() {
        writeln!(out, "no problems found")?;
    } else {
        for p in problems {
            writeln!(out, "problem: {p}")?;
        }
    }
    Ok(out.flush()?)
}

/// `mimesis metrics`: the sum of what every running supervisor published; snapshots of
/// supervisors that are gone are removed, never shown.
fn metrics_cmd(data_dir: &std::path::Path, json: bool) -> anyhow::Result<()> {
    use mimesis_wiring::metrics;
    let found = metrics::collect(&metrics::dir(data_dir), true);
    let mut out = Term::stdout();
    if json {
        term::json_line(&mut out, &found.metrics)?;
    } else {
        out.write_all(found.metrics.prometheus().as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

async fn demo(dir: Option<PathBuf>, speed: f64) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(|| roots::data_dir().join("demo"));
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let _demo = mimesis_wiring::demo::start(&dir, speed)
        .with_context(|| format!("cannot write demo sessions into {}", dir.display()))?;
    term::say(format_args!(
        "Writing generated live sessions into {d}. In another terminal: mimesis --config-dir {d} watch\nCtrl-C stops.",
        d = dir.display()
    ));
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm.recv() => {}
    }
    Ok(())
}
