//! The id of one Keel home, kept in `KEEL_HOME/installation_id` (as Codex keeps its own), so
//! a provider can tell one installation's requests from another's without knowing who runs it.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// The file in the home that holds the id.
const FILE: &str = "installation_id";

/// The homes already read in this process, so a request costs no file access.
static KNOWN: Mutex<Vec<(std::path::PathBuf, String)>> = Mutex::new(Vec::new());

/// The installation id of `home`, made and kept on first use; `None` when the home cannot be
/// read or written (the request then goes without it).
pub(crate) fn installation_id(home: &Path) -> Option<String> {
    if let Ok(known) = KNOWN.lock()
        && let Some((_, id)) = known.iter().find(|(path, _)| path == home)
    {
        return Some(id.clone());
    }
    let id = read_or_make(home)?;
    if let Ok(mut known) = KNOWN.lock() {
        known.push((home.to_path_buf(), id.clone()));
    }
    Some(id)
}

fn read_or_make(home: &Path) -> Option<String> {
    let path = home.join(FILE);
    if let Some(id) = read(&path) {
        return Some(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    std::fs::create_dir_all(home).ok()?;
    // `create_new`: of two processes making the id at once, one writes it and the other
    // reads what the first wrote.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut file) => {
            file.write_all(id.as_bytes()).ok()?;
            Some(id)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read(&path),
        Err(err) => {
            tracing::debug!(path = %path.display(), "no installation id: {err}");
            None
        }
    }
}

/// The id in `path`, if it holds one.
fn read(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    uuid::Uuid::parse_str(id).ok().map(|_| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_made_once_and_kept() {
        let home = tempfile::tempdir().unwrap();
        let first = read_or_make(home.path()).unwrap();
        assert_eq!(read_or_make(home.path()).unwrap(), first);
        assert_eq!(installation_id(home.path()).unwrap(), first);
        std::fs::write(home.path().join(FILE), "not an id").unwrap();
        // A damaged file is neither sent nor replaced: the requests go without an id.
        assert_eq!(read_or_make(home.path()), None);
    }
}
