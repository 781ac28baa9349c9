//! The settings files whose permission rules apply to a session (SPEC W5), read from disk
//! and kept parsed until a file's modification time or size changes. What the rules mean
//! is `mimesis_core::permissions`. Settings files are untrusted: an invalid one is logged
//! and ignored, never fatal.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use mimesis_core::permissions::{Context, MAX_SETTINGS_BYTES, Rules, rules_from};

type Stamp = (Option<SystemTime>, u64);

/// Parsed settings files, re-read only when their modification time or size changes.
#[derive(Default)]
pub struct SettingsCache {
    files: HashMap<PathBuf, (Stamp, Arc<Rules>)>,
    home: Option<PathBuf>,
}

/// Managed policy settings (system-wide, highest priority).
const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

impl SettingsCache {
    pub fn new(home: Option<PathBuf>) -> Self {
        SettingsCache { files: HashMap::new(), home }
    }

    /// The merged rules for a session of `root` running in `cwd`.
    pub fn rules_for(&mut self, root: &Path, cwd: Option<&Path>) -> Rules {
        let home = self.home.clone();
        let user_base = home.as_deref().unwrap_or(root).to_owned();
        let mut files =
            vec![(root.join("settings.json"), user_base.clone()), (root.join("settings.local.json"), user_base)];
        if let Some(cwd) = cwd {
            files.push((cwd.join(".claude/settings.json"), cwd.to_owned()));
            files.push((cwd.join(".claude/settings.local.json"), cwd.to_owned()));
        }
        files.push((PathBuf::from(MANAGED_SETTINGS), PathBuf::from("/")));
        let mut merged = Rules::default();
        for (path, base) in files {
            if let Some(r) = self.load(&path, &base) {
                merged.merge(&r);
            }
        }
        merged
    }

    pub fn context<'a>(&'a self, cwd: &'a Path) -> Context<'a> {
        Context { cwd, home: self.home.as_deref() }
    }

    fn load(&mut self, path: &Path, base: &Path) -> Option<Arc<Rules>> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(_) => {
                self.files.remove(path);
                return None;
            }
        };
        let stamp = (meta.modified().ok(), meta.len());
        if let Some((s, rules)) = self.files.get(path)
            && *s == stamp
        {
            return Some(rules.clone());
        }
        let rules = match mimesis_os::files::read_regular(path, MAX_SETTINGS_BYTES, mimesis_os::files::Links::Follow) {
            Ok(bytes) => match rules_from(&bytes, base) {
                Ok(r) => Arc::new(r),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e,
                        "settings file is not valid JSON; its permission rules are ignored until it is fixed");
                    Arc::new(Rules::default())
                }
            },
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "settings file could not be read");
                return None;
            }
        };
        self.files.insert(path.to_owned(), (stamp, rules.clone()));
        Some(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_files_merge_and_invalid_ones_are_ignored() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".claude");
        let cwd = d.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(cwd.join(".claude")).unwrap();
        std::fs::write(root.join("settings.json"), r#"{"permissions":{"allow":["Bash(ls)"],"defaultMode":"default"}}"#)
            .unwrap();
        std::fs::write(cwd.join(".claude/settings.json"), r#"{"permissions":{"allow":["Bash(make)", 7]}}"#).unwrap();
        std::fs::write(cwd.join(".claude/settings.local.json"), "{ not json").unwrap();
        let mut cache = SettingsCache::new(None);
        let r = cache.rules_for(&root, Some(&cwd));
        let tools: Vec<_> = r.allow.iter().map(|r| r.spec.clone().unwrap()).collect();
        assert_eq!(tools, vec!["ls", "make"]);
        // Fixing the file is picked up (size changed).
        std::fs::write(cwd.join(".claude/settings.local.json"), r#"{"permissions":{"ask":["Bash(make)"]}}"#).unwrap();
        let r = cache.rules_for(&root, Some(&cwd));
        assert_eq!(r.ask.len(), 1);
    }
}
