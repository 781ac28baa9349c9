//! The agent's process in its pseudo-terminal, as a session actor sees it: start one, read
//! and write its terminal, signal it, wait for it, measure it. [`OsTerminals`] is the
//! operating system's (portable-pty, process groups, `waitid`); the actor's tests drive the
//! same effect loop through a fake, so the loop is checked without a process.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use mimesis_core::supervision::policy::Sig;
use mimesis_os::procs;

/// Why a program could not be started in a terminal: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open a pseudo-terminal: {0}")]
    OpenPty(String),
    #[error("cannot read the pseudo-terminal: {0}")]
    ReadPty(String),
    #[error("cannot write to the pseudo-terminal: {0}")]
    WritePty(String),
    #[error("cannot start {}: {reason}", program.display())]
    Exec { program: PathBuf, reason: String },
    #[error("the agent started without a process id")]
    NoPid,
    #[error("cannot start {}; check that it is executable", .0.display())]
    NotExecutable(PathBuf),
    #[error("cannot find the agent program {:?} (not a file, nor on PATH); install it or pass --agent", .0.display().to_string())]
    NotFound(PathBuf),
}

/// Why a terminal did not take keys or a size: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("this terminal has ended (exit code {0})")]
    Ended(i32),
    #[error("this terminal has ended")]
    Closed,
    /// The pseudo-terminal refused the size (its own words).
    #[error("{0}")]
    Resize(String),
}

/// The faces answer in sentences: an error of a terminal is its sentence.
impl From<StartError> for String {
    fn from(e: StartError) -> String {
        e.to_string()
    }
}

impl From<TerminalError> for String {
    fn from(e: TerminalError) -> String {
        e.to_string()
    }
}

/// What to start: the program, its arguments, directory and environment, in a terminal of
/// `cols` × `rows`.
#[derive(Clone, Debug)]
pub(crate) struct StartSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Set on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    pub cols: u16,
    pub rows: u16,
}

impl StartSpec {
    /// The command line as given (argv[0] included).
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.to_string_lossy().into_owned()).chain(self.args.iter().cloned()).collect()
    }
}

/// A started agent: its terminal's two ends and its process.
pub(crate) struct Started {
    /// What the agent prints; ends (0 or an error) once its terminal is closed.
    pub output: Box<dyn Read + Send>,
    /// What the agent reads.
    pub input: Box<dyn Write + Send>,
    pub process: Arc<dyn AgentProcess>,
}

/// Starts agents in terminals.
pub(crate) trait Terminals: Send + Sync {
    /// Everything that can fail comes before the process starts: a started agent always
    /// gets its waiter.
    fn start(&self, spec: StartSpec) -> Result<Started, StartError>;
}

/// One started agent process (the leader of its process group).
pub(crate) trait AgentProcess: Send + Sync {
    fn pid(&self) -> u32;
    /// Its start time in clock ticks since boot (the guard against PID reuse), 0 if unknown.
    fn start_ticks(&self) -> u64;
    /// To its process group; never once it was reaped (the PID may be someone else's).
    fn signal(&self, sig: Sig);
    fn reaped(&self) -> bool;
    /// Blocks until it exits, reaps it, and returns its code (128 + the signal if killed).
    fn wait(&self) -> i32;
    fn alive(&self) -> bool;
    /// RSS in bytes and CPU ticks of its process tree.
    fn usage(&self) -> (u64, u64);
    fn resize(&self, cols: u16, rows: u16) -> Result<(), TerminalError>;
}

/// Agents whose waiter thread has not reaped them yet, across every supervisor of this
/// process: the orphan scan must never reap one (it would steal its exit code). A start
/// holds the lock until its PID is in, so a scan holding it sees every agent.
static WAITED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

pub(crate) fn waited_agents() -> MutexGuard<'static, BTreeSet<u32>> {
    WAITED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Real pseudo-terminals and processes.
pub(crate) struct OsTerminals;

impl Terminals for OsTerminals {
    fn start(&self, spec: StartSpec) -> Result<Started, StartError> {
        let size = PtySize { rows: spec.rows, cols: spec.cols, pixel_width: 0, pixel_height: 0 };
        let pair = native_pty_system().openpty(size).map_err(|e| StartError::OpenPty(e.to_string()))?;
        // A bare `claude` that is not on Mimesis's PATH (an app started from the menu), where
        // its installers put it, with its folder first on its PATH (npm's script needs its node).
        let (program, path) = mimesis_os::programs::to_run(&spec.program);
        let mut cmd = CommandBuilder::new(program);
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        cmd.args(&spec.args);
        cmd.cwd(&spec.cwd);
        // The user's environment, not what the desktop app set for its toolkit.
        for (k, v) in mimesis_os::child_env::user_values() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            }
        }
        // Only the owner marks given here (a supervised agent's): none inherited from
        // Mimesis's own environment (a Mimesis started inside a supervised session), so
        // Claude Code's service that `claude attach` may start is never taken for ours.
        for k in mimesis_core::supervision::fleet::OWNER_MARKS {
            cmd.env_remove(k);
        }
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        let master = pair.master;
        let output = PtyReader::of(&*master).map_err(|e| StartError::ReadPty(e.to_string()))?;
        let input = master.take_writer().map_err(|e| StartError::WritePty(e.to_string()))?;
        let pid = {
            let mut waited = waited_agents();
            let child = pair
                .slave
                .spawn_command(cmd)
                .map_err(|e| StartError::Exec { program: spec.program.clone(), reason: e.to_string() })?;
            // The waiter reaps it; the handle is not needed (dropping it does nothing).
            let Some(pid) = child.process_id() else {
                return Err(StartError::NoPid);
            };
            waited.insert(pid);
            pid
        };
        drop(pair.slave);
        let process = Arc::new(OsProcess { pid, reaped: Mutex::new(false), master: Mutex::new(master) });
        Ok(Started { output, input, process })
    }
}

/// The PTY's output as a flood comes. One read of a terminal gives at most what its line
/// discipline holds (4 KB); while more is waiting (`poll`, which also moves what the kernel
/// holds for the terminal into it), this reads on, up to the caller's buffer. So a flood
/// reaches the session's actor in pieces of 64 KB, not 4 KB, each a thread's wake-up.
struct PtyReader(std::fs::File);

impl PtyReader {
    fn of(master: &dyn MasterPty) -> std::io::Result<Box<dyn Read + Send>> {
        let fd = master.as_raw_fd().ok_or_else(|| std::io::Error::other("the terminal has no descriptor"))?;
        // SAFETY: the master is open while this borrows it; the copy is our own.
        let own = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
        Ok(Box::new(PtyReader(std::fs::File::from(own))))
    }

    /// Output is waiting (no wait).
    fn waiting(&self) -> bool {
        let mut pfd = libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd of ours; no wait.
        let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
        ready == 1 && pfd.revents & libc::POLLIN != 0
    }
}

impl Read for PtyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = self.0.read(buf)?;
        while n > 0 && n < buf.len() && self.waiting() {
            match self.0.read(&mut buf[n..]) {
                Ok(m) if m > 0 => n += m,
                // The end (or the error) comes again at the next read.
                _ => break,
            }
        }
        Ok(n)
    }
}

/// A child in its own process group and session, guarded so signals never outlive its PID:
/// the waiter reaps under the lock every signal takes.
struct OsProcess {
    pid: u32,
    reaped: Mutex<bool>,
    master: Mutex<Box<dyn MasterPty + Send>>,
}

impl AgentProcess for OsProcess {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn start_ticks(&self) -> u64 {
        procs::start_ticks(self.pid).unwrap_or(0)
    }

    fn signal(&self, sig: Sig) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if *reaped {
            return;
        }
        let signo = match sig {
            Sig::Term => libc::SIGTERM,
            Sig::Kill => libc::SIGKILL,
            Sig::Stop => libc::SIGSTOP,
            Sig::Cont => libc::SIGCONT,
        };
        procs::signal_group(self.pid, signo);
        if sig == Sig::Kill {
            // Members that moved to another process group are not reached by the group.
            procs::kill_session(self.pid);
        }
    }

    fn reaped(&self) -> bool {
        *self.reaped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the exit without reaping, then reaps under the guard's lock.
    fn wait(&self) -> i32 {
        let pid = self.pid as libc::id_t;
        loop {
            // SAFETY: siginfo_t is plain data; waitid fills it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        let mut reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        let mut status = 0;
        // SAFETY: reaping our own child.
        let r = unsafe { libc::waitpid(self.pid as i32, &mut status, 0) };
        *reaped = true;
        waited_agents().remove(&self.pid);
        if r != self.pid as i32 {
            return 1; // someone else reaped it; the code is unknown
        }
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else if libc::WIFSIGNALED(status) {
            128 + libc::WTERMSIG(status)
        } else {
            1
        }
    }

    fn alive(&self) -> bool {
        procs::alive(self.pid)
    }

    fn usage(&self) -> (u64, u64) {
        procs::tree_usage(self.pid)
    }

    fn resize(&self, cols: u16, rows: u16) -> Result<(), TerminalError> {
        let size = PtySize { rows, cols, pixel_width: 0, pixel_height: 0 };
        let master = self.master.lock().unwrap_or_else(|e| e.into_inner());
        master.resize(size).map_err(|e| TerminalError::Resize(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use portable_pty::{PtySize, native_pty_system};

    #[test]
    fn a_flood_is_read_in_pieces_bigger_than_the_terminal_holds() {
        let pair = native_pty_system().openpty(PtySize::default()).unwrap();
        let mut reader = super::PtyReader::of(&*pair.master).unwrap();
        // The terminal's program writes until the kernel holds no more (no line ends: nothing
        // is added), all before the first read.
        use std::os::unix::fs::OpenOptionsExt;
        let mut tty = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(pair.master.tty_name().unwrap())
            .unwrap();
        let mut sent = 0;
        while let Ok(m) = tty.write(&[b'x'; 1024]) {
            sent += m;
        }
        assert!(sent > 8 * 1024, "the kernel holds {sent} bytes");
        let mut buf = vec![0u8; sent + 1];
        let n = reader.read(&mut buf).unwrap();
        assert_eq!(n, sent, "one read takes all that waits, not the line discipline's 4 KB");
        assert!(buf[..n].iter().all(|b| *b == b'x'));
    }
}
