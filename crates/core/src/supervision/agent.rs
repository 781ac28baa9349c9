//! The program a supervised session runs (SPEC P1), and whether it is Claude Code-like
//! (resumed and recovered) or only monitored (P4).

use std::path::PathBuf;

use super::policy::AgentKind;

/// The program a session runs, and how.
#[derive(Clone, Debug)]
pub struct AgentCommand {
    pub program: PathBuf,
    /// Given before the `--session-id` / `--resume` arguments Mimesis adds.
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub kind: AgentKind,
}

impl AgentCommand {
    /// `program` with no arguments; claude-like (recovered, resumed) when its file name
    /// contains `claude`, or is Mimesis's own stand-in; else monitored only (P4).
    pub fn new(program: impl Into<PathBuf>) -> AgentCommand {
        let program = program.into();
        let name = program.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        let kind = if name.contains("claude") || name == "mimesis-standin-agent" {
            AgentKind::ClaudeLike
        } else {
            AgentKind::MonitoredOnly
        };
        AgentCommand { program, args: Vec::new(), env: Vec::new(), kind }
    }

    pub fn display_name(&self) -> String {
        self.program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}
