//! Reading and typing into the terminal pane a session runs in, as commands for the
//! terminal's own remote control (run without a shell; every id a plain id,
//! [`crate::focus::pane_of`]): `tmux capture-pane` / `send-keys`, `kitty @ get-text` /
//! `send-text`, `wezterm cli get-text` / `send-text --no-paste`. One command per key:
//! a TUI reads a burst of escape sequences as one.

pub use crate::focus::{Pane, PaneKind};

/// The command that prints the pane's visible screen as plain text, one row a line.
pub fn capture_argv(pane: &Pane) -> Vec<String> {
    let mut argv = pane.program();
    let id = pane.id.as_str();
    let rest: Vec<String> = match pane.kind {
        PaneKind::Tmux { .. } => vec!["capture-pane".into(), "-p".into(), "-t".into(), id.into()],
        PaneKind::Kitty => {
            vec!["get-text".into(), "--match".into(), format!("id:{id}"), "--extent".into(), "screen".into()]
        }
        PaneKind::Wezterm => vec!["get-text".into(), "--pane-id".into(), id.into()],
    };
    argv.extend(rest);
    argv
}

/// The command that types one key (the bytes a terminal would send for it) into the pane,
/// or `None` for bytes that are not one of the keys an answer types.
pub fn send_argv(pane: &Pane, key: &[u8]) -> Option<Vec<String>> {
    let mut argv = pane.program();
    let id = pane.id.as_str();
    let rest: Vec<String> = match pane.kind {
        PaneKind::Tmux { .. } => {
            let name = match key {
                b"\r" => "Enter",
                b"\x1b" => "Escape",
                b"\x1b[Z" => "BTab",
                b"\x1b[A" => "Up",
                b"\x1b[B" => "Down",
                _ => {
                    let digits = std::str::from_utf8(key).ok().filter(|s| is_digits(s))?;
                    // `-l`: the digits as text, never read as a key's name.
                    return Some(
                        [argv, vec!["send-keys".into(), "-t".into(), id.into(), "-l".into(), digits.into()]].concat(),
                    );
                }
            };
            vec!["send-keys".into(), "-t".into(), id.into(), name.into()]
        }
        // kitty reads the text with Python's escapes (`\x1b`, `\r`).
        PaneKind::Kitty => vec!["send-text".into(), "--match".into(), format!("id:{id}"), kitty_escaped(key)?],
        PaneKind::Wezterm => {
            vec!["send-text".into(), "--pane-id".into(), id.into(), "--no-paste".into(), known_key(key)?.into()]
        }
    };
    argv.extend(rest);
    Some(argv)
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit())
}

/// `key` as text, if it is one of the keys an answer types.
fn known_key(key: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(key).ok()?;
    (matches!(key, b"\r" | b"\x1b" | b"\x1b[Z" | b"\x1b[A" | b"\x1b[B") || is_digits(s)).then_some(s)
}

fn kitty_escaped(key: &[u8]) -> Option<String> {
    let s = known_key(key)?;
    Some(s.chars().map(|c| if c.is_ascii_graphic() { c.to_string() } else { format!("\\x{:02x}", c as u32) }).collect())
}
