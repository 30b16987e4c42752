//! No crate's files import each other in a circle: the guard rail that keeps each file one
//! concept a reader can understand from the files it names.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::import_graph::{circles, read_crate};

/// Every crate root in the workspace: each member's `lib.rs`, `main.rs` and `bin/*.rs`.
fn crate_roots() -> Result<Vec<(PathBuf, PathBuf)>> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or_else(|| anyhow::anyhow!("test-support has no parent folder"))?
        .to_path_buf();
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(workspace.join("Cargo.toml"))?)?;
    let members = manifest["workspace"]["members"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("workspace.members is not a list"))?;
    let mut roots = Vec::new();
    for member in members {
        let dir = workspace.join(member.as_str().unwrap_or_default());
        for root in ["src/lib.rs", "src/main.rs"] {
            if dir.join(root).exists() {
                roots.push((dir.clone(), PathBuf::from(root)));
            }
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) {
            for entry in entries {
                let name = entry?.file_name();
                if name.to_string_lossy().ends_with(".rs") {
                    roots.push((dir.clone(), Path::new("src/bin").join(name)));
                }
            }
        }
    }
    roots.sort();
    Ok(roots)
}

#[test]
fn no_crate_has_a_file_level_import_circle() -> Result<()> {
    let mut report = String::new();
    let mut crates = 0;
    for (dir, root) in crate_roots()? {
        crates += 1;
        let graph = read_crate(&dir, &root)?;
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        for circle in circles(&graph) {
            report.push_str(&format!(
                "\n{name} ({}): {} files\n",
                root.display(),
                circle.len()
            ));
            for &from in &circle {
                for (&to, example) in &graph.edges[from] {
                    if circle.contains(&to) {
                        report.push_str(&format!(
                            "  {} -> {}  ({example})\n",
                            graph.files[from].display(),
                            graph.files[to].display()
                        ));
                    }
                }
            }
        }
    }
    assert!(crates >= 10, "found only {crates} crate roots");
    assert!(report.is_empty(), "file-level import circles:{report}");
    Ok(())
}

/// The guard finds a circle through `super::` and through a re-export, and does not count a
/// parent that only declares and re-exports its children.
#[test]
fn the_guard_sees_circles_and_passes_over_re_exports() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("shop"))?;
    std::fs::write(
        src.join("lib.rs"),
        "mod shop;\nmod tally;\npub use shop::Basket;\n",
    )?;
    std::fs::write(
        src.join("shop/mod.rs"),
        "mod basket;\nmod price;\npub use basket::Basket;\npub use price::Price;\n",
    )?;
    std::fs::write(
        src.join("shop/basket.rs"),
        "use super::Price;\npub struct Basket(pub Vec<Price>);\n",
    )?;
    std::fs::write(
        src.join("shop/price.rs"),
        "pub struct Price(pub u32);\npub fn total(b: &crate::Basket) -> u32 { b.0.len() as u32 }\n",
    )?;
    std::fs::write(
        src.join("tally.rs"),
        "pub fn count() -> u32 { crate::shop::Price(1).0 }\n",
    )?;
    let graph = read_crate(dir.path(), Path::new("src/lib.rs"))?;
    let found: Vec<Vec<String>> = circles(&graph)
        .into_iter()
        .map(|circle| {
            circle
                .into_iter()
                .map(|file| graph.files[file].display().to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        found,
        vec![vec![
            "src/shop/basket.rs".to_string(),
            "src/shop/price.rs".to_string()
        ]]
    );
    Ok(())
}
