//! Finding the binaries tests run.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Finds the executable of binary target `name`: `$CARGO_BIN_EXE_<name>` when set at run time,
/// else next to the running test's own target directory (`target/<profile>/<name>`).
///
/// Integration tests of the crate that owns the binary can pass `env!("CARGO_BIN_EXE_<name>")`
/// straight to [`crate::ProcessBuilder::new`]; this lookup serves everyone else.
pub fn cargo_bin(name: &str) -> Result<PathBuf> {
    let file_name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os(format!("CARGO_BIN_EXE_{name}")) {
        candidates.push(PathBuf::from(path));
    }
    if let Ok(exe) = std::env::current_exe() {
        // Test binaries live in target/<profile>/deps/; binaries one level up.
        let mut dir = exe.parent();
        while let Some(current) = dir {
            candidates.push(current.join(&file_name));
            if current.file_name().is_some_and(|n| n != "deps") {
                break;
            }
            dir = current.parent();
        }
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(Path::new(&target).join("debug").join(&file_name));
    }
    if let Some(found) = candidates.iter().find(|path| path.is_file()) {
        return Ok(found.clone());
    }
    let searched = candidates
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(Error::BinaryNotFound {
        name: name.to_owned(),
        searched,
    })
}
