//! Where a path really leads once symlinks on the way are followed: what a caller checks
//! before letting a patch write there, so that a link planted in the workspace cannot carry a
//! write out of it.

use std::io;
use std::path::{Component, Path, PathBuf};

/// A path and the place it reaches on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the patch names it (absolute, `.`/`..` resolved lexically).
    pub path: PathBuf,
    /// The place it reaches: every existing symlink on the way followed; the part that does
    /// not exist yet is appended as is.
    pub real: PathBuf,
    /// The first symlink on the way, if any.
    pub link: Option<SymlinkHop>,
}

/// A symlink met while resolving a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymlinkHop {
    /// The link itself.
    pub link: PathBuf,
    /// Where it leads, resolved.
    pub target: PathBuf,
}

/// Resolves `path` (absolute) component by component, following symlinks. Never writes;
/// a missing component ends the walk (the rest is appended lexically). A dangling link is
/// followed lexically to its target.
pub fn resolve_links(path: &Path) -> io::Result<ResolvedPath> {
    let mut real = PathBuf::new();
    let mut lexical = PathBuf::new();
    let mut link = None;
    let mut components = path.components();
    while let Some(component) = components.next() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                real.push(component.as_os_str());
                lexical.push(component.as_os_str());
                continue;
            }
            Component::CurDir => continue,
            Component::ParentDir => {
                real.pop();
                lexical.pop();
                continue;
            }
            Component::Normal(name) => {
                lexical.push(name);
                let candidate = real.join(name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        let target = match std::fs::canonicalize(&candidate) {
                            Ok(target) => target,
                            // Dangling: where it would create the file.
                            Err(_) => {
                                let pointed = std::fs::read_link(&candidate)?;
                                crate::lexical::resolve(&real, &pointed)
                            }
                        };
                        if link.is_none() {
                            link = Some(SymlinkHop {
                                link: lexical.clone(),
                                target: target.clone(),
                            });
                        }
                        real = target;
                    }
                    Ok(_) => real = candidate,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        real = candidate;
                        for rest in components.by_ref() {
                            if let Component::Normal(name) = rest {
                                real.push(name);
                                lexical.push(name);
                            }
                        }
                        break;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
    Ok(ResolvedPath {
        path: lexical,
        real,
        link,
    })
}

impl crate::PlannedWrite {
    /// Where this write really lands: a new or updated file is written where its symlinks
    /// lead; a deleted path loses the entry itself (deleting a link removes the link), so
    /// only the directories on its way are followed.
    pub fn resolve(&self) -> io::Result<ResolvedPath> {
        match (&self.after, self.path.parent(), self.path.file_name()) {
            (None, Some(parent), Some(name)) => {
                let parent = resolve_links(parent)?;
                Ok(ResolvedPath {
                    path: self.path.clone(),
                    real: parent.real.join(name),
                    link: parent.link,
                })
            }
            _ => resolve_links(&self.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn follows_directory_and_file_links_and_reports_the_first() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let outside = root.join("outside");
        std::fs::create_dir(&outside)?;
        std::fs::write(outside.join("f.txt"), "x")?;
        let ws = root.join("ws");
        std::fs::create_dir(&ws)?;
        symlink(&outside, ws.join("dirlink"))?;
        symlink(outside.join("f.txt"), ws.join("filelink"))?;
        symlink("missing-target", ws.join("dangling"))?;

        let through_dir = resolve_links(&ws.join("dirlink/new/x.txt"))?;
        assert_eq!(through_dir.real, outside.join("new/x.txt"));
        assert_eq!(
            through_dir.link,
            Some(SymlinkHop {
                link: ws.join("dirlink"),
                target: outside.clone()
            })
        );
        let through_file = resolve_links(&ws.join("filelink"))?;
        assert_eq!(through_file.real, outside.join("f.txt"));
        let plain = resolve_links(&ws.join("plain/x.txt"))?;
        assert_eq!(plain.real, ws.join("plain/x.txt"));
        assert_eq!(plain.link, None);
        let dangling = resolve_links(&ws.join("dangling"))?;
        assert_eq!(dangling.real, ws.join("missing-target"));
        Ok(())
    }
}
