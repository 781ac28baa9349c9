//! `mimesis run`'s own log: a file in the data dir, never the terminal. The agent draws
//! on that terminal; a log line written there lands in the middle of its screen (a WARN
//! over the prompt box every check, issue 33). The file is the user's alone (0600, in a
//! 0700 folder), filtered like any text Mimesis prints (a log line may quote untrusted
//! words), and capped: past [`MAX_BYTES`] it becomes `run.log.1` (replacing the one
//! before) and a new one begins, so at most twice that is kept.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::term::Term;

/// A log file is cut over to a new one past this size.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// `<data dir>/logs/run.log`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("logs").join("run.log")
}

struct Capped {
    path: PathBuf,
    file: Option<File>,
    len: u64,
}

impl Capped {
    fn open(path: &Path) -> io::Result<Capped> {
        if let Some(dir) = path.parent() {
            mimesis_os::private::own_dir(dir)?;
        }
        let file = mimesis_os::private::append(path)?;
        let len = file.metadata().map_or(0, |m| m.len());
        Ok(Capped { path: path.to_owned(), file: Some(file), len })
    }

    fn write_line(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.len > 0 && self.len + bytes.len() as u64 > MAX_BYTES {
            self.file = None;
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            std::fs::rename(&self.path, &old)?;
            self.file = Some(mimesis_os::private::append(&self.path)?);
            self.len = 0;
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(mimesis_os::private::append(&self.path)?),
        };
        file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// One log record as `tracing` writes it: gathered, then filtered and appended at once.
pub struct Record {
    log: Arc<Mutex<Capped>>,
    buf: Vec<u8>,
}

impl Write for Record {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        let mut bytes = Vec::with_capacity(self.buf.len());
        {
            let mut clean = Term::new(&mut bytes, false, 120);
            let _ = clean.write_all(&self.buf);
        }
        if let Ok(mut log) = self.log.lock() {
            let _ = log.write_line(&bytes);
        }
    }
}

/// Where `tracing` writes `mimesis run`'s log.
#[derive(Clone)]
pub struct RunLog(Arc<Mutex<Capped>>);

impl RunLog {
    pub fn open(data_dir: &Path) -> io::Result<RunLog> {
        Ok(RunLog(Arc::new(Mutex::new(Capped::open(&path(data_dir))?))))
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RunLog {
    type Writer = Record;

    fn make_writer(&'a self) -> Record {
        Record { log: self.0.clone(), buf: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::fmt::MakeWriter;

    #[test]
    fn a_private_file_filtered_and_cut_over_past_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::open(dir.path()).unwrap();
        let p = path(dir.path());
        assert_eq!(mimesis_os::private::mode_of(&p), Some(0o600));
        assert_eq!(mimesis_os::private::mode_of(p.parent().unwrap()), Some(0o700));
        writeln!(log.make_writer(), "WARN a title change \x1b]0;owned\x07 from a transcript").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("WARN a title change \u{fffd}]0;owned\u{fffd} from"), "{text:?}");
        let line = "x".repeat(1023) + "\n";
        for _ in 0..(MAX_BYTES / 1024 + 1) {
            log.make_writer().write_all(line.as_bytes()).unwrap();
        }
        let cut = std::fs::metadata(format!("{}.1", p.display())).unwrap().len();
        assert!(cut <= MAX_BYTES && cut > MAX_BYTES / 2, "{cut}");
        assert!(std::fs::metadata(&p).unwrap().len() <= MAX_BYTES);
        assert_eq!(mimesis_os::private::mode_of(&p), Some(0o600));
    }
}
