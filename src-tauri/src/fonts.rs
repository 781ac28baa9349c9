//! The system's UI and monospace fonts by their family names, for the page.
//!
//! WebKitGTK resolves a generic family (`system-ui`, `sans-serif`, `monospace`) anew for each
//! size and weight the page uses, and `system-ui` twice. A first layout of text in 14 sizes and
//! weights (a test page in WebKit's MiniBrowser, this machine's 22 fonts) took 45 ms in
//! `system-ui`, 21 ms in `sans-serif`, 5 ms in a family named outright. The window's first
//! layout made 36 font lookups (3,606 fontconfig matches) and now makes 20 (1,764). So the app
//! asks GTK for its UI font (`gtk-font-name`, which is what `system-ui` means to WebKitGTK)
//! and fontconfig, through Pango, for the monospace one, and gives the page their families
//! (`--font-system`, `--font-system-mono`) before its first layout. The page keeps the
//! generic families after them: a family that is not found costs what it did before.

/// The script that gives the page the families (run at document start, before any layout).
/// Each value is a quoted CSS string, in a JSON string literal; a family that cannot be said
/// safely is left out and the page uses the generic family.
pub fn init_script(ui: Option<&str>, mono: Option<&str>) -> String {
    let mut sets = String::new();
    for (property, family) in [("--font-system", ui), ("--font-system-mono", mono)] {
        let Some(css) = family.and_then(css_string) else { continue };
        // (serde's JSON of a string is a valid script string: `css_string` left no U+2028/9.)
        let value = serde_json::to_string(&css).unwrap_or_default();
        sets.push_str(&format!("s.setProperty('{property}', {value}); "));
    }
    if sets.is_empty() {
        return String::new();
    }
    format!(
        "if (window.top === window && document.documentElement) {{ const s = document.documentElement.style; {sets}}}"
    )
}

/// `family` as a quoted CSS string, or nothing for a name that is empty, long, or holds a
/// control or line-separating character (from the system's settings: never trusted as CSS).
fn css_string(family: &str) -> Option<String> {
    let family = family.trim();
    let bad = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if family.is_empty() || family.chars().count() > 100 || family.chars().any(bad) {
        return None;
    }
    let mut out = String::with_capacity(family.len() + 2);
    out.push('"');
    for c in family.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Some(out)
}

/// The families of the UI font and of the monospace one, as fontconfig resolves them (both
/// `None` when GTK cannot start: the app then stops with its own error). Runs on the main
/// thread: it starts GTK, which the event loop would start next anyway.
#[cfg(target_os = "linux")]
pub fn system_families() -> (Option<String>, Option<String>) {
    use gtk::pango::FontDescription;
    use gtk::pango::prelude::FontExt;
    use gtk::prelude::GtkSettingsExt;
    if gtk::init().is_err() {
        return (None, None);
    }
    let Some(context) = gtk::gdk::pango_context_get() else { return (None, None) };
    let family = |desc: &str| {
        let font = context.load_font(&FontDescription::from_string(desc))?;
        font.describe().family().map(|f| f.to_string())
    };
    let ui = gtk::Settings::default().and_then(|s| s.gtk_font_name()).and_then(|name| family(&name));
    (ui, family("monospace"))
}

#[cfg(not(target_os = "linux"))]
pub fn system_families() -> (Option<String>, Option<String>) {
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_quoted_css_strings_and_bad_names_are_left_out() {
        assert_eq!(css_string("DejaVu Sans").as_deref(), Some("\"DejaVu Sans\""));
        assert_eq!(css_string(" Cantarell ").as_deref(), Some("\"Cantarell\""));
        assert_eq!(css_string(r#"Evil" ; } body { x"#).as_deref(), Some(r#""Evil\" ; } body { x""#));
        assert_eq!(css_string(r"back\slash").as_deref(), Some(r#""back\\slash""#));
        for bad in ["", "   ", "two\nlines", "nul\0", "a\u{2028}b", &"x".repeat(101)] {
            assert_eq!(css_string(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_script_sets_what_is_known_and_nothing_else() {
        assert_eq!(init_script(None, None), "");
        assert_eq!(init_script(Some("\n"), None), "");
        let s = init_script(Some("DejaVu Sans"), None);
        assert!(s.contains(r#"s.setProperty('--font-system', "\"DejaVu Sans\"");"#), "{s}");
        assert!(!s.contains("--font-system-mono"), "{s}");
        let s = init_script(Some("A"), Some("B Mono"));
        assert!(s.contains("'--font-system', ") && s.contains(r#"'--font-system-mono', "\"B Mono\"""#), "{s}");
    }

    #[test]
    fn a_hostile_family_stays_inside_its_string() {
        // A name that would end the script's string, or the script, stays text.
        let s = init_script(Some(r#"x'); alert(1); ('"#), Some("</script><b>"));
        let value = |prop: &str| {
            let at = s.find(prop).expect(prop) + prop.len() + ", ".len();
            let rest = &s[at..];
            let json: serde_json::Value = serde_json::Deserializer::from_str(rest).into_iter().next().unwrap().unwrap();
            json.as_str().unwrap().to_owned()
        };
        assert_eq!(value("'--font-system'"), r#""x'); alert(1); ('""#);
        assert_eq!(value("'--font-system-mono'"), "\"</script><b>\"");
    }
}
