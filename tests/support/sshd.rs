//! A real OpenSSH server on loopback for the remote-host tests (issue 13): Debian's
//! `sshd` as a child, on a free port, with its own config, a throwaway host key and one
//! authorized client key in a temp dir (`-D`, no PAM, keys only). Each "remote machine" is
//! an alias in a temp ssh client config that sends the machine's config root and data dir
//! (`SetEnv`, accepted by this server only), so one server serves many machines.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    pub dir: PathBuf,
    pub port: u16,
    /// The ssh client config with every alias (`MIMESIS_SSH_CONFIG`).
    pub client_config: PathBuf,
    child: Option<Child>,
}

impl Sshd {
    /// Whether this machine has an sshd (scripts/setup.sh installs it).
    pub fn available() -> bool {
        Path::new(SSHD).is_file()
    }

    pub fn start(dir: &Path) -> Result<Sshd> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        for key in ["host_key", "client_key"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "mimesis-test", "-f"])
                .arg(dir.join(key))
                .stdin(Stdio::null())
                .status()
                .context("run ssh-keygen")?;
            ensure!(status.success(), "ssh-keygen failed");
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys"))?;
        let port = free_port()?;
        let client_config = dir.join("ssh_config");
        std::fs::write(&client_config, "")?;
        // Privilege separation needs this folder when sshd runs as root.
        if unsafe { libc::geteuid() } == 0 {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let mut s = Sshd { dir, port, client_config, child: None };
        s.write_port()?;
        s.restart()?;
        Ok(s)
    }

    /// Adds a machine: `alias` logs in here with the machine's own config root and data dir.
    pub fn add_alias(&self, alias: &str, config_root: &Path, data_dir: &Path) -> Result<()> {
        self.add_alias_with(alias, config_root, data_dir, None)
    }

    /// [`Sshd::add_alias`], with the agent `mimesis run` starts there (`$MIMESIS_AGENT`).
    pub fn add_alias_with(&self, alias: &str, config_root: &Path, data_dir: &Path, agent: Option<&Path>) -> Result<()> {
        let agent = agent.map(|a| format!(" MIMESIS_AGENT={}", a.display())).unwrap_or_default();
        let user = whoami();
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.client_config)?;
        write!(
            f,
            "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/client_key\n  \
             IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n  \
             SetEnv CLAUDE_CONFIG_DIR={root} MIMESIS_DATA_DIR={data}{agent}\n  LogLevel ERROR\n",
            port = self.port,
            d = self.dir.display(),
            root = config_root.display(),
            data = data_dir.display(),
        )?;
        Ok(())
    }

    /// The files that name the port: the server's config and the host key's known_hosts line.
    fn write_port(&self) -> Result<()> {
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n\
             StrictModes no\nPidFile {d}/sshd.pid\nAcceptEnv CLAUDE_CONFIG_DIR MIMESIS_DATA_DIR MIMESIS_LOG MIMESIS_AGENT\n\
             PrintMotd no\nLogLevel ERROR\n",
            port = self.port,
            d = self.dir.display()
        );
        std::fs::write(self.dir.join("sshd_config"), config)?;
        let host_pub = std::fs::read_to_string(self.dir.join("host_key.pub"))?;
        std::fs::write(self.dir.join("known_hosts"), format!("[127.0.0.1]:{} {host_pub}", self.port))?;
        Ok(())
    }

    /// Starts (again) and waits until it accepts connections: on the same port, unless
    /// another program took that port meanwhile (a free port is found by binding it and
    /// letting it go, so it can be taken before sshd binds it): then on another one, which
    /// every file that names it (the aliases too) is changed to.
    pub fn restart(&mut self) -> Result<()> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.spawn()? {
                Started::Listening => return Ok(()),
                Started::PortTaken if tries < 5 => {
                    let old = self.port;
                    self.port = free_port()?;
                    self.write_port()?;
                    let aliases = std::fs::read_to_string(&self.client_config)?;
                    let moved = aliases.replace(&format!("  Port {old}\n"), &format!("  Port {}\n", self.port));
                    std::fs::write(&self.client_config, moved)?;
                }
                Started::PortTaken => bail!("sshd found each of the {tries} ports it was given taken: {}", self.log()),
            }
        }
    }

    fn spawn(&mut self) -> Result<Started> {
        let log_path = self.dir.join("sshd.log");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path)?;
        let logged_before = log.metadata()?.len() as usize;
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("start sshd")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        // Until the port answers as an SSH server does (another program on it would not).
        while !answers_ssh(self.port) {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                self.child = None;
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let this_run = log.get(logged_before..).unwrap_or_default();
                if this_run.contains("Address already in use") {
                    return Ok(Started::PortTaken);
                }
                bail!("sshd exited ({st}): {this_run}");
            }
            ensure!(Instant::now() < deadline, "sshd did not listen on port {} within 20 s", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Started::Listening)
    }

    /// Kills the server and every connection it serves (their processes are its
    /// descendants), as a machine that goes away. The connections are hung up first, as
    /// sshd does when a connection drops, so their shells run their exit traps: a login
    /// shell killed outright can leave a lock behind in the user's own files (pyenv's
    /// `rehash`, run by a `.bashrc`, leaves `shims/.pyenv-shim`, and every later login on
    /// the machine then waits 60 s for it). What outlives the hang-up is killed.
    pub fn kill(&mut self) {
        use mimesis_os::procs;
        let Some(mut child) = self.child.take() else { return };
        let leader = child.id();
        let stats = procs::all();
        let mut tree: Vec<(u32, u64)> =
            procs::tree(leader, &stats).iter().filter(|s| s.pid != leader).map(|s| (s.pid, s.start_ticks)).collect();
        for &(pid, _) in &tree {
            procs::signal(pid, libc::SIGHUP);
        }
        let _ = child.kill();
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            tree.retain(|&(pid, t)| procs::stat(pid).is_some_and(|s| s.start_ticks == t && s.state != 'Z'));
            if tree.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for (pid, _) in tree {
            procs::signal(pid, libc::SIGKILL);
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

enum Started {
    Listening,
    /// Another program listens on the port.
    PortTaken,
}

/// A port free now (the kernel's choice), for a server to bind soon after.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether an SSH server answers on `port`: it speaks first, `SSH-2.0-…` (RFC 4253 §4.2).
fn answers_ssh(port: u16) -> bool {
    use std::io::Read;
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut banner = [0u8; 4];
    conn.read_exact(&mut banner).is_ok() && &banner == b"SSH-"
}

fn whoami() -> String {
    // SAFETY: getpwuid returns a pointer into static storage, read at once.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() {
            return "root".into();
        }
        std::ffi::CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned()
    }
}
