//! The git repository a session works in: its root, found by walking up from the cwd.

use std::path::Path;

/// The nearest ancestor of `cwd` (itself included) holding a `.git` folder or file
/// (worktrees and submodules use a file). `None` when there is none or cwd is gone.
pub fn repo_root(cwd: &Path) -> Option<&Path> {
    if !cwd.is_absolute() {
        return None;
    }
    cwd.ancestors().find(|dir| dir.join(".git").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_git_folder() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        assert_eq!(repo_root(&repo.join("src/deep")), Some(repo.as_path()));
        std::fs::write(repo.join("src/.git"), "gitdir: ../.git/modules/src").unwrap();
        assert_eq!(repo_root(&repo.join("src/deep")), Some(repo.join("src").as_path()));
        assert_eq!(repo_root(Path::new("relative")), None);
    }
}
