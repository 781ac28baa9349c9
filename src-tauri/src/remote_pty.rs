//! The embedded terminal of a session on another machine (issue 13): "New session on
//! <host>" and "Resume" of one of its sessions run `ssh -t <host> mimesis run …` in a local
//! pseudo-terminal ([`PlainTerminal`]: shown, not supervised here). The session is
//! supervised on its own machine, by the `mimesis run` there (crash recovery, limits); its
//! row and supervision events come through that machine's stream like any of its sessions,
//! keyed `host:id`, and the terminal is kept under the same key, so the `pty_*` commands
//! reach it by the row's id.
//!
//! Stop closes the terminal (ssh ends; the far side's `mimesis run` gets SIGHUP and ends the
//! session, which can be resumed); Resume opens a new one with `--resume`; Restart, Delete
//! and answering dialogs from the window are the far side's and are refused with a
//! sentence. Every terminal is closed when the app exits; ssh also ends by itself when the
//! app dies (its terminal hangs up).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use mimesis_core::SessionId;
use mimesis_core::remote::{Destination, remote_mimesis, split_host_id};
use mimesis_wiring::plain::{PlainSpec, PlainTerminal};
use mimesis_wiring::remote::{Hub, Ssh};

type CmdResult<T> = Result<T, String>;

/// The terminals of other machines' sessions this window opened, by window key `host:id`.
pub struct RemoteTerminals {
    terms: Mutex<HashMap<String, PlainTerminal>>,
    /// Output kept per terminal (as for the sessions supervised here).
    scrollback: usize,
}

/// A folder on another machine, as given: an absolute path (the remote shell gets it as one
/// quoted word, never expanded).
fn remote_folder(host: &Destination, cwd: &str) -> CmdResult<String> {
    let cwd = cwd.trim();
    if !cwd.starts_with('/') {
        return Err(format!("a folder on {host} is an absolute path, such as /home/me/project"));
    }
    if cwd.len() > 4096 || cwd.chars().any(char::is_control) {
        return Err(format!("{cwd:?} is not a folder name Mimesis passes to {host}"));
    }
    Ok(cwd.to_owned())
}

/// The session part of `key` when it is `host`'s (`host:id`), or `key` itself when it is a
/// plain id.
fn id_on(host: &Destination, key: &str) -> CmdResult<SessionId> {
    let id = match split_host_id(key) {
        (Some(h), id) if h == host.as_str() => id,
        (Some(h), _) => return Err(format!("that session is on {h}, not {host}")),
        (None, id) => id,
    };
    SessionId::parse(id).map_err(|e| e.to_string())
}

impl RemoteTerminals {
    pub fn new(scrollback: usize) -> RemoteTerminals {
        RemoteTerminals { terms: Mutex::default(), scrollback }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PlainTerminal>> {
        self.terms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The terminal of `key`, if this window opened one.
    pub fn get(&self, key: &str) -> CmdResult<PlainTerminal> {
        self.lock().get(key).cloned().ok_or_else(|| {
            let host = split_host_id(key).0.unwrap_or("its machine");
            format!("this session runs on {host} in a terminal this window did not open; stop it there, or resume it here once it has ended")
        })
    }

    /// Opens `ssh -t host mimesis run …` for a new session (under an id chosen here, so its
    /// row is known before it exists there) or to resume `resume`. Returns the window key
    /// and the terminal.
    pub fn open(
        &self,
        hub: &Hub,
        host: &str,
        cwd: &str,
        resume: Option<&str>,
        size: (u16, u16),
    ) -> CmdResult<(String, PlainTerminal)> {
        let dest = Destination::parse(host).map_err(|e| e.to_string())?;
        if !hub.hosts().iter().any(|h| h.host == dest.as_str()) {
            return Err(format!("{dest} is not in Settings › Machines"));
        }
        let cwd = remote_folder(&dest, cwd)?;
        let (id, flag) = match resume {
            Some(r) => (id_on(&dest, r)?, "--resume"),
            None => (mimesis_wiring::new_session_id(), "--session-id"),
        };
        let key = format!("{dest}:{id}");
        if let Some(t) = self.lock().get(&key)
            && t.exit_code().is_none()
        {
            return Err("this session's terminal is open already".into());
        }
        let remote = remote_mimesis(&["run", "--cwd", &cwd, flag, id.as_str()]);
        let argv = Ssh::from_env().argv(&dest, &remote, true);
        let term = PlainTerminal::start(PlainSpec {
            program: PathBuf::from(&argv[0]),
            args: argv[1..].to_vec(),
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            cols: size.0,
            rows: size.1,
            scrollback: self.scrollback,
        })?;
        tracing::info!(key = %key, pid = term.pid(), "opened a terminal on another machine");
        let (mut exited, watched, k) = (term.exited(), term.clone(), key.clone());
        tauri::async_runtime::spawn(async move {
            if let Ok(code) = exited.wait_for(Option::is_some).await.map(|c| *c) {
                let shown = watched.attach().scrollback;
                let tail = String::from_utf8_lossy(&shown[shown.len().saturating_sub(400)..]).into_owned();
                tracing::info!(key = %k, code = ?code, "the terminal on another machine ended");
                tracing::debug!(key = %k, "its last output: {tail:?}");
            }
        });
        if let Some(old) = self.lock().insert(key.clone(), term.clone()) {
            old.close();
        }
        Ok((key, term))
    }

    /// Resume: a new terminal that resumes the session, in the folder its row names.
    pub async fn resume(&self, hub: &Hub, key: &str) -> CmdResult<()> {
        let (Some(host), _) = split_host_id(key) else { return Err("not a session of another machine".into()) };
        let row = hub.row(key).ok_or_else(|| format!("{host} has no such session (is it connected?)"))?;
        let cwd = row
            .supervision
            .as_ref()
            .map(|s| s.cwd.clone())
            .or(row.cwd.clone())
            .ok_or_else(|| "that session's folder is not known, so it cannot be resumed".to_owned())?;
        let size = self.get(key).map(|t| t.size()).unwrap_or((120, 40));
        let (key, term) = self.open(hub, host, &cwd, Some(key), size)?;
        started(hub, &term, &key).await
    }

    /// Stop: the terminal closes; the far side ends the session (it can be resumed).
    pub fn stop(&self, key: &str) -> CmdResult<()> {
        let term = self.get(key)?;
        tracing::info!(key = %key, pid = term.pid(), ended = ?term.exit_code(), "stopping a terminal on another machine");
        term.close();
        Ok(())
    }

    /// Delete: the terminal closes and is forgotten (the transcript stays on its machine).
    pub fn delete(&self, key: &str) -> CmdResult<()> {
        match self.lock().remove(key) {
            Some(t) => {
                t.close();
                Ok(())
            }
            None => self.get(key).map(|_| ()),
        }
    }

    /// Every terminal closed (the app exits).
    pub fn close_all(&self) {
        for (_, t) in self.lock().drain() {
            t.close();
        }
    }
}

/// How long a new terminal has to bring its session's row before `pty_create` returns
/// anyway (the terminal then says what is happening).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Waits until the session of a terminal just opened is in the host's roster, supervised
/// there, or the terminal ended first: then its last line (ssh's or `mimesis run`'s error)
/// is the error.
pub async fn started(hub: &Hub, term: &PlainTerminal, key: &str) -> CmdResult<()> {
    let mut events = hub.subscribe();
    let mut exited = term.exited();
    let wait = async {
        loop {
            if let Some(code) = *exited.borrow() {
                return Err(ended_with(term, code));
            }
            // Supervised there: the row of a resumed session may be there already, plain.
            if hub.row(key).is_some_and(|r| r.supervision.is_some()) {
                return Ok(());
            }
            tokio::select! {
                _ = exited.changed() => {}
                ev = events.recv() => if let Err(tokio::sync::broadcast::error::RecvError::Closed) = ev {
                    return Ok(());
                },
            }
        }
    };
    tokio::time::timeout(START_WAIT, wait).await.unwrap_or(Ok(()))
}

/// A terminal that ended at once, in a sentence: its last line of output (cleaned: it is
/// the other machine's text).
fn ended_with(term: &PlainTerminal, code: i32) -> String {
    let shown = term.attach().scrollback;
    let text = String::from_utf8_lossy(&shown[shown.len().saturating_sub(2000)..]).into_owned();
    // (ssh's own "Connection to … closed." says nothing about why.)
    let ssh_bye = |l: &str| l.starts_with("Connection to ") && l.ends_with(" closed.");
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty() && !ssh_bye(l)).unwrap_or("");
    let last = mimesis_core::remote::quote(last);
    if last.is_empty() { format!("the session ended at once (exit code {code})") } else { last }
}

/// What the window cannot do to another machine's session, said.
pub fn refused(what: &str, key: &str) -> String {
    let host = split_host_id(key).0.unwrap_or("its machine");
    format!("{what} is done on {host} for its sessions; from here, stop and resume it")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_absolute_and_plain() {
        let h = Destination::parse("devbox").unwrap();
        assert_eq!(remote_folder(&h, " /srv/p ").unwrap(), "/srv/p");
        assert!(remote_folder(&h, "~/p").is_err());
        assert!(remote_folder(&h, "p").is_err());
        assert!(remote_folder(&h, "/a\nb").is_err());
        // Shell characters are fine: the path is one quoted word there.
        assert_eq!(remote_folder(&h, "/x/$(rm -rf ~)").unwrap(), "/x/$(rm -rf ~)");
    }

    #[test]
    fn ids_of_other_hosts_are_refused() {
        let h = Destination::parse("devbox").unwrap();
        assert_eq!(id_on(&h, "devbox:abc").unwrap().as_str(), "abc");
        assert_eq!(id_on(&h, "abc").unwrap().as_str(), "abc");
        assert!(id_on(&h, "gpu:abc").is_err());
        assert!(id_on(&h, "devbox:../x").is_err());
    }
}
