//! Finding the sandbox helper program: `keel` itself or a `keel-linux-sandbox` beside it.

use std::path::{Path, PathBuf};

/// The `argv[0]` under which a program runs as the sandbox helper.
pub const LINUX_SANDBOX_ARG0: &str = "keel-linux-sandbox";

/// The helper program to use, given the path of the running executable: the executable
/// itself when it is `keel` (which runs the helper when started with `argv[0]` =
/// [`LINUX_SANDBOX_ARG0`]) or the helper, else a `keel-linux-sandbox` beside it; `None`
/// otherwise.
pub fn find_sandbox_executable(current_exe: &Path) -> Option<PathBuf> {
    let name = current_exe.file_name().and_then(|name| name.to_str());
    if matches!(name, Some("keel" | LINUX_SANDBOX_ARG0)) {
        return Some(current_exe.to_path_buf());
    }
    let sibling = current_exe.with_file_name(LINUX_SANDBOX_ARG0);
    sibling.is_file().then_some(sibling)
}

/// [`find_sandbox_executable`] for this process.
pub fn default_sandbox_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    find_sandbox_executable(&exe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn finds_keel_itself_then_sibling_helper() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let keel = dir.path().join("keel");
        let other = dir.path().join("embedder");
        let helper = dir.path().join(LINUX_SANDBOX_ARG0);
        assert_eq!(find_sandbox_executable(&keel), Some(keel.clone()));
        assert_eq!(find_sandbox_executable(&other), None);
        std::fs::write(&helper, "")?;
        assert_eq!(find_sandbox_executable(&keel), Some(keel.clone()));
        assert_eq!(find_sandbox_executable(&other), Some(helper.clone()));
        assert_eq!(find_sandbox_executable(&helper), Some(helper));
        Ok(())
    }
}
