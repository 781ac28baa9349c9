//! Where sessions live (SPEC W1), as this process's flags, environment and home say: the
//! Claude Code config roots, and Mimesis's own data dir. The layout inside a root is
//! `mimesis_core::layout`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The config roots to watch.
///
/// `explicit` (`--config-dir`, repeatable) overrides everything; else `$CLAUDE_CONFIG_DIR`
/// (a comma-separated list is allowed); else `~/.claude`, plus `~/.config/claude` when it
/// exists. Relative paths are made absolute against the current directory (a watcher and
/// an agent started elsewhere must agree on them). Duplicates are dropped, order is kept.
pub fn resolve(explicit: &[PathBuf], env: Option<&OsStr>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = if !explicit.is_empty() {
        explicit.to_vec()
    } else if let Some(list) = env.and_then(OsStr::to_str).filter(|s| !s.trim().is_empty()) {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| expand_home(s, home)).collect()
    } else {
        let mut v = Vec::new();
        if let Some(h) = home {
            v.push(h.join(".claude"));
            let xdg = h.join(".config/claude");
            if xdg.is_dir() {
                v.push(xdg);
            }
        }
        v
    };
    for r in &mut roots {
        *r = absolute(r);
    }
    let mut seen = std::collections::HashSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    roots
}

/// `path` made absolute against the current directory, lexically (no symlink is resolved,
/// so the path need not exist). Unchanged if the current directory is unknown.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

fn expand_home(s: &str, home: Option<&Path>) -> PathBuf {
    match (s.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(s),
    }
}

/// The roots for this process: its `--config-dir` flags, environment and home.
pub fn from_env(explicit: &[PathBuf]) -> Vec<PathBuf> {
    resolve(explicit, std::env::var_os("CLAUDE_CONFIG_DIR").as_deref(), dirs::home_dir().as_deref())
}

/// Mimesis's own data: `$MIMESIS_DATA_DIR`, else the platform data dir
/// (`~/.local/share/mimesis`).
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MIMESIS_DATA_DIR").filter(|d| !d.is_empty()) {
        return absolute(Path::new(&d));
    }
    dirs::data_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/share")))
        .unwrap_or_else(std::env::temp_dir)
        .join("mimesis")
}

pub use mimesis_core::layout::{project_dir_name, projects_dir, sessions_dir};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folder_names_replace_every_other_character() {
        assert_eq!(project_dir_name(Path::new("/home/me/.agents")), "-home-me--agents");
        assert_eq!(project_dir_name(Path::new("/tmp/a b/ü_x")), "-tmp-a-b---x");
    }

    #[test]
    fn explicit_dirs_override_everything() {
        let r =
            resolve(&[PathBuf::from("/a"), PathBuf::from("/a"), PathBuf::from("/b")], Some(OsStr::new("/env")), None);
        assert_eq!(r, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    #[test]
    fn relative_roots_become_absolute() {
        let cwd = std::env::current_dir().unwrap();
        let r = resolve(&[PathBuf::from("cfg"), PathBuf::from("./cfg")], None, None);
        assert_eq!(r, vec![cwd.join("cfg")]);
        let r = resolve(&[], Some(OsStr::new("rel/a")), None);
        assert_eq!(r, vec![cwd.join("rel/a")]);
    }

    #[test]
    fn env_is_a_comma_separated_list() {
        let r = resolve(&[], Some(OsStr::new(" /x , ~/y,,")), Some(Path::new("/home/me")));
        assert_eq!(r, vec![PathBuf::from("/x"), PathBuf::from("/home/me/y")]);
    }

    #[test]
    fn default_is_home_claude_plus_xdg_when_present() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(resolve(&[], None, Some(d.path())), vec![d.path().join(".claude")]);
        std::fs::create_dir_all(d.path().join(".config/claude")).unwrap();
        assert_eq!(
            resolve(&[], Some(OsStr::new("")), Some(d.path())),
            vec![d.path().join(".claude"), d.path().join(".config/claude")]
        );
    }
}
