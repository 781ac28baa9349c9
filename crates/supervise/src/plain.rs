//! A terminal Mimesis shows but does not supervise: a program in a pseudo-terminal, its
//! output kept (a scrollback) and streamed to whoever attaches, its input and size from the
//! window. The window's terminal of a session on another machine is one (`ssh -t host
//! mimesis run …`: supervised over there, by that machine's Mimesis). No limits, no
//! recovery, no restart: when the program ends the terminal says so and stays readable.
//!
//! The process is started like a supervised agent (its own session and process group,
//! reaped by its own waiter, never by the supervisor's orphan scan) and is ended when the
//! terminal is closed or dropped: SIGTERM to its group, SIGKILL after a grace.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mimesis_core::supervision::policy::Sig;
use tokio::sync::{broadcast, watch};

use crate::actor::Attachment;
use crate::process::{AgentProcess, OsTerminals, StartError, StartSpec, Started, TerminalError, Terminals};

/// How long the exit waits for the program's last output to be read.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// Between SIGTERM and SIGKILL when a terminal is closed.
const GRACE: Duration = Duration::from_secs(3);

/// What to run and where.
#[derive(Clone, Debug)]
pub struct PlainSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Variables set for it (on top of the user's environment).
    pub env: Vec<(String, String)>,
    pub cols: u16,
    pub rows: u16,
    /// Output kept for a client that attaches later.
    pub scrollback: usize,
}

struct Screen {
    scrollback: VecDeque<u8>,
    cols: u16,
    rows: u16,
}

struct Inner {
    process: Arc<dyn AgentProcess>,
    input: std::sync::mpsc::Sender<Vec<u8>>,
    screen: Mutex<Screen>,
    cap: usize,
    output: broadcast::Sender<Arc<[u8]>>,
    exit: watch::Sender<Option<i32>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    /// Kept and sent under one lock, so an attachment's scrollback and stream meet exactly.
    fn show(&self, bytes: &[u8]) {
        let mut s = lock(&self.screen);
        s.scrollback.extend(bytes);
        if s.scrollback.len() > self.cap {
            let excess = s.scrollback.len() - self.cap;
            s.scrollback.drain(..excess);
        }
        let _ = self.output.send(Arc::from(bytes));
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        end(&self.process);
    }
}

/// SIGTERM to the group now, SIGKILL after [`GRACE`] if it is still there.
fn end(process: &Arc<dyn AgentProcess>) {
    if process.reaped() {
        return;
    }
    process.signal(Sig::Term);
    let p = process.clone();
    let _ = std::thread::Builder::new().name("plain-term-kill".into()).spawn(move || {
        let deadline = std::time::Instant::now() + GRACE;
        while std::time::Instant::now() < deadline {
            if p.reaped() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        p.signal(Sig::Kill);
    });
}

/// A running (or ended) unsupervised terminal. Cheap to clone; the process ends when the
/// last clone is dropped or [`PlainTerminal::close`] is called.
#[derive(Clone)]
pub struct PlainTerminal {
    inner: Arc<Inner>,
}

impl PlainTerminal {
    pub fn start(spec: PlainSpec) -> Result<PlainTerminal, StartError> {
        let (cols, rows) = (spec.cols.clamp(20, 1000), spec.rows.clamp(5, 500));
        let Started { output, input, process } = OsTerminals.start(StartSpec {
            program: spec.program,
            args: spec.args,
            cwd: spec.cwd,
            env: spec.env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            cols,
            rows,
        })?;
        let (itx, irx) = std::sync::mpsc::channel::<Vec<u8>>();
        let inner = Arc::new(Inner {
            process: process.clone(),
            input: itx,
            screen: Mutex::new(Screen { scrollback: VecDeque::new(), cols, rows }),
            cap: spec.scrollback.max(4096),
            output: broadcast::channel(1024).0,
            exit: watch::channel(None).0,
        });
        let pid = process.pid();
        let weak = Arc::downgrade(&inner);
        let (drained_tx, drained) = std::sync::mpsc::channel::<()>();
        spawn(format!("plain-read-{pid}"), move || {
            read_loop(output, weak);
            let _ = drained_tx.send(());
        });
        spawn(format!("plain-write-{pid}"), move || {
            let mut input = input;
            while let Ok(b) = irx.recv() {
                if input.write_all(&b).and_then(|_| input.flush()).is_err() {
                    break;
                }
            }
        });
        let weak = Arc::downgrade(&inner);
        spawn(format!("plain-wait-{pid}"), move || {
            let code = process.wait();
            // What it printed last is shown before its end is told (a reader of the exit
            // reads the scrollback for why); a descendant holding the terminal open does
            // not hold the exit back for long.
            let _ = drained.recv_timeout(DRAIN_WAIT);
            if let Some(inner) = weak.upgrade() {
                inner.exit.send_replace(Some(code));
            }
        });
        Ok(PlainTerminal { inner })
    }

    pub fn pid(&self) -> u32 {
        self.inner.process.pid()
    }

    /// The scrollback so far and every byte after it.
    pub fn attach(&self) -> Attachment {
        self.tail(usize::MAX)
    }

    /// The last `keep` bytes of the scrollback, and every byte after them (a resync).
    pub fn tail(&self, keep: usize) -> Attachment {
        let s = lock(&self.inner.screen);
        let scrollback = crate::actor::last_bytes(&s.scrollback, keep);
        Attachment { scrollback, output: self.inner.output.subscribe(), cols: s.cols, rows: s.rows }
    }

    /// Keystrokes or a paste; an error once the program has ended.
    pub fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
        if let Some(code) = self.exit_code() {
            return Err(TerminalError::Ended(code));
        }
        self.inner.input.send(bytes.to_vec()).map_err(|_| TerminalError::Closed)
    }

    pub fn resize(&self, cols: u16, rows: u16) -> Result<(), TerminalError> {
        let (cols, rows) = (cols.clamp(20, 1000), rows.clamp(5, 500));
        {
            let mut s = lock(&self.inner.screen);
            (s.cols, s.rows) = (cols, rows);
        }
        if self.inner.process.reaped() {
            return Ok(());
        }
        self.inner.process.resize(cols, rows)
    }

    /// Its size now (columns, rows).
    pub fn size(&self) -> (u16, u16) {
        let s = lock(&self.inner.screen);
        (s.cols, s.rows)
    }

    /// The program's exit code, once it has ended.
    pub fn exit_code(&self) -> Option<i32> {
        *self.inner.exit.borrow()
    }

    /// Resolves with the exit code when the program ends.
    pub fn exited(&self) -> watch::Receiver<Option<i32>> {
        self.inner.exit.subscribe()
    }

    /// Ends the program (SIGTERM to its group, SIGKILL after a grace).
    pub fn close(&self) {
        end(&self.inner.process);
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name).spawn(f) {
        tracing::error!(error = %e, "cannot start a terminal thread");
    }
}

fn read_loop(mut reader: Box<dyn Read + Send>, inner: std::sync::Weak<Inner>) {
    let mut buf = vec![0u8; 64 * 1024];
    // Linux may report the hang-up (EIO) while the program's last bytes are still on their
    // way through the terminal layer: a few more tries, a moment apart, before giving up.
    let mut tries = 0;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) if tries < 3 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(0) | Err(_) => return,
            Ok(n) => match inner.upgrade() {
                Some(i) => i.show(&buf[..n]),
                None => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> PlainTerminal {
        PlainTerminal::start(PlainSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            cols: 80,
            rows: 24,
            scrollback: 1 << 16,
        })
        .unwrap()
    }

    async fn until_contains(t: &PlainTerminal, needle: &str) -> String {
        let mut att = t.attach();
        let mut seen = String::from_utf8_lossy(&att.scrollback).into_owned();
        while !seen.contains(needle) {
            match tokio::time::timeout(Duration::from_secs(10), att.output.recv()).await {
                Ok(Ok(b)) => seen.push_str(&String::from_utf8_lossy(&b)),
                other => panic!("{needle:?} never came ({other:?}); saw {seen:?}"),
            }
        }
        seen
    }

    #[tokio::test]
    async fn echoes_input_keeps_output_and_tells_the_exit() {
        let t = sh("stty -echo; read line; echo \"got:$line\"; exit 7");
        t.write(b"hello\n").unwrap();
        let mut exited = t.exited();
        let code = *exited.wait_for(Option::is_some).await.unwrap();
        assert_eq!(code, Some(7));
        // Its last words are there by the time its end is told.
        assert!(String::from_utf8_lossy(&t.attach().scrollback).contains("got:hello"));
        // A later attachment gets what was shown.
        assert!(String::from_utf8_lossy(&t.attach().scrollback).contains("got:hello"));
        assert!(t.write(b"more").is_err(), "an ended terminal takes no input");
    }

    #[tokio::test]
    async fn closing_ends_the_program_and_its_group() {
        let t = sh("sleep 300 & echo started; wait");
        until_contains(&t, "started").await;
        let pid = t.pid();
        t.close();
        let mut exited = t.exited();
        exited.wait_for(Option::is_some).await.unwrap();
        assert!(!mimesis_os::procs::alive(pid));
    }

    #[tokio::test]
    async fn a_tail_is_the_end_of_the_scrollback_and_the_output_after_it() {
        let t = sh("echo first-line; echo second-line; read _; echo after");
        until_contains(&t, "second-line\r\n").await;
        let mut tail = t.tail(13);
        assert_eq!(tail.scrollback, b"second-line\r\n", "the last 13 bytes");
        assert_eq!(t.tail(usize::MAX).scrollback, t.attach().scrollback);
        t.write(b"\n").unwrap();
        let mut seen = String::new();
        while !seen.contains("after") {
            match tokio::time::timeout(Duration::from_secs(10), tail.output.recv()).await {
                Ok(Ok(b)) => seen.push_str(&String::from_utf8_lossy(&b)),
                other => panic!("\"after\" never came ({other:?}); saw {seen:?}"),
            }
        }
    }

    #[tokio::test]
    async fn resizing_reaches_the_program() {
        let t = sh("read _; stty size");
        t.resize(100, 30).unwrap();
        t.write(b"\n").unwrap();
        until_contains(&t, "30 100").await;
    }
}
