//! "Start at login" (Settings): an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/mimesis.desktop`
//! (else `~/.config/autostart`), that the desktop session runs when the user logs in. It
//! starts the app that wrote it, hidden to the tray (`--hidden`). Written when the setting
//! is turned on, removed when it is turned off; an entry of that name that Mimesis did not
//! write is never removed. Its `TryExec` makes the session skip it once that app is gone
//! (the package was removed), so it is harmless left behind.

use std::io;
use std::path::{Path, PathBuf};

/// The file name of the entry in the autostart folder.
pub const FILE_NAME: &str = "mimesis.desktop";

/// The line that marks an entry as written by Mimesis.
const MARK: &str = "X-Mimesis-Autostart=true";

/// The argument the entry starts the app with (`src-tauri`'s `--hidden`).
pub const HIDDEN_ARG: &str = "--hidden";

/// Where the entry goes: `config_home` when it is an absolute path (the XDG rule: a relative
/// one is ignored), else `home/.config`; `None` with neither.
pub fn path(config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let base = match config_home.filter(|p| p.is_absolute()) {
        Some(c) => c.to_owned(),
        None => home?.join(".config"),
    };
    Some(base.join("autostart").join(FILE_NAME))
}

/// [`path`] for this process: `$XDG_CONFIG_HOME`, else the home folder.
pub fn path_from_env() -> Option<PathBuf> {
    path(std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).as_deref(), dirs::home_dir().as_deref())
}

/// The entry that starts `exe` hidden, or `None` when `exe` cannot be written in an entry
/// (not UTF-8, or a control character in it).
pub fn entry(exe: &Path) -> Option<String> {
    let exe = exe.to_str().filter(|s| !s.chars().any(char::is_control))?;
    Some(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Mimesis\n\
         Comment=Watches your Claude Code sessions; started at login (Mimesis › Settings › Start at login)\n\
         Exec={} {HIDDEN_ARG}\n\
         TryExec={}\n\
         Icon=mimesis-desktop\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n\
         {MARK}\n",
        exec_word(exe),
        string_value(exe)
    ))
}

/// One argument of an `Exec` key (Desktop Entry spec, "The Exec key"): quoted when it holds a
/// reserved character, with `"`, `` ` ``, `$` and `\` escaped inside the quotes; `%` doubled
/// (field codes); then escaped as any string value.
fn exec_word(s: &str) -> String {
    const RESERVED: &[char] =
        &[' ', '\t', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(', ')', '`'];
    let s = s.replace('%', "%%");
    let word = if s.contains(RESERVED) {
        let mut q = String::from("\"");
        for c in s.chars() {
            if matches!(c, '"' | '`' | '$' | '\\') {
                q.push('\\');
            }
            q.push(c);
        }
        q.push('"');
        q
    } else {
        s
    };
    string_value(&word)
}

/// A string value of a desktop entry: `\` escaped (no control characters reach here).
fn string_value(s: &str) -> String {
    s.replace('\\', "\\\\")
}

/// Whether the entry at `path` was written by Mimesis (a plain file with our mark).
fn is_ours(path: &Path) -> io::Result<bool> {
    let text = crate::files::read_bounded(path, 64 * 1024)?;
    Ok(String::from_utf8_lossy(&text).lines().any(|l| l.trim() == MARK))
}

/// Writes the entry that starts `exe` at login (`Some`), or removes ours (`None`). Only
/// writes when the file would change; atomic (a temporary file renamed over it).
pub fn set(path: &Path, exe: Option<&Path>) -> Result<(), AutostartError> {
    let err = |source| AutostartError::Io { path: path.to_owned(), source };
    let Some(exe) = exe else {
        // Not there, or not ours (a link, another program's): nothing to remove.
        return if is_ours(path).unwrap_or(false) { std::fs::remove_file(path).map_err(err) } else { Ok(()) };
    };
    let text = entry(exe).ok_or_else(|| AutostartError::Unwritable(exe.to_owned()))?;
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let tmp = dir.join(format!(".{FILE_NAME}.tmp"));
    std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("cannot change {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("Mimesis is at {0}, which an autostart entry cannot name; start it from a folder with a plainer name")]
    Unwritable(PathBuf),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_goes_under_xdg_config_home_else_home() {
        let home = Path::new("/home/u");
        assert_eq!(path(None, Some(home)), Some(PathBuf::from("/home/u/.config/autostart/mimesis.desktop")));
        assert_eq!(
            path(Some(Path::new("/x/cfg")), Some(home)),
            Some(PathBuf::from("/x/cfg/autostart/mimesis.desktop"))
        );
        assert_eq!(
            path(Some(Path::new("rel/cfg")), Some(home)),
            Some(PathBuf::from("/home/u/.config/autostart/mimesis.desktop")),
            "a relative XDG_CONFIG_HOME is ignored"
        );
        assert_eq!(path(None, None), None);
    }

    #[test]
    fn the_entry_starts_the_app_hidden_and_quotes_what_it_must() {
        let e = entry(Path::new("/usr/bin/mimesis-desktop")).unwrap();
        assert!(e.starts_with("[Desktop Entry]\nType=Application\nName=Mimesis\n"), "{e}");
        assert!(e.contains("\nExec=/usr/bin/mimesis-desktop --hidden\nTryExec=/usr/bin/mimesis-desktop\n"), "{e}");
        let e = entry(Path::new("/opt/my apps/100%/\"m\"$x\\mimesis-desktop")).unwrap();
        assert!(
            e.contains("\nExec=\"/opt/my apps/100%%/\\\\\"m\\\\\"\\\\$x\\\\\\\\mimesis-desktop\" --hidden\n"),
            "{e}"
        );
        assert!(e.contains("\nTryExec=/opt/my apps/100%/\"m\"$x\\\\mimesis-desktop\n"), "{e}");
        assert_eq!(entry(Path::new("/tmp/a\nExec=evil")), None);
    }

    #[test]
    fn on_writes_off_removes_only_ours() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cfg/autostart").join(FILE_NAME);
        set(&p, None).unwrap();
        assert!(!p.exists(), "off with nothing there");
        set(&p, Some(Path::new("/usr/bin/mimesis-desktop"))).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), entry(Path::new("/usr/bin/mimesis-desktop")).unwrap());
        set(&p, Some(Path::new("/opt/m/mimesis-desktop"))).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("Exec=/opt/m/mimesis-desktop --hidden"));
        set(&p, None).unwrap();
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 0, "no temporary file left");
        std::fs::write(&p, "[Desktop Entry]\nExec=my-own-launcher\n").unwrap();
        set(&p, None).unwrap();
        assert!(p.exists(), "a user's own entry of that name stays");
    }
}
