//! The layers hold (issue 9; README "Architecture"):
//!
//! - the pure core crate has none of tokio, notify, rusqlite, portable-pty, vt100 or libc
//!   among its normal dependencies (`cargo tree -e normal`);
//! - the workspace's crates depend on one another in one direction (Cargo itself refuses
//!   a cycle; this also checks each crate only uses the crates below it in the map, in
//!   its normal, dev and build dependencies alike, and that every crate is on a floor);
//! - inside every crate, no module depends on another that depends back on it, directly
//!   or through others. Modules are read from the sources: a `crate::a::b` or `super::x`
//!   path is an edge to the deepest module it names; test code, and a parent's
//!   declarations and re-exports of its own children, are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, ensure};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_owned()
}

#[test]
fn the_core_crate_has_no_io_dependency() -> Result<()> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "mimesis-core", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(workspace())
        .output()
        .context("cargo tree")?;
    ensure!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout)?;
    let names: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    ensure!(names.contains("mimesis-core") && names.contains("serde"), "unexpected tree:\n{tree}");
    for forbidden in ["tokio", "notify", "rusqlite", "portable-pty", "vt100", "libc"] {
        ensure!(!names.contains(forbidden), "mimesis-core depends on {forbidden}:\n{tree}");
    }
    Ok(())
}

/// Which workspace crates each crate may use, lowest floor first: core (pure) <- os <- the
/// I/O crates, which never use one another <- wiring <- the faces, which reach the I/O
/// crates only through wiring's re-exports. Test code keeps the same direction: a crate's
/// dev-dependencies obey the same map (end-to-end tests that need several I/O crates at
/// once are in tests/, the `mimesis-tests` crate, which is above everything).
const LAYERS: &[(&str, &[&str])] = &[
    ("crates/core", &[]),
    ("crates/os", &["mimesis-core"]),
    ("crates/fleetdb", IO),
    ("crates/search", IO),
    ("crates/watch", IO),
    ("crates/supervise", IO),
    ("crates/hooks", IO),
    ("crates/remote", IO),
    ("crates/approvals", IO),
    (
        "crates/wiring",
        &[
            "mimesis-core",
            "mimesis-os",
            "mimesis-fleetdb",
            "mimesis-search",
            "mimesis-watch",
            "mimesis-supervise",
            "mimesis-hooks",
            "mimesis-remote",
            "mimesis-approvals",
        ],
    ),
    ("crates/cli", FACE),
    ("src-tauri", FACE),
    // Not linked by anything: a library the desktop app has WebKit's processes preload.
    ("crates/webkit-trim", &["mimesis-os"]),
];

/// What an I/O crate may use.
const IO: &[&str] = &["mimesis-core", "mimesis-os"];

/// What a face may use.
const FACE: &[&str] = &["mimesis-core", "mimesis-os", "mimesis-wiring"];

/// The workspace crates a manifest names in each of its dependency tables (normal, dev,
/// build, and the per-target ones), as `(table, crate)`.
fn workspace_deps(manifest: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut table: Option<String> = None;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            table = header.ends_with("dependencies").then(|| header.to_owned());
            continue;
        }
        let Some(table) = &table else { continue };
        let name = line.split(['.', '=', ' ']).next().unwrap_or("").trim();
        if name.starts_with("mimesis-") {
            out.push((table.clone(), name.to_owned()));
        }
    }
    out
}

#[test]
fn each_crate_uses_only_the_layers_below_it_in_code_and_in_tests() -> Result<()> {
    let members: BTreeSet<String> = std::fs::read_dir(workspace().join("crates"))?
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    for m in &members {
        ensure!(
            m == "crates/standin" || LAYERS.iter().any(|(dir, _)| dir == m),
            "{m} is on no floor: add it to LAYERS (and README \"Architecture\")"
        );
    }
    for (dir, allowed) in LAYERS {
        let manifest = std::fs::read_to_string(workspace().join(dir).join("Cargo.toml"))?;
        let deps = workspace_deps(&manifest);
        ensure!(manifest.contains("[dependencies]"), "{dir}: a [dependencies] table");
        for (table, name) in deps {
            ensure!(allowed.contains(&name.as_str()), "{dir} uses {name} in [{table}], which is not below it");
        }
    }
    Ok(())
}

#[test]
fn the_dependency_reader_reads_every_table() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nmimesis-core.workspace = true\nserde = \"1\"\n\
                    [dev-dependencies]\nmimesis-watch = { workspace = true }\n\
                    [target.'cfg(unix)'.dependencies]\nmimesis-os.workspace = true\n[features]\nmimesis-x = []\n";
    let deps = workspace_deps(manifest);
    let names: Vec<(&str, &str)> = deps.iter().map(|(t, n)| (t.as_str(), n.as_str())).collect();
    assert_eq!(
        names,
        [
            ("dependencies", "mimesis-core"),
            ("dev-dependencies", "mimesis-watch"),
            ("target.'cfg(unix)'.dependencies", "mimesis-os")
        ]
    );
}

/// The module a source file defines: `src/supervision/policy.rs` → `supervision::policy`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "lib" | "main" | "mod") {
        parts.push(stem.to_owned());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The paths a file's non-test code names, as module paths (not yet resolved).
fn referenced_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    // Comments name modules for the reader (`[`crate::engine`]`); only code depends on them.
    let code: String = code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let code = code.as_str();
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", module[..module.len().saturating_sub(1)].to_vec())] {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            // Not part of a longer word (`mimesis_crate::` does not exist, but be safe).
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut names = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                names.extend(group[..end].split(',').map(|n| n.trim().split("::").next().unwrap_or("").to_owned()));
            } else {
                let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
                let path: Vec<String> = rest[..end].split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
                out.push(base.iter().cloned().chain(path).collect());
                continue;
            }
            for n in names.into_iter().filter(|n| !n.is_empty() && n != "self") {
                out.push(base.iter().cloned().chain(std::iter::once(n)).collect());
            }
        }
    }
    out
}

/// The strongly connected components of size > 1 (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn module_graph(src: &Path) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file)?;
        let from = module.join("::");
        let edges = graph.entry(from.clone()).or_default();
        for path in referenced_paths(&text, module) {
            // The deepest module the path names.
            let Some(target) = (0..=path.len()).rev().map(|n| &path[..n]).find(|p| modules.contains_key(*p)) else {
                continue;
            };
            // A parent naming its own children (declarations, re-exports) is structure.
            if target.len() > module.len() && target.starts_with(module) {
                continue;
            }
            let to = target.join("::");
            if to != from {
                edges.insert(to);
            }
        }
    }
    Ok(graph)
}

#[test]
fn no_module_depends_on_itself_through_others() -> Result<()> {
    let mut found = Vec::new();
    let root = workspace();
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))?
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    srcs.push(root.join("src-tauri/src"));
    srcs.sort();
    for src in srcs {
        let graph = module_graph(&src)?;
        // (The stand-in agent and the WebKit trim are one file each.)
        let one_file = src.ends_with("standin/src") || src.ends_with("webkit-trim/src");
        ensure!(graph.len() > 1 || one_file, "no modules read in {}", src.display());
        for c in cycles(&graph) {
            found.push(format!("{}: {}", src.display(), c.join(" ↔ ")));
        }
    }
    ensure!(found.is_empty(), "module dependency circles:\n{}", found.join("\n"));
    Ok(())
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let g: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
            .collect();
    let c = cycles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].iter().cloned().collect::<BTreeSet<_>>(), ["a", "b", "c"].map(str::to_owned).into());
    let paths = referenced_paths("use crate::{facts, status::Tail};\nuse super::view::X;", &["a".into(), "b".into()]);
    assert_eq!(paths, vec![vec!["facts"], vec!["status"], vec!["a", "view", "X"]]);
}
