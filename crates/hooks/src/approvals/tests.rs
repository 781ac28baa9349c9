//! Issue 32, 4: the hook trusted whoever listened on `<data dir>/approvals.sock`. A planted
//! listener (a real process, of another user where the test can be root) now gets nothing
//! and decides nothing.

use super::*;
use mimesis_core::approval::Behavior;
use mimesis_core::ids::SessionId;
use std::os::fd::{FromRawFd, OwnedFd};

fn request() -> Request {
    Request {
        session_id: SessionId::parse("planted-1").unwrap(),
        tool: "Bash".into(),
        target: Some("rm -rf /".into()),
        cwd: None,
        detail: None,
    }
}

fn root() -> bool {
    euid() == 0
}

/// A listener on a data dir's socket in a process of its own: it binds, becomes `uid` (when
/// given) before it listens — so its peer credentials are that user's — accepts one
/// connection, reads what comes until the client closes it, answers `allow`, and reports
/// how many bytes it read.
struct Planted {
    pid: libc::pid_t,
    report: std::fs::File,
}

fn plant(path: &Path, uid: Option<u32>) -> Planted {
    use std::os::unix::ffi::OsStrExt;
    // Everything the child needs is made before the fork: after it, only system calls.
    // SAFETY: sockaddr_un is plain data; zeroed is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    assert!(bytes.len() < addr.sun_path.len());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let allow = b"{\"behavior\":\"allow\"}\n";
    let mut fds = [0; 2];
    // SAFETY: a two-int array for pipe.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the child only makes system calls on memory prepared above, then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        // SAFETY: (the child) async-signal-safe calls only.
        unsafe {
            libc::close(rd);
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if libc::bind(fd, (&addr as *const libc::sockaddr_un).cast(), len) != 0 {
                libc::_exit(2);
            }
            if let Some(uid) = uid
                && (libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(uid) != 0 || libc::setuid(uid) != 0)
            {
                libc::_exit(3);
            }
            if libc::listen(fd, 8) != 0 {
                libc::_exit(4);
            }
            libc::write(wr, b"r".as_ptr().cast(), 1);
            let c = libc::accept(fd, std::ptr::null_mut(), std::ptr::null_mut());
            if c < 0 {
                libc::_exit(5);
            }
            let mut total: u32 = 0;
            let mut buf = [0u8; 4096];
            loop {
                let mut p = libc::pollfd { fd: c, events: libc::POLLIN, revents: 0 };
                if libc::poll(&mut p, 1, 10_000) <= 0 {
                    break;
                }
                let n = libc::read(c, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                total += n as u32;
                // A request is one line: answer it as a face would.
                if buf[..n as usize].contains(&b'\n') {
                    break;
                }
            }
            libc::send(c, allow.as_ptr().cast(), allow.len(), libc::MSG_NOSIGNAL);
            libc::write(wr, (&total as *const u32).cast(), 4);
            libc::_exit(0);
        }
    }
    // SAFETY: the write end is the child's; the read end is ours from now on.
    unsafe { libc::close(wr) };
    // SAFETY: a fresh descriptor owned by nothing else.
    let mut report = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(rd) });
    let mut ready = [0u8; 1];
    assert!(report.read_exact(&mut ready).is_ok() && ready == *b"r", "the planted listener is up");
    Planted { pid, report }
}

impl Planted {
    /// How many bytes the listener read from its one connection; `None` when nothing ever
    /// connected (`connected: false`: the listener is stopped without waiting for one).
    fn finish(mut self, connected: bool) -> Option<u32> {
        if !connected {
            // SAFETY: our own child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        let mut n = [0u8; 4];
        let got = self.report.read_exact(&mut n).is_ok();
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
        got.then(|| u32::from_ne_bytes(n))
    }
}

fn hook_log(dir: &Path) -> String {
    std::fs::read_to_string(mimesis_core::hook_event::log_file(dir)).unwrap_or_default()
}

/// The hook's question to a listener planted (as `uid`, when given) in a data dir that
/// `prepare` made what it is: its decision, how many bytes the listener read (`None`: it
/// was never connected to; `connects` says whether to wait for that), and the hook's log.
fn ask_planted(uid: Option<u32>, prepare: impl FnOnce(&Path), connects: bool) -> (Decision, Option<u32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let planted = plant(&approval::socket_path(dir.path()), uid);
    prepare(dir.path());
    let d = ask(dir.path(), &request(), Duration::from_secs(10));
    let read = planted.finish(connects);
    (d, read, hook_log(dir.path()))
}

/// The same listener in a data dir of our own is answered: the test exercises the socket.
#[test]
fn a_listener_of_our_own_in_our_own_data_dir_is_asked() {
    let (d, read, _) = ask_planted(None, |_| {}, true);
    assert_eq!(d.behavior, Some(Behavior::Allow));
    assert!(read.is_some_and(|n| n > 0), "the request was sent");
}

#[test]
fn a_socket_another_user_listens_on_gets_no_request_and_decides_nothing() {
    if !root() {
        eprintln!("(needs root to listen as another user)");
        return;
    }
    let (d, read, log) = ask_planted(Some(65534), |_| {}, true);
    assert_eq!(d, Decision::default(), "never its allow: Claude Code's own dialog decides");
    assert_eq!(read, Some(0), "it connected, and read nothing");
    assert!(log.contains("is served by user 65534, not by you") && log.contains("planted-1"), "{log}");

    // `mimesis pending` says the same, and sends nothing either.
    let dir = tempfile::tempdir().unwrap();
    let planted = plant(&approval::socket_path(dir.path()), Some(65534));
    let err = list(dir.path(), Duration::from_secs(5)).unwrap_err();
    assert!(matches!(err, ClientError::Untrusted(_)) && err.to_string().contains("nothing was sent"), "{err}");
    assert_eq!(planted.finish(true), Some(0));
}

#[test]
fn a_data_dir_others_may_write_into_is_not_talked_to() {
    use std::os::unix::fs::PermissionsExt;
    for mode in [0o777, 0o1777, 0o770] {
        let chmod = |dir: &Path| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let (d, read, log) = ask_planted(None, chmod, false);
        assert_eq!(d, Decision::default(), "{mode:o}");
        assert_eq!(read, None, "{mode:o}: nothing connected");
        assert!(log.contains("others may write into the data dir"), "{mode:o}: {log}");
    }
}

#[test]
fn a_data_dir_of_another_user_is_not_talked_to() {
    if !root() {
        eprintln!("(needs root to give a folder to another user)");
        return;
    }
    let chown = |dir: &Path| std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
    let (d, read, log) = ask_planted(None, chown, false);
    assert_eq!(d, Decision::default());
    assert_eq!(read, None, "nothing connected");
    assert!(log.contains("belongs to user 65534, not to you"), "{log}");
}
