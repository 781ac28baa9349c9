//! The dialog on an agent's screen (a permission prompt, a question, plan mode's exit),
//! read from the terminal's rows, and the keys that choose one of its options **by label**:
//! never by position or a bare Enter, because the dialogs differ between versions and modes
//! (2.1.197 numbers "1. Yes … 3. No", 2.1.330 "1. Yes … 4. No", and its auto-mode dialog
//! lists "❯ No / Yes" unnumbered with No preselected; docs/claude-code-observed.md).
//!
//! "Approve" is the option labelled plainly "Yes": never "Yes, and always allow …", which
//! would change the user's settings on their behalf.

/// A dialog as the screen shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dialog {
    /// Its question row ("Do you want to proceed?").
    pub question: String,
    /// The rows just above the question (the tool and its target), at most three.
    pub context: Vec<String>,
    pub options: Vec<DialogOption>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogOption {
    /// Its number when the options are numbered ("4. No").
    pub number: Option<u32>,
    pub label: String,
    /// Marked `❯`: what Enter would choose.
    pub selected: bool,
}

/// What the user chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Allow this one call: the option labelled "Yes".
    Approve,
    /// Refuse it: the first option whose label begins with "No".
    Deny,
    /// The option with this label (or the only one that begins with it).
    Option(String),
}

/// Arrow keys of a terminal in its normal cursor mode.
pub const KEY_DOWN: &[u8] = b"\x1b[B";
pub const KEY_UP: &[u8] = b"\x1b[A";

impl Dialog {
    /// The last dialog on `rows`: a row ending in `?`, then its options (numbered ones,
    /// else short rows, one of them marked `❯`). `None` when the rows show no options under
    /// a question (a prompt, a reply that asks something in prose).
    pub fn read(rows: &[String]) -> Option<Dialog> {
        let mut dialog: Option<Dialog> = None;
        for (i, row) in rows.iter().enumerate() {
            let t = row.trim();
            if t.ends_with('?') && !t.starts_with('❯') {
                let context = rows[i.saturating_sub(3)..i].iter().map(|r| r.trim().to_owned()).collect();
                dialog = Some(Dialog { question: t.to_owned(), context, options: Vec::new() });
                continue;
            }
            let Some(d) = dialog.as_mut() else { continue };
            let (selected, rest) = match t.strip_prefix('❯') {
                Some(r) => (true, r.trim_start()),
                None => (false, t),
            };
            if rest.is_empty() || rest.starts_with("Esc") || rest.starts_with("Enter") || rest.starts_with('─') {
                continue;
            }
            let (number, label) = match rest.split_once(". ") {
                Some((n, l)) if !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit()) => {
                    (n.parse().ok(), l.trim())
                }
                _ => (None, rest),
            };
            // Unnumbered options are a word or a few, not the dialog's prose.
            if number.is_some() || label.split_whitespace().count() <= 3 {
                d.options.push(DialogOption { number, label: label.to_owned(), selected });
            }
        }
        let mut d = dialog?;
        // Numbered lists have description rows under their options: only the numbered count.
        if d.options.iter().any(|o| o.number.is_some()) {
            d.options.retain(|o| o.number.is_some());
        }
        // A question with a single candidate row, or none marked, is prose, not a menu.
        let menu = d.options.len() >= 2 && (d.options.iter().any(|o| o.selected || o.number.is_some()));
        menu.then_some(d)
    }

    /// The same dialog, whichever option is marked (moving the mark does not answer it).
    pub fn same_as(&self, other: &Dialog) -> bool {
        let labels = |d: &Dialog| d.options.iter().map(|o| (o.number, o.label.clone())).collect::<Vec<_>>();
        self.question == other.question && self.context == other.context && labels(self) == labels(other)
    }

    /// The option `answer` means, or why there is none.
    pub fn find(&self, answer: &Answer) -> Result<&DialogOption, String> {
        let found = match answer {
            Answer::Approve => self.options.iter().find(|o| o.label == "Yes"),
            Answer::Deny => self.options.iter().find(|o| o.label == "No" || o.label.starts_with("No,")),
            Answer::Option(label) => {
                let exact = self.options.iter().find(|o| &o.label == label);
                let starting: Vec<_> = self.options.iter().filter(|o| o.label.starts_with(label.as_str())).collect();
                exact.or(if starting.len() == 1 { Some(starting[0]) } else { None })
            }
        };
        found.ok_or_else(|| {
            let labels: Vec<&str> = self.options.iter().map(|o| o.label.as_str()).collect();
            let what = match answer {
                Answer::Approve => "a plain \"Yes\"".to_owned(),
                Answer::Deny => "a \"No\"".to_owned(),
                Answer::Option(l) => format!("{l:?}"),
            };
            format!("the dialog \"{}\" has no option {what} (it offers: {})", self.question, labels.join(" · "))
        })
    }

    /// The keys that choose `answer`, each to be written on its own (a TUI reads a burst of
    /// escape sequences as one): its digit when numbered, else the arrow keys from the
    /// marked option to it, then Enter.
    pub fn keys(&self, answer: &Answer) -> Result<Vec<Vec<u8>>, String> {
        let option = self.find(answer)?;
        if let Some(n) = option.number {
            return Ok(vec![n.to_string().into_bytes()]);
        }
        let target = self.options.iter().position(|o| o == option).expect("found among them");
        let Some(at) = self.options.iter().position(|o| o.selected) else {
            return Err(format!("the dialog \"{}\" marks no option: nothing can be chosen safely", self.question));
        };
        let key = if target > at { KEY_DOWN } else { KEY_UP };
        let mut keys = vec![key.to_vec(); target.abs_diff(at)];
        keys.push(b"\r".to_vec());
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    const V197: &str = "⏺ Bash(echo hi)\n Bash command\n   echo hi\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to this command\n   3. No, and tell Claude what to do differently (esc)\n";
    const V330: &str = " Bash command\n   rm -rf build\n   Remove the build folder\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to build/ from this project\n   3. Yes, and switch to auto mode\n   4. No\n\n Esc to cancel · Tab to amend";
    const AUTO: &str = " Auto mode can't check this action, so this one needs your approval\n   curl example.com\n Do you want to proceed?\n ❯ No\n   Yes\n";

    #[test]
    fn numbered_dialogs_are_answered_by_the_digit_of_the_label() {
        for screen in [V197, V330] {
            let d = Dialog::read(&rows(screen)).expect("a dialog");
            assert_eq!(d.question, "Do you want to proceed?");
            assert_eq!(d.keys(&Answer::Approve).unwrap(), [b"1".to_vec()]);
        }
        let d = Dialog::read(&rows(V197)).unwrap();
        assert_eq!(d.keys(&Answer::Deny).unwrap(), [b"3".to_vec()]);
        let d = Dialog::read(&rows(V330)).unwrap();
        assert_eq!(d.options.len(), 4, "{d:?}");
        assert_eq!(d.keys(&Answer::Deny).unwrap(), [b"4".to_vec()], "2.1.330 numbers No fourth");
        assert_eq!(d.keys(&Answer::Option("Yes, and switch".into())).unwrap(), [b"3".to_vec()]);
    }

    #[test]
    fn an_unnumbered_dialog_is_answered_by_arrows_from_the_marked_option() {
        let d = Dialog::read(&rows(AUTO)).expect("a dialog");
        // No is preselected: Approve moves down to Yes first; a bare Enter would deny.
        assert_eq!(d.keys(&Answer::Approve).unwrap(), [KEY_DOWN.to_vec(), b"\r".to_vec()]);
        assert_eq!(d.keys(&Answer::Deny).unwrap(), [b"\r".to_vec()]);
        let moved = AUTO.replace("❯ No", "  No").replace("   Yes", " ❯ Yes");
        let d2 = Dialog::read(&rows(&moved)).unwrap();
        assert_eq!(d2.keys(&Answer::Deny).unwrap(), [KEY_UP.to_vec(), b"\r".to_vec()]);
        assert!(d2.same_as(&d) && d2 != d, "moving the mark does not make another dialog");
    }

    #[test]
    fn approve_never_means_always_allow() {
        let only_always = rows(" Do you want to proceed?\n ❯ 1. Yes, and always allow access\n   2. No\n");
        let d = Dialog::read(&only_always).unwrap();
        let e = d.keys(&Answer::Approve).unwrap_err();
        assert!(e.contains("no option a plain \"Yes\"") && e.contains("Yes, and always allow access"), "{e}");
        let d = Dialog::read(&rows(V330)).unwrap();
        let e = d.keys(&Answer::Option("Yes, and".into())).unwrap_err();
        assert!(e.contains("\"Yes, and\""), "an ambiguous prefix is refused: {e}");
    }

    #[test]
    fn prose_and_prompts_are_not_dialogs() {
        assert_eq!(Dialog::read(&rows("⏺ Shall I go on?\n\n────\n❯ \n────\n  ? for shortcuts")), None);
        assert_eq!(Dialog::read(&rows("What next?\nI could refactor the parser and add tests.")), None);
        assert_eq!(Dialog::read(&[]), None);
    }
}
