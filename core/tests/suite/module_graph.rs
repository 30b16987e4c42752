//! keel-core's top-level modules import each other as a tree: the `use crate::…` paths
//! between them form no cycle, so a tool (or anything else) never has to join a knot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The identifiers `text` names right after `crate::`, including each name of a
/// `crate::{a, b::c}` group's first segments.
fn crate_references(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Split the group at its top-level commas, up to its closing brace; each path's
            // first segment is a module name.
            let mut depth = 0usize;
            let mut paths = vec![String::new()];
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => paths.push(String::new()),
                    c => {
                        if let Some(path) = paths.last_mut() {
                            path.push(c);
                        }
                    }
                }
            }
            for path in paths {
                let name: String = path
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// A cycle in `graph`, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|n| n == node).unwrap_or_default();
                let mut cycle = path[start..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() -> anyhow::Result<()> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src)? {
        let path = entry?.path();
        let Some(stem) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if stem == "lib" || stem == "bin" {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path.clone());
        } else {
            continue;
        }
        modules.entry(stem).or_default().extend(files);
    }
    assert!(
        modules.contains_key("tools") && modules.contains_key("session"),
        "the module scan found {:?}",
        modules.keys().collect::<Vec<_>>()
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, files) in &modules {
        let edges = graph.entry(module.clone()).or_default();
        for file in files {
            let text = std::fs::read_to_string(file)?;
            for name in crate_references(&text) {
                if &name != module && modules.contains_key(&name) {
                    edges.insert(name);
                }
            }
        }
    }
    // The layering the engine is built on: the tools sit below the session that runs them.
    assert!(graph["session"].contains("tools"), "{graph:#?}");
    assert_eq!(find_cycle(&graph), None, "import graph: {graph:#?}");
    Ok(())
}

#[test]
fn the_cycle_finder_reports_a_knot() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        crate_references("use crate::{tools::{self, Tool}, models};\nlet x = crate::error::E;"),
        ["error", "models", "tools"]
            .into_iter()
            .map(str::to_string)
            .collect()
    );
}
