//! The dialog on an agent's screen (a permission prompt, auto mode's own dialog, a
//! question, plan mode's exit), read from the terminal's rows, and the keys that choose
//! one of its options **by label**: never by position or a bare Enter, because the dialogs
//! differ between versions and modes (2.1.197 numbers "1. Yes … 3. No", 2.1.330 "1. Yes …
//! 4. No", and the per-call dialog of auto mode lists "❯ No / Yes" unnumbered with No
//! preselected; docs/claude-code-observed.md). Screens of 2.1.332 are in
//! `crates/core/tests/fixtures/cc-2.1.332/screens/`.
//!
//! What "approve" and "deny" mean depends on the dialog (docs/ipc.md, "Answering the default
//! mode"):
//!
//! | dialog | approve | deny |
//! |---|---|---|
//! | a tool call's permission | the option labelled plainly "Yes" (runs that call once) | the option "No" |
//! | auto mode's own ("Auto mode can't check actions in this session") | Enter: stay in auto mode; nothing runs yet, Claude Code then asks about the call itself | Esc: cancel; the call does not run and the turn stops |
//! | a question (AskUserQuestion) | the option the user names, per question | Esc: decline to answer |
//! | plan mode's exit | the "Yes, …" option that keeps asking before each action | the option "No": keep planning |
//!
//! "Approve" is never "Yes, and always allow …", "switch to auto mode" or any option that
//! changes the user's settings or the session's mode on their behalf
//! ([`DialogOption::changes_settings`]); such an option is chosen only when the user names
//! its label.

mod answering;

pub use answering::{ANSWER_WAIT, AnswerFailed, Answering, KEY_PAUSE, SETTLE, Step};

/// What kind of dialog it is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DialogKind {
    /// A tool call asks for permission ("Do you want to proceed?").
    Permission,
    /// Auto mode's own dialog: its safety check cannot run in this session ("Enter to stay in
    /// auto mode · shift+Tab to leave … · Esc to cancel"), before the call's own dialog.
    AutoMode,
    /// AskUserQuestion's question(s).
    Question,
    /// Plan mode's exit ("Exit plan mode?").
    Plan,
    /// Something else with options (a dialog Mimesis does not know).
    Other,
}

impl DialogKind {
    /// The kind in a few words, for sentences.
    pub fn words(self) -> &'static str {
        match self {
            DialogKind::Permission => "a permission dialog",
            DialogKind::AutoMode => "auto mode's dialog",
            DialogKind::Question => "a question",
            DialogKind::Plan => "plan mode's exit dialog",
            DialogKind::Other => "a dialog",
        }
    }
}

/// A key an option is chosen with, when the dialog names keys instead of listing options
/// (auto mode's dialog).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DialogKey {
    Enter,
    Escape,
    ShiftTab,
}

impl DialogKey {
    /// The bytes a terminal sends for it.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            DialogKey::Enter => b"\r",
            DialogKey::Escape => KEY_ESCAPE,
            DialogKey::ShiftTab => KEY_SHIFT_TAB,
        }
    }

    fn parse(s: &str) -> Option<DialogKey> {
        match s.to_ascii_lowercase().as_str() {
            "enter" | "return" => Some(DialogKey::Enter),
            "esc" | "escape" => Some(DialogKey::Escape),
            "shift+tab" => Some(DialogKey::ShiftTab),
            _ => None,
        }
    }
}

/// A dialog as the screen shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dialog {
    pub kind: DialogKind,
    /// Its question row ("Do you want to proceed?"), or its title for a dialog that asks
    /// none (auto mode's).
    pub question: String,
    /// The rows of its box above the question (the tool, its target, why it asks), at most six.
    pub context: Vec<String>,
    pub options: Vec<DialogOption>,
    /// What Esc does, when its footer says ("cancel").
    #[serde(skip)]
    pub escape: Option<String>,
    /// Every row of its box above the question (a long command wraps over many).
    #[serde(skip)]
    pub body: Vec<String>,
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
    /// The key that chooses it, when the dialog names keys ("Enter to stay in auto mode").
    pub key: Option<DialogKey>,
    /// Choosing it changes the user's settings or the session's mode for them ("always
    /// allow", "don't ask again", "switch to auto mode", leaving auto mode): never what
    /// approve means; offered in the terminal, or when the user names it.
    pub changes_settings: bool,
}

/// What the user chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// What approving means for the dialog on screen (the table above).
    Approve,
    /// What denying means for it.
    Deny,
    /// The option with this label (or the only one that begins with it).
    Option(String),
    /// A question's answer, by its question: the option labelled with the answer to the
    /// question on screen.
    ByQuestion(std::collections::BTreeMap<String, String>),
    /// `answer`, only if the dialog on screen is the one `expect` describes: else nothing is
    /// typed (an approval names what it approves).
    Checked { answer: Box<Answer>, expect: Expect },
}

/// The dialog an answer is meant for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    pub kind: DialogKind,
    /// The tool call's target (its command, file, URL) when known: a permission dialog on
    /// screen must show it.
    pub target: Option<String>,
}

/// Keys of a terminal in its normal cursor mode.
pub const KEY_DOWN: &[u8] = b"\x1b[B";
pub const KEY_UP: &[u8] = b"\x1b[A";
pub const KEY_ESCAPE: &[u8] = b"\x1b";
pub const KEY_SHIFT_TAB: &[u8] = b"\x1b[Z";

/// Options that change the user's settings or the session's mode when chosen.
const SETTING_CHANGING: &[&str] = &[
    "always allow",
    "don't ask again",
    "do not ask again",
    "switch to auto mode",
    "auto-accept",
    "allow all edits",
    "bypass",
    "leave for accept edits",
];

fn changes_settings(label: &str) -> bool {
    let l = label.to_lowercase();
    SETTING_CHANGING.iter().any(|s| l.contains(s))
}

/// A horizontal rule of the TUI: the top of a dialog's box, or around its prompt.
fn is_rule(row: &str) -> bool {
    let t = row.trim();
    t.chars().count() >= 8 && t.chars().all(|c| matches!(c, '─' | '━' | '▔' | '═'))
}

/// A separator inside a box (`╌╌╌` around a command).
fn is_separator(row: &str) -> bool {
    let t = row.trim();
    !t.is_empty() && t.chars().all(|c| matches!(c, '╌' | '┄' | '-' | '─'))
}

impl Dialog {
    /// The dialog at the bottom of `rows`: auto mode's own dialog (a title, prose and a
    /// footer that names keys), else the last row ending in `?` and its options (numbered
    /// ones, else short rows, one of them marked `❯`). `None` when the rows show no options
    /// under a question (a prompt, a reply that asks something in prose).
    pub fn read(rows: &[String]) -> Option<Dialog> {
        if let Some(d) = Self::read_auto_mode(rows) {
            return Some(d);
        }
        let mut found: Option<(usize, Dialog)> = None;
        for (i, row) in rows.iter().enumerate() {
            let t = row.trim();
            if t.ends_with('?') && !t.starts_with('❯') {
                let d = Dialog {
                    kind: DialogKind::Other,
                    question: t.to_owned(),
                    context: Vec::new(),
                    options: Vec::new(),
                    escape: None,
                    body: Vec::new(),
                };
                found = Some((i, d));
                continue;
            }
            let Some((_, d)) = found.as_mut() else { continue };
            if let Some(esc) = footer_escape(t) {
                d.escape = Some(esc);
            }
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
                d.options.push(DialogOption {
                    number,
                    label: label.to_owned(),
                    selected,
                    key: None,
                    changes_settings: changes_settings(label),
                });
            }
        }
        let (at, mut d) = found?;
        // The prompt's input box below it (a rule, `❯ …`, a rule): the dialog is gone, or
        // was only text in a reply.
        if rows[at..].windows(3).any(|w| is_rule(&w[0]) && w[1].trim_start().starts_with('❯') && is_rule(&w[2])) {
            return None;
        }
        // Numbered lists have description rows under their options: only the numbered count.
        if d.options.iter().any(|o| o.number.is_some()) {
            d.options.retain(|o| o.number.is_some());
        }
        // A question with a single candidate row, or none marked, is prose, not a menu.
        let menu = d.options.len() >= 2 && (d.options.iter().any(|o| o.selected || o.number.is_some()));
        if !menu {
            return None;
        }
        d.body = box_above(rows, at);
        d.context = d.body[d.body.len().saturating_sub(6)..].to_vec();
        d.kind = d.classify();
        Some(d)
    }

    /// Auto mode's own dialog: "Auto mode can't check actions in this session", prose, and
    /// a footer naming keys ("Enter to stay in auto mode · shift+Tab to leave for accept
    /// edits mode and stop · Esc to cancel") as the last row of the screen.
    fn read_auto_mode(rows: &[String]) -> Option<Dialog> {
        let last = rows.iter().rposition(|r| !r.trim().is_empty())?;
        let footer = rows[last].trim();
        if !footer.contains("Enter to stay in auto mode") {
            return None;
        }
        let top = rows[..last].iter().rposition(|r| is_rule(r)).map_or(0, |i| i + 1);
        let title = rows[top..last].iter().map(|r| r.trim()).find(|r| !r.is_empty())?;
        if !title.starts_with("Auto mode can't check actions") {
            return None;
        }
        let options: Vec<DialogOption> = footer
            .split(" · ")
            .filter_map(|part| {
                let (key, action) = part.trim().split_once(" to ")?;
                let key = DialogKey::parse(key.trim())?;
                let label = capitalized(action.trim());
                let settings = key == DialogKey::ShiftTab || changes_settings(&label);
                Some(DialogOption { number: None, label, selected: false, key: Some(key), changes_settings: settings })
            })
            .collect();
        (options.iter().any(|o| o.key == Some(DialogKey::Enter))).then(|| Dialog {
            kind: DialogKind::AutoMode,
            question: title.to_owned(),
            context: Vec::new(),
            options,
            escape: None,
            body: Vec::new(),
        })
    }

    /// The kind, from what the dialog asks and offers.
    fn classify(&self) -> DialogKind {
        let has = |l: &str| self.options.iter().any(|o| o.label == l);
        let q = self.question.as_str();
        if q.starts_with("Exit plan mode?") || q.starts_with("Would you like to proceed?") {
            DialogKind::Plan
        } else if has("Type something.") || has("Chat about this") || has("Submit answers") {
            DialogKind::Question
        } else if self.options.iter().any(|o| o.label == "Yes" || o.label.starts_with("Yes,"))
            && self.options.iter().any(|o| is_no(&o.label))
        {
            DialogKind::Permission
        } else {
            DialogKind::Other
        }
    }

    /// The same dialog, whichever option is marked (moving the mark does not answer it).
    pub fn same_as(&self, other: &Dialog) -> bool {
        let labels = |d: &Dialog| d.options.iter().map(|o| (o.number, o.label.clone())).collect::<Vec<_>>();
        self.kind == other.kind
            && self.question == other.question
            && self.context == other.context
            && labels(self) == labels(other)
    }

    /// Whether this is the dialog `expect` describes; why not in a sentence.
    pub fn check(&self, expect: &Expect) -> Result<(), DialogError> {
        if self.kind != expect.kind {
            return Err(DialogError::OtherKind {
                shown: self.kind,
                question: self.question.clone(),
                expected: expect.kind,
            });
        }
        if let (DialogKind::Permission, Some(target)) = (self.kind, expect.target.as_deref()) {
            let shown: String = self.body.iter().chain([&self.question]).flat_map(|r| r.chars()).collect();
            if !mentions(&shown, target) {
                return Err(DialogError::NotAbout { target: target.to_owned() });
            }
        }
        Ok(())
    }

    /// The option `answer` means, or why there is none. `Ok(None)`: Esc, which the dialog
    /// names in its footer (a question declined).
    pub fn find(&self, answer: &Answer) -> Result<Option<&DialogOption>, DialogError> {
        let found = match answer {
            Answer::Checked { answer, expect } => {
                self.check(expect)?;
                return self.find(answer);
            }
            Answer::Approve => self.approve_option()?,
            Answer::Deny => match self.kind {
                DialogKind::AutoMode => self.options.iter().find(|o| o.key == Some(DialogKey::Escape)),
                DialogKind::Question if self.escape.is_some() => return Ok(None),
                _ => self.options.iter().find(|o| is_no(&o.label)),
            },
            Answer::Option(label) => self.labelled(label),
            Answer::ByQuestion(answers) => match answers.get(&self.question) {
                Some(label) => self.labelled(label),
                None if self.options.iter().any(|o| o.label == "Submit answers") => self.labelled("Submit answers"),
                None => return Err(DialogError::NoAnswerGiven { question: self.question.clone() }),
            },
        };
        found.map(Some).ok_or_else(|| {
            let what = match answer {
                Answer::Approve => "a plain \"Yes\"".to_owned(),
                Answer::Deny => "a \"No\"".to_owned(),
                Answer::Option(l) => format!("{l:?}"),
                Answer::ByQuestion(a) => format!("{:?}", a.get(&self.question).map_or("", String::as_str)),
                Answer::Checked { .. } => unreachable!("checked above"),
            };
            DialogError::NoSuchOption { question: self.question.clone(), wanted: what, offers: self.labels() }
        })
    }

    /// The option with this label, or the only one that begins with it.
    fn labelled(&self, label: &str) -> Option<&DialogOption> {
        let exact = self.options.iter().find(|o| o.label == label);
        let starting: Vec<_> = self.options.iter().filter(|o| o.label.starts_with(label)).collect();
        exact.or(if starting.len() == 1 { Some(starting[0]) } else { None })
    }

    /// What approving means here (see the module's table); `None` when there is no such option.
    fn approve_option(&self) -> Result<Option<&DialogOption>, DialogError> {
        Ok(match self.kind {
            DialogKind::AutoMode => self.options.iter().find(|o| o.key == Some(DialogKey::Enter)),
            DialogKind::Question => {
                return Err(DialogError::NameAnOption { question: self.question.clone(), offers: self.labels() });
            }
            DialogKind::Plan => {
                let yes: Vec<&DialogOption> =
                    self.options.iter().filter(|o| o.label.starts_with("Yes") && !o.changes_settings).collect();
                let asking = |o: &&DialogOption| {
                    let l = o.label.to_lowercase();
                    l.contains("ask each time") || l.contains("manually approve")
                };
                yes.iter().copied().find(asking).or(if yes.len() == 1 { Some(yes[0]) } else { None })
            }
            DialogKind::Permission | DialogKind::Other => self.options.iter().find(|o| o.label == "Yes"),
        })
    }

    fn labels(&self) -> String {
        self.options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>().join(" · ")
    }

    /// The keys that choose `answer`, each to be written on its own (a TUI reads a burst of
    /// escape sequences as one): the key the dialog names for it, else its digit when
    /// numbered, else the arrow keys from the marked option to it, then Enter.
    pub fn keys(&self, answer: &Answer) -> Result<Vec<Vec<u8>>, DialogError> {
        let Some(option) = self.find(answer)? else {
            return Ok(vec![KEY_ESCAPE.to_vec()]);
        };
        if let Some(k) = option.key {
            return Ok(vec![k.bytes().to_vec()]);
        }
        if let Some(n) = option.number {
            return Ok(vec![n.to_string().into_bytes()]);
        }
        let target = self.options.iter().position(|o| o == option).expect("found among them");
        let Some(at) = self.options.iter().position(|o| o.selected) else {
            return Err(DialogError::NoneMarked { question: self.question.clone() });
        };
        let key = if target > at { KEY_DOWN } else { KEY_UP };
        let mut keys = vec![key.to_vec(); target.abs_diff(at)];
        keys.push(b"\r".to_vec());
        Ok(keys)
    }

    /// The label of what `answer` chooses ("cancel" for Esc), for the record.
    pub fn chosen_label(&self, answer: &Answer) -> Result<String, DialogError> {
        Ok(match self.find(answer)? {
            Some(o) => o.label.clone(),
            None => capitalized(self.escape.as_deref().unwrap_or("cancel")),
        })
    }
}

/// Why an answer cannot be typed at the dialog on screen: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DialogError {
    #[error(
        "the screen shows {} (“{}”), not {}: nothing was typed",
        .shown.words(),
        crate::text::clean_text(.question, 80),
        .expected.words()
    )]
    OtherKind { shown: DialogKind, question: String, expected: DialogKind },
    #[error("the permission dialog on screen is not about “{}”: nothing was typed", crate::text::clean_text(.target, 80))]
    NotAbout { target: String },
    #[error("no answer was given to the question \"{question}\" on screen")]
    NoAnswerGiven { question: String },
    /// `wanted` describes the answer: `a plain "Yes"`, `"Deploy"`.
    #[error("the dialog \"{question}\" has no option {wanted} (it offers: {offers})")]
    NoSuchOption { question: String, wanted: String, offers: String },
    #[error("the question \"{question}\" is answered by one of its options: name it (it offers: {offers})")]
    NameAnOption { question: String, offers: String },
    #[error("the dialog \"{question}\" marks no option: nothing can be chosen safely")]
    NoneMarked { question: String },
}

fn is_no(label: &str) -> bool {
    label == "No" || label.starts_with("No,") || label.starts_with("No ")
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What Esc does, from a footer such as "Esc to cancel · Tab to amend".
fn footer_escape(row: &str) -> Option<String> {
    row.split(" · ").find_map(|p| p.trim().strip_prefix("Esc to ").map(|a| a.trim().to_owned()))
}

/// The rows of the dialog's box above its question row `at`: from the rule that tops it
/// (else the six rows above), without blank rows and separators.
fn box_above(rows: &[String], at: usize) -> Vec<String> {
    let top = rows[..at].iter().rposition(|r| is_rule(r)).map_or(at.saturating_sub(6), |i| i + 1);
    rows[top..at].iter().map(|r| r.trim()).filter(|r| !r.is_empty() && !is_separator(r)).map(str::to_owned).collect()
}

/// Whether `shown` (the dialog's rows, wrapped as the terminal wrapped them) shows
/// `target`: the first 24 characters of it other than whitespace, or for a path its file
/// name.
fn mentions(shown: &str, target: &str) -> bool {
    let compact = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let shown = compact(shown);
    let first: String = compact(target).chars().take(24).collect();
    if first.is_empty() || shown.contains(&first) {
        return true;
    }
    target.starts_with('/')
        && target.rsplit('/').next().is_some_and(|name| !name.is_empty() && shown.contains(&compact(name)))
}

#[cfg(test)]
mod tests;
