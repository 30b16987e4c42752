//! A remote environment's project skills: the project's skill folders are walked and their
//! `SKILL.md` files read on the exec-server's host (`fs.v1`), then loaded as this host's are.

use std::path::Path;

use keel_protocol::exec_server::{FileListResponse, FileReadResponse};

use crate::processes::{ProcessError, ProcessLayer};
use crate::skills::{
    MAX_DEPTH, MAX_SKILL_FILE_BYTES, ReadSkillFiles, SKILL_FILE, SkillInventory, SkillRoot,
    SkillScope, load_skills_from, skill_roots_in, too_large,
};

/// The skill folders and skills of a thread whose commands run through `processes`, working
/// in `cwd` there: the project's read there, the user's and the system's on this host.
pub(crate) async fn remote_skills(
    processes: &ProcessLayer,
    keel_home: &Path,
    user_home: Option<&Path>,
    cwd: &Path,
    project_trusted: bool,
) -> Result<(Vec<SkillRoot>, SkillInventory), ProcessError> {
    let repo_root = if project_trusted {
        processes.repo_root(cwd).await?
    } else {
        None
    };
    let roots = skill_roots_in(
        keel_home,
        user_home,
        cwd,
        project_trusted,
        repo_root.as_deref(),
    );
    let read = read_project_folders(processes, &roots).await?;
    let mut inventory = load_skills_from(&roots, &read);
    inventory.texts = inventory
        .skills
        .iter()
        .filter(|skill| skill.scope == SkillScope::Repo)
        .filter_map(|skill| {
            let text = read.files.get(&skill.path)?.as_ref().ok()?;
            Some((skill.path.clone(), text.clone()))
        })
        .collect();
    Ok((roots, inventory))
}

/// Walks the project's skill folders where the commands run, as deep as skills may sit, and
/// reads each `SKILL.md` found.
async fn read_project_folders(
    processes: &ProcessLayer,
    roots: &[SkillRoot],
) -> Result<ReadSkillFiles, ProcessError> {
    let mut read = ReadSkillFiles::default();
    for root in roots.iter().filter(|root| root.scope == SkillScope::Repo) {
        let mut pending = vec![(root.dir.clone(), 0usize)];
        while let Some((dir, depth)) = pending.pop() {
            let FileListResponse::Listed { entries } = processes.list_dir(&dir).await? else {
                continue;
            };
            let mut listed = Vec::with_capacity(entries.len());
            for entry in entries {
                let path = dir.join(&entry.file_name);
                if entry.is_directory {
                    if !entry.file_name.starts_with('.') && depth < MAX_DEPTH {
                        pending.push((path, depth + 1));
                    }
                } else if entry.file_name == SKILL_FILE && depth > 0 {
                    let text = match processes.read_file(&path, MAX_SKILL_FILE_BYTES).await? {
                        FileReadResponse::Read { data_base64 } => String::from_utf8(data_base64.0)
                            .map_err(|_| "cannot read: it is not UTF-8 text".to_string()),
                        FileReadResponse::TooLarge { size } => Err(too_large(size)),
                        FileReadResponse::Missing => {
                            Err("cannot read: it went away while being read".to_string())
                        }
                        FileReadResponse::Unreadable { message } => {
                            Err(format!("cannot read: {message}"))
                        }
                    };
                    read.files.insert(path, text);
                }
                listed.push((entry.file_name, entry.is_directory));
            }
            read.dirs.insert(dir, listed);
        }
    }
    Ok(read)
}
