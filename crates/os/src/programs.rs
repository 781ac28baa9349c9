//! Finding Claude Code's `claude` when it is not on the PATH Mimesis was started with.
//!
//! A desktop app started from the system's menu gets the session's PATH, not the one a
//! terminal builds: `claude` installed with npm under nvm (nvm is set up by `~/.bashrc`), or
//! by Claude Code's own installer into `~/.local/bin` after the session began, is on the
//! user's PATH in a terminal and on none in the app. Where the program to run is the bare
//! name `claude` (the default agent, and Claude Code's verbs), it is looked for on the PATH
//! first, then in the places its installers put it ([`claude_places`]); a `claude` found
//! there runs with its own folder put first on its PATH, so that npm's script finds the
//! `node` beside it. Any other program is run as given.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The bare program name looked for beyond the PATH.
pub const CLAUDE: &str = "claude";

/// A program found for a bare name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub program: PathBuf,
    /// Found on the PATH (else in one of [`claude_places`]).
    pub on_path: bool,
}

impl Found {
    /// The PATH to run it with: `path` as it is when it was found there, else with the
    /// program's folder first.
    pub fn path_for_child(&self, path: Option<&OsStr>) -> Option<OsString> {
        if self.on_path {
            return path.map(OsStr::to_owned);
        }
        let dir = self.program.parent()?;
        let rest = path.map(|p| std::env::split_paths(p).collect::<Vec<_>>()).unwrap_or_default();
        std::env::join_paths(std::iter::once(dir.to_owned()).chain(rest)).ok()
    }
}

/// An executable file named `name` in one of the folders of `path` (a PATH value).
pub fn on_path(name: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?).map(|d| d.join(name)).find(|p| is_executable(p))
}

/// `program` as it will run: a bare `claude` on `path` or in [`claude_places`] under `home`;
/// any other program (a path, or another name) is not looked for here and gives `None`.
pub fn locate(program: &Path, path: Option<&OsStr>, home: Option<&Path>) -> Option<Found> {
    if program.as_os_str() != CLAUDE {
        return None;
    }
    if let Some(p) = on_path(program.as_os_str(), path) {
        return Some(Found { program: p, on_path: true });
    }
    let home = home?;
    claude_places(home)
        .into_iter()
        .map(|d| d.join(CLAUDE))
        .find(|p| is_executable(p))
        .map(|program| Found { program, on_path: false })
}

/// [`locate`] with this process's PATH and HOME.
pub fn locate_here(program: &Path) -> Option<Found> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    locate(program, std::env::var_os("PATH").as_deref(), home.as_deref())
}

/// How to start `program` from here: a bare `claude` off the PATH where [`locate_here`] finds
/// it, with the PATH its child needs (its folder first); anything else as given, with no PATH
/// to set.
pub fn to_run(program: &Path) -> (PathBuf, Option<OsString>) {
    match locate_here(program).filter(|f| !f.on_path) {
        Some(f) => {
            let path = f.path_for_child(std::env::var_os("PATH").as_deref());
            (f.program, path)
        }
        None => (program.to_owned(), None),
    }
}

/// The folders Claude Code's installers put `claude` in, most likely first: its own installer
/// (`~/.local/bin`) and its older local install (`~/.claude/local`), then npm's global folder
/// as nvm (the newest Node version first), a user prefix, Volta, Bun and pnpm set it up.
pub fn claude_places(home: &Path) -> Vec<PathBuf> {
    let mut v = vec![home.join(".local/bin"), home.join(".claude/local")];
    v.extend(nvm_bins(&home.join(".nvm/versions/node")));
    v.extend([
        home.join(".npm-global/bin"),
        home.join(".npm/bin"),
        home.join(".volta/bin"),
        home.join(".bun/bin"),
        home.join(".local/share/pnpm"),
    ]);
    v
}

/// nvm's `bin` folders, the newest Node version first (`v22.3.0` before `v9.11.2`).
fn nvm_bins(versions: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(versions) else { return Vec::new() };
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let numbers = name.strip_prefix('v')?.split('.').map(|n| n.parse().ok()).collect::<Option<Vec<u64>>>()?;
            Some((numbers, e.path().join("bin")))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, p)| p).collect()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(at: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_path_goes_first_then_the_installers_places() {
        let d = tempfile::tempdir().unwrap();
        let (home, bin) = (d.path().join("home"), d.path().join("bin"));
        std::fs::create_dir_all(&bin).unwrap();
        let path = std::env::join_paths([&bin]).unwrap();
        let claude = Path::new(CLAUDE);
        assert_eq!(locate(claude, Some(&path), Some(&home)), None, "nowhere yet");

        program(&home.join(".nvm/versions/node/v9.11.2/bin/claude"));
        program(&home.join(".nvm/versions/node/v22.3.0/bin/claude"));
        std::fs::create_dir_all(home.join(".nvm/versions/node/system")).unwrap();
        let found = locate(claude, Some(&path), Some(&home)).unwrap();
        assert_eq!(found.program, home.join(".nvm/versions/node/v22.3.0/bin/claude"), "the newest Node first");
        assert!(!found.on_path);
        let child_path = found.path_for_child(Some(&path)).unwrap();
        assert_eq!(
            std::env::split_paths(&child_path).collect::<Vec<_>>(),
            vec![home.join(".nvm/versions/node/v22.3.0/bin"), bin.clone()],
            "its folder first, for the node beside it"
        );

        program(&home.join(".local/bin/claude"));
        assert_eq!(locate(claude, Some(&path), Some(&home)).unwrap().program, home.join(".local/bin/claude"));

        program(&bin.join("claude"));
        let found = locate(claude, Some(&path), Some(&home)).unwrap();
        assert_eq!(found, Found { program: bin.join("claude"), on_path: true });
        assert_eq!(found.path_for_child(Some(&path)), Some(path.clone()), "the PATH as it is");
    }

    #[test]
    fn only_a_bare_claude_is_looked_for_and_only_an_executable_file_counts() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        program(&home.join(".local/bin/claude"));
        program(&home.join(".local/bin/other"));
        for given in ["other", "./claude", "/usr/bin/claude", "claude-code"] {
            assert_eq!(locate(Path::new(given), None, Some(home)), None, "{given}");
        }
        std::fs::create_dir_all(home.join(".claude/local")).unwrap();
        std::fs::write(home.join(".claude/local/claude"), "not executable").unwrap();
        std::fs::remove_file(home.join(".local/bin/claude")).unwrap();
        std::fs::create_dir_all(home.join(".npm-global/bin/claude")).unwrap();
        assert_eq!(locate(Path::new(CLAUDE), None, Some(home)), None, "a plain file and a folder are not programs");
        assert_eq!(locate(Path::new(CLAUDE), None, None), None, "no home: only the PATH");
    }
}
