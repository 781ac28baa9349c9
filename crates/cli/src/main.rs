//! `mimesis`: the roster, timelines and live events of every Claude Code session on this
//! machine, in a terminal (also over SSH, with no display). A thin face on the engine;
//! the JSON it prints is a contract (docs/ipc.md).

mod render;
mod run;

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use mimesis_engine::{
    Clock, Engine, EngineConfig, SessionId, SystemClock, Timeouts, TrackedSession, engine::roster_once, roots, scan,
    timeline,
};

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
    },
    /// The timeline of one session: prompts, replies, tool calls and their results.
    Show {
        /// The session id, or an unambiguous prefix of it.
        session_id: String,
        /// Print one JSON array of timeline items.
        #[arg(long)]
        json: bool,
    },
    /// Stay running and print every change to the roster as it happens.
    Watch {
        /// One JSON event per line: discovered, updated (changed fields only), removed.
        #[arg(long)]
        json: bool,
    },
    /// Run Claude Code supervised in this terminal: crashes are recovered; memory, duration
    /// and idleness are kept in check. Durations read like 500ms, 90s, 10m, 4h.
    Run(Box<run::RunArgs>),
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Usage errors exit with 2; --help and --version print and exit 0.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    init_logging();
    let roots = roots::from_env(&cli.config_dir);
    let command = cli.command.unwrap_or(Command::Ls { json: false, all: false });
    if let Command::Run(args) = command {
        return match run::run(*args, &cli.config_dir) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("mimesis run: {e:#}");
                ExitCode::from(1)
            }
        };
    }
    let result = match command {
        Command::Ls { json, all } => ls(&roots, json, all),
        Command::Show { session_id, json } => show(&roots, &session_id, json),
        Command::Watch { json } => runtime().and_then(|rt| rt.block_on(watch(roots, json))),
        Command::Demo { dir, speed } => runtime().and_then(|rt| rt.block_on(demo(dir, speed))),
        Command::Run(_) => unreachable!("handled above"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mimesis: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MIMESIS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(io::stderr).with_target(false).init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

fn ls(roots: &[PathBuf], json: bool, all: bool) -> anyhow::Result<()> {
    let now = SystemClock.now();
    let mut sessions = roster_once(roots, Timeouts::default(), now);
    if !all {
        sessions.retain(|s| !s.superseded);
    }
    let out = io::stdout();
    let mut out = io::BufWriter::new(out.lock());
    if json {
        serde_json::to_writer(&mut out, &sessions)?;
        writeln!(out)?;
    } else if sessions.is_empty() {
        let searched: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        writeln!(out, "No Claude Code sessions found in {}.", searched.join(", "))?;
        writeln!(out, "Try `mimesis demo` to generate some, or point --config-dir at a config folder.")?;
    } else {
        let style = render::Style::detect(io::stdout().is_terminal());
        render::roster(&mut out, &sessions, now, &style)?;
    }
    out.flush()?;
    Ok(())
}

/// Finds a session by id or unique id prefix, without indexing anything.
fn find_session(roots: &[PathBuf], query: &str) -> anyhow::Result<PathBuf> {
    if query.is_empty() || SessionId::parse(query).is_err() {
        bail!("{query:?} is not a session id (ids are made of letters, digits, '-' and '_'); `mimesis ls` lists them");
    }
    let matches: Vec<_> =
        roots.iter().flat_map(|r| scan::discover(r)).filter(|l| l.session_id.as_str().starts_with(query)).collect();
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

fn show(roots: &[PathBuf], query: &str, json: bool) -> anyhow::Result<()> {
    let path = find_session(roots, query)?;
    let items = timeline::read_timeline(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let out = io::stdout();
    let mut out = io::BufWriter::new(out.lock());
    if json {
        serde_json::to_writer(&mut out, &items)?;
        writeln!(out)?;
    } else {
        let style = render::Style::detect(io::stdout().is_terminal());
        render::timeline(&mut out, &items, &style)?;
    }
    out.flush()?;
    Ok(())
}

async fn watch(roots: Vec<PathBuf>, json: bool) -> anyhow::Result<()> {
    let engine = Engine::start(EngineConfig { roots, ..Default::default() });
    let mut events = engine.subscribe();
    engine.ready().await;
    let snapshot = engine.snapshot().await?;
    let style = render::Style::detect(io::stdout().is_terminal());
    let stdout = io::stdout();
    let emit_discovered = |s: &TrackedSession, out: &mut dyn Write| -> io::Result<()> {
        if json {
            serde_json::to_writer(&mut *out, &serde_json::json!({"type": "discovered", "session": s}))?;
            writeln!(out)
        } else {
            render::event_discovered(out, s, &style)
        }
    };
    {
        let mut out = stdout.lock();
        for s in &snapshot.sessions {
            emit_discovered(s, &mut out)?;
        }
        out.flush()?;
    }
    let mut last_seq = snapshot.seq;
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = sigterm.recv() => break,
            ev = events.recv() => match ev {
                Ok(env) => {
                    if env.seq <= last_seq {
                        continue;
                    }
                    last_seq = env.seq;
                    let mut out = stdout.lock();
                    if json {
                        serde_json::to_writer(&mut out, &env.event)?;
                        writeln!(out)?;
                    } else {
                        render::event(&mut out, &env.event, &style)?;
                    }
                    out.flush()?;
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    // Fell behind: re-announce the whole roster (consumers treat
                    // `discovered` as "here is the full session").
                    tracing::warn!(missed = n, "fell behind the event stream; re-sending the roster");
                    let snap = engine.snapshot().await?;
                    last_seq = snap.seq;
                    let mut out = stdout.lock();
                    for s in &snap.sessions {
                        emit_discovered(s, &mut out)?;
                    }
                    out.flush()?;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    }
    engine.shutdown().await;
    Ok(())
}

async fn demo(dir: Option<PathBuf>, speed: f64) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(|| roots::data_dir().join("demo"));
    let _demo = mimesis_engine::demo::start(&dir, speed)
        .with_context(|| format!("cannot write demo sessions into {}", dir.display()))?;
    eprintln!(
        "Writing generated live sessions into {d}. In another terminal: mimesis --config-dir {d} watch\nCtrl-C stops.",
        d = dir.display()
    );
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm.recv() => {}
    }
    Ok(())
}
