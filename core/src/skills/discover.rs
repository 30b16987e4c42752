//! Finding `SKILL.md` files under the skill folders of a working directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Skill, SkillInventory, SkillLoadError, SkillScope, front_matter};

/// The file that makes a folder a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";
/// How deep under a skills folder a `SKILL.md` may sit (`skills/<group>/<name>/SKILL.md`).
pub(crate) const MAX_DEPTH: usize = 4;
/// Largest `SKILL.md` read; a bigger one is reported, not loaded.
pub(crate) const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// A folder searched for skills, and the scope of what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    /// The folder.
    pub dir: PathBuf,
    /// What its skills count as.
    pub scope: SkillScope,
    /// The installed plugin it belongs to (`PLUGIN@MARKETPLACE`): its skills are named
    /// `PLUGIN:SKILL`.
    pub plugin: Option<String>,
}

/// The folders searched for a thread working in `cwd`, nearest first: the project's (only
/// when `project_trusted`), from `cwd` up to the repository root, then the user's
/// (`KEEL_HOME/skills` and `~/.agents/skills`), then installed plugins', then the system's
/// (`KEEL_HOME/skills/.system`).
/// `user_home` is the user's home directory (`$HOME`), if known.
pub fn skill_roots(
    keel_home: &Path,
    user_home: Option<&Path>,
    cwd: &Path,
    project_trusted: bool,
) -> Vec<SkillRoot> {
    let repo_root = project_trusted
        .then(|| crate::repo_root::repo_root(cwd))
        .flatten();
    skill_roots_in(keel_home, user_home, cwd, project_trusted, repo_root)
}

/// [`skill_roots`] with the repository root already found (where the thread's commands run).
pub(crate) fn skill_roots_in(
    keel_home: &Path,
    user_home: Option<&Path>,
    cwd: &Path,
    project_trusted: bool,
    repo_root: Option<&Path>,
) -> Vec<SkillRoot> {
    let mut roots = Vec::new();
    if project_trusted {
        for dir in cwd.ancestors() {
            for name in [".codex", ".agents"] {
                roots.push(SkillRoot {
                    dir: dir.join(name).join("skills"),
                    scope: SkillScope::Repo,
                    plugin: None,
                });
            }
            // Outside a repository only the working directory's own folders count.
            if repo_root.is_none_or(|root| dir == root) {
                break;
            }
        }
    }
    roots.push(SkillRoot {
        dir: keel_home.join("skills"),
        scope: SkillScope::User,
        plugin: None,
    });
    if let Some(home) = user_home {
        roots.push(SkillRoot {
            dir: home.join(".agents/skills"),
            scope: SkillScope::User,
            plugin: None,
        });
    }
    for plugin in crate::plugin_files::installed_plugins(keel_home) {
        for dir in plugin.skill_dirs() {
            roots.push(SkillRoot {
                dir: dir.clone(),
                scope: SkillScope::User,
                plugin: Some(plugin.id.to_string()),
            });
        }
    }
    roots.push(SkillRoot {
        dir: keel_home.join("skills/.system"),
        scope: SkillScope::System,
        plugin: None,
    });
    roots
}

/// `roots` with `extra` folders (a client's, `skills/extraRoots/set`) searched first, as
/// the user's own.
pub fn with_extra_roots(roots: Vec<SkillRoot>, extra: &[PathBuf]) -> Vec<SkillRoot> {
    extra
        .iter()
        .map(|dir| SkillRoot {
            dir: dir.clone(),
            scope: SkillScope::User,
            plugin: None,
        })
        .chain(roots)
        .collect()
}

/// The user's home directory from `$HOME`, for [`skill_roots`].
pub fn user_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(std::path::PathBuf::from)
}

/// Where skill folders are read: this host, or what was read of a remote environment's.
pub(crate) trait SkillFiles {
    /// The entries of `dir`, each as its name and whether it is a directory (links
    /// followed); `None` when it cannot be listed.
    fn entries(&self, dir: &Path) -> Option<Vec<(String, bool)>>;
    /// The text of a `SKILL.md` (at most [`MAX_SKILL_FILE_BYTES`]), or what is wrong.
    fn read(&self, path: &Path) -> Result<String, String>;
}

/// This host's files.
struct ThisHost;

impl SkillFiles for ThisHost {
    fn entries(&self, dir: &Path) -> Option<Vec<(String, bool)>> {
        let entries = std::fs::read_dir(dir).ok()?;
        Some(
            entries
                .flatten()
                // Follows links, as users link skill folders in from elsewhere; the depth
                // bound stops a link cycle.
                .map(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    (name, entry.path().is_dir())
                })
                .collect(),
        )
    }

    fn read(&self, path: &Path) -> Result<String, String> {
        let size = std::fs::metadata(path)
            .map_err(|err| format!("cannot read: {err}"))?
            .len();
        if size > MAX_SKILL_FILE_BYTES {
            return Err(too_large(size));
        }
        std::fs::read_to_string(path).map_err(|err| format!("cannot read: {err}"))
    }
}

/// Why a `SKILL.md` of `size` bytes is not loaded.
pub(crate) fn too_large(size: u64) -> String {
    format!("the file is {size} bytes; at most {MAX_SKILL_FILE_BYTES} are read")
}

/// What was read of a remote environment's skill folders: each folder's entries and each
/// `SKILL.md` found.
#[derive(Debug, Default)]
pub(crate) struct ReadSkillFiles {
    pub dirs: BTreeMap<PathBuf, Vec<(String, bool)>>,
    pub files: BTreeMap<PathBuf, Result<String, String>>,
}

impl SkillFiles for ReadSkillFiles {
    fn entries(&self, dir: &Path) -> Option<Vec<(String, bool)>> {
        self.dirs.get(dir).cloned()
    }

    fn read(&self, path: &Path) -> Result<String, String> {
        self.files
            .get(path)
            .cloned()
            .unwrap_or_else(|| Err("cannot read: it was not found".to_string()))
    }
}

/// Loads every skill under `roots`; when two share a name, the one in the earlier root wins.
pub fn load_skills(roots: &[SkillRoot]) -> SkillInventory {
    load_skills_from(roots, &ThisHost)
}

/// [`load_skills`] with the project's folders (`Repo` roots) read through `repo`, the user's
/// and the system's on this host.
pub(crate) fn load_skills_from(roots: &[SkillRoot], repo: &dyn SkillFiles) -> SkillInventory {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    let mut errors = Vec::new();
    for root in roots {
        let files: &dyn SkillFiles = if root.scope == SkillScope::Repo {
            repo
        } else {
            &ThisHost
        };
        let mut found = Vec::new();
        find_skill_files(files, &root.dir, 0, &mut found);
        found.sort();
        for path in found {
            match load_one(files, &path, root.scope) {
                Ok(mut skill) => {
                    if let Some(id) = &root.plugin {
                        let plugin = id.split_once('@').map_or(id.as_str(), |(name, _)| name);
                        skill.name = format!("{plugin}:{}", skill.name);
                        skill.plugin_id = Some(id.clone());
                    }
                    by_name.entry(skill.name.clone()).or_insert(skill);
                }
                Err(message) => errors.push(SkillLoadError { path, message }),
            }
        }
    }
    SkillInventory {
        skills: by_name.into_values().collect(),
        errors,
        texts: BTreeMap::new(),
    }
}

fn find_skill_files(files: &dyn SkillFiles, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Some(entries) = files.entries(dir) else {
        return;
    };
    for (name, is_dir) in entries {
        let path = dir.join(&name);
        if is_dir {
            if !name.starts_with('.') && depth < MAX_DEPTH {
                find_skill_files(files, &path, depth + 1, out);
            }
        } else if name == SKILL_FILE && depth > 0 {
            out.push(path);
        }
    }
}

fn load_one(files: &dyn SkillFiles, path: &Path, scope: SkillScope) -> Result<Skill, String> {
    let text = files.read(path)?;
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let front = front_matter::parse(&text, &folder)?;
    Ok(Skill {
        name: front.name,
        description: front.description,
        short_description: front.short_description,
        path: path.to_path_buf(),
        scope,
        enabled: true,
        plugin_id: None,
    })
}

/// A skill's whole `SKILL.md`, as it is attached when the user names the skill.
pub(crate) fn read_file(skill: &Skill) -> std::io::Result<String> {
    std::fs::read_to_string(&skill.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write_skill(dir: &Path, name: &str, description: &str) -> std::io::Result<PathBuf> {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder)?;
        let path = folder.join(SKILL_FILE);
        std::fs::write(
            &path,
            format!("---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n"),
        )?;
        Ok(path)
    }

    #[test]
    fn project_skills_win_over_the_users_and_errors_are_kept() -> std::io::Result<()> {
        let home = tempfile::tempdir()?;
        let repo = tempfile::tempdir()?;
        std::fs::create_dir(repo.path().join(".git"))?;
        std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/main\n")?;
        let sub = repo.path().join("crates/app");
        std::fs::create_dir_all(&sub)?;
        write_skill(&home.path().join("skills"), "deploy", "user deploy")?;
        write_skill(&home.path().join("skills"), "lint", "user lint")?;
        let project = write_skill(&repo.path().join(".agents/skills"), "deploy", "repo deploy")?;
        let broken = home.path().join("skills/broken/SKILL.md");
        std::fs::create_dir_all(home.path().join("skills/broken"))?;
        std::fs::write(&broken, "no front matter\n")?;
        write_skill(
            &home.path().join("skills/.system"),
            "imagegen",
            "system one",
        )?;

        let trusted = load_skills(&skill_roots(home.path(), None, &sub, true));
        let names: Vec<(&str, &str)> = trusted
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("deploy", "repo deploy"),
                ("imagegen", "system one"),
                ("lint", "user lint")
            ]
        );
        assert_eq!(trusted.skills[0].path, project);
        assert_eq!(trusted.skills[0].scope, SkillScope::Repo);
        assert_eq!(trusted.skills[1].scope, SkillScope::System);
        assert_eq!(trusted.errors.len(), 1);
        assert_eq!(trusted.errors[0].path, broken);

        // An untrusted project's skills are not loaded.
        let untrusted = load_skills(&skill_roots(home.path(), None, &sub, false));
        assert_eq!(untrusted.skills[0].description, "user deploy");
        Ok(())
    }
}
