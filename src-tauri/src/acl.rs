//! The window reaches the app only through commands that Tauri's ACL lets through: a command
//! registered in `main.rs` but missing from `build.rs`'s list or from the main window's
//! capability is refused at run time ("not allowed"), which no type check sees.

/// The commands registered with `generate_handler!` in `main.rs`.
fn handlers() -> Vec<&'static str> {
    let main = include_str!("main.rs");
    let start = main.find("generate_handler![").expect("main.rs registers its commands");
    let end = start + main[start..].find("])").expect("the command list ends");
    main[start..end]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().trim_end_matches(',').rsplit_once("::").map(|(_, name)| name))
        .collect()
}

#[test]
fn every_command_is_declared_and_granted_to_the_window() {
    let declared = include_str!("../build.rs");
    let caps: serde_json::Value =
        serde_json::from_str(include_str!("../capabilities/default.json")).expect("the capability is JSON");
    let granted: Vec<&str> =
        caps["permissions"].as_array().expect("a list of permissions").iter().filter_map(|p| p.as_str()).collect();
    let handlers = handlers();
    assert!(handlers.len() > 40, "the command list was not found: {handlers:?}");
    for h in handlers {
        assert!(declared.contains(&format!("\"{h}\"")), "{h} is missing from build.rs's COMMANDS");
        // Granted at run time only while recording (src/record.rs).
        if h == "record_write" {
            continue;
        }
        let allow = format!("allow-{}", h.replace('_', "-"));
        assert!(granted.contains(&allow.as_str()), "{allow} is missing from capabilities/default.json");
    }
}
