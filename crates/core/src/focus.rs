//! "Open terminal" for a session running in the user's own terminal (issue 12): from what
//! its hooks recorded (tmux pane and server, kitty window, WezTerm pane) or its live registry
//! entry (2.1.330 names its tmux pane), the commands that bring that terminal forward. Pure:
//! the faces run the commands (never through a shell) and say plainly when there is none.
//!
//! Every id comes from an environment variable of the session's own process, or the CLI's
//! registry file: each is checked to be the plain id it should be before it is an argument.

use crate::hook_event::TerminalContext;

/// One program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub argv: Vec<String>,
    /// Its failure does not fail the whole (e.g. no tmux client is attached to switch).
    pub optional: bool,
}

/// What brings a session's terminal forward, and how to say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// "tmux pane %3", "kitty window 4"…
    pub what: String,
}

/// The terminal pane a session runs in, as Mimesis can address it: each id a plain id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pane {
    pub kind: PaneKind,
    /// `%7` (tmux), `4` (kitty window), `3` (WezTerm pane).
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneKind {
    /// On the server of `socket` (the first field of `$TMUX`), else the default one.
    Tmux {
        socket: Option<String>,
    },
    Kitty,
    Wezterm,
}

impl Pane {
    /// "tmux pane %3", "kitty window 4"…
    pub fn what(&self) -> String {
        match self.kind {
            PaneKind::Tmux { .. } => format!("tmux pane {}", self.id),
            PaneKind::Kitty => format!("kitty window {}", self.id),
            PaneKind::Wezterm => format!("WezTerm pane {}", self.id),
        }
    }

    /// `tmux [-S socket]`, `kitty @`, `wezterm cli`: the start of every command for it.
    pub fn program(&self) -> Vec<String> {
        let words: Vec<&str> = match &self.kind {
            PaneKind::Tmux { socket: Some(s) } => vec!["tmux", "-S", s],
            PaneKind::Tmux { socket: None } => vec!["tmux"],
            PaneKind::Kitty => vec!["kitty", "@"],
            PaneKind::Wezterm => vec!["wezterm", "cli"],
        };
        words.into_iter().map(str::to_owned).collect()
    }
}

/// The pane of a session, from its hooks' terminal context and, failing that, the tmux
/// field of its live registry entry (`session:@window.%pane`): the tmux pane first, then the
/// kitty window, then the WezTerm pane. Ids that are not plain ids are never used.
pub fn pane_of(ctx: Option<&TerminalContext>, registry_tmux: Option<&str>) -> Option<Pane> {
    let ctx = ctx.cloned().unwrap_or_default();
    let tmux = ctx.tmux_pane.clone().or_else(|| registry_tmux.and_then(|t| t.rsplit('.').next()).map(str::to_owned));
    if let Some(pane) = tmux.filter(|p| is_id(p.strip_prefix('%').unwrap_or(""))) {
        let socket = ctx.tmux_socket.filter(|s| s.starts_with('/') && !s.contains(".."));
        return Some(Pane { kind: PaneKind::Tmux { socket }, id: pane });
    }
    if let Some(w) = ctx.kitty_window_id.filter(|w| is_id(w)) {
        return Some(Pane { kind: PaneKind::Kitty, id: w });
    }
    ctx.wezterm_pane.filter(|p| is_id(p)).map(|p| Pane { kind: PaneKind::Wezterm, id: p })
}

/// Why a session's terminal cannot be brought forward: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    #[error(
        "its terminal ({tty}) is not one Mimesis can bring forward: it can focus tmux panes, kitty windows and WezTerm panes"
    )]
    Unsupported { tty: String },
    #[error(
        "Mimesis does not know its terminal: install Mimesis's hooks (`mimesis hooks install`) and it learns it at the session's next event"
    )]
    Unknown,
}

/// The plan for a session, from its hooks' terminal context and, failing that, the tmux
/// field of its live registry entry (`session:@window.%pane`). `Err` says why none.
pub fn plan(ctx: Option<&TerminalContext>, registry_tmux: Option<&str>) -> Result<Plan, NoPlan> {
    let Some(pane) = pane_of(ctx, registry_tmux) else {
        return Err(match ctx.and_then(|c| c.tty.as_deref()) {
            Some(tty) => NoPlan::Unsupported { tty: tty.to_owned() },
            None => NoPlan::Unknown,
        });
    };
    let step = |verb: &[&str], optional| {
        let mut argv = pane.program();
        argv.extend(verb.iter().map(|s| (*s).to_owned()));
        Step { argv, optional }
    };
    let id = pane.id.as_str();
    let steps = match pane.kind {
        PaneKind::Tmux { .. } => vec![
            // The client last used goes to the pane's session (none attached: no matter).
            step(&["switch-client", "-t", id], true),
            step(&["select-window", "-t", id], false),
            step(&["select-pane", "-t", id], false),
        ],
        PaneKind::Kitty => vec![step(&["focus-window", "--match", &format!("id:{id}")], false)],
        PaneKind::Wezterm => vec![step(&["activate-pane", "--pane-id", id], false)],
    };
    Ok(Plan { steps, what: pane.what() })
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tmux_pane_is_selected_on_its_own_server() {
        let ctx = TerminalContext {
            tmux_pane: Some("%7".into()),
            tmux_socket: Some("/tmp/tmux-0/work".into()),
            ..Default::default()
        };
        let p = plan(Some(&ctx), None).unwrap();
        assert_eq!(p.what, "tmux pane %7");
        let argvs: Vec<String> = p.steps.iter().map(|s| s.argv.join(" ")).collect();
        assert_eq!(
            argvs,
            [
                "tmux -S /tmp/tmux-0/work switch-client -t %7",
                "tmux -S /tmp/tmux-0/work select-window -t %7",
                "tmux -S /tmp/tmux-0/work select-pane -t %7"
            ]
        );
        assert!(p.steps[0].optional && !p.steps[1].optional);
    }

    #[test]
    fn the_registry_names_the_pane_when_no_hook_did() {
        let p = plan(None, Some("main:@2.%11")).unwrap();
        assert_eq!(p.steps[1].argv, ["tmux", "select-window", "-t", "%11"]);
    }

    #[test]
    fn ids_that_are_not_plain_ids_are_never_arguments() {
        let evil = TerminalContext {
            tmux_pane: Some("%1; rm -rf ~".into()),
            tmux_socket: Some("relative/../sock".into()),
            kitty_window_id: Some("-o x".into()),
            wezterm_pane: Some("3".into()),
            ..Default::default()
        };
        let p = plan(Some(&evil), Some("s:@1.%2 -x")).unwrap();
        assert_eq!(p.what, "WezTerm pane 3", "only the plain id is used");
        let e = plan(Some(&TerminalContext { tty: Some("pts/4".into()), ..Default::default() }), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pts/4") && e.contains("tmux panes"), "{e}");
        assert!(plan(None, None).unwrap_err().to_string().contains("mimesis hooks install"));
    }
}
