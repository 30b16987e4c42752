//! What the model is told about skills: a block listing the installed ones (names,
//! descriptions and where each `SKILL.md` is, within a budget; never the bodies), and the
//! whole `SKILL.md` of each skill a user names with `$name` in a message.
//!
//! The block has the shape Codex gives it, so a model tuned on Codex reads it the same way: a
//! `<skills_instructions>` element with a short preamble, the skill folders as `rN` aliases
//! (`### Skill roots`), then one line per skill (`### Available skills`,
//! `- NAME: DESCRIPTION (file: rN/…/SKILL.md)`), system skills first, then the project's,
//! then the user's, each group by name.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::discover::read_file;
use super::{Skill, SkillInventory, SkillScope};

/// Budget of the block, in characters, when the model's context window is unknown.
pub(crate) const DEFAULT_BUDGET_CHARS: usize = 8_000;
/// Longest description listed, in characters (longer ones are cut with `...`).
const MAX_LISTED_DESCRIPTION_CHARS: usize = 1_024;
/// Shortest a description is cut to before descriptions are dropped altogether.
const MIN_LISTED_DESCRIPTION_CHARS: usize = 40;

/// The budget for a model with `context_window` tokens: about 2% of it, at four characters a
/// token.
pub(crate) fn budget_chars(context_window: Option<u64>) -> usize {
    context_window.map_or(DEFAULT_BUDGET_CHARS, |tokens| {
        usize::try_from(tokens / 50 * 4).unwrap_or(usize::MAX)
    })
}

/// The prompt's block listing the skills that are on, or `None` when there are none. Over `budget`
/// characters, descriptions are shortened, then dropped, then skills left out (the block says
/// how many).
pub(crate) fn skills_section(inventory: &SkillInventory, budget: usize) -> Option<String> {
    let mut ordered: Vec<&Skill> = inventory
        .skills
        .iter()
        .filter(|skill| skill.enabled)
        .collect();
    if ordered.is_empty() {
        return None;
    }
    ordered.sort_by_key(|skill| (scope_rank(skill.scope), skill.name.clone()));
    let roots = roots_of(&ordered);

    let lines_with = |limit: Option<usize>| -> Vec<String> {
        ordered
            .iter()
            .map(|skill| skill_line(skill, &roots, limit))
            .collect()
    };
    let head = header(&roots);
    let fits =
        |lines: &[String]| head.len() + lines.iter().map(String::len).sum::<usize>() <= budget;

    let mut lines = lines_with(Some(MAX_LISTED_DESCRIPTION_CHARS));
    if !fits(&lines) {
        // Share what is left evenly among the descriptions.
        let fixed: usize = lines_with(Some(0)).iter().map(String::len).sum();
        let per_skill = budget.saturating_sub(head.len() + fixed) / ordered.len();
        lines = if per_skill >= MIN_LISTED_DESCRIPTION_CHARS {
            lines_with(Some(per_skill.saturating_sub(4)))
        } else {
            lines_with(None)
        };
    }
    let mut left_out = 0;
    while !fits(&lines) && !lines.is_empty() {
        lines.pop();
        left_out += 1;
    }
    let mut text = head;
    for line in &lines {
        text.push_str(line);
    }
    if left_out > 0 {
        let _ = writeln!(
            text,
            "({left_out} more skills are installed but not listed, for space; the user can \
             still name them with `$name`.)"
        );
    }
    text.push_str("</skills_instructions>");
    Some(text)
}

fn scope_rank(scope: SkillScope) -> u8 {
    match scope {
        SkillScope::System => 0,
        SkillScope::Admin => 1,
        SkillScope::Repo => 2,
        SkillScope::User => 3,
    }
}

/// The folders the skills live in (a skill's folder's parent), in order of first use.
fn roots_of(skills: &[&Skill]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for skill in skills {
        let root = skill
            .path
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

fn header(roots: &[PathBuf]) -> String {
    let mut text = String::from(
        "<skills_instructions>\n## Skills\nSkills are folders of instructions for particular \
         kinds of task, each described by a SKILL.md. When a task matches a skill's \
         description, or the user names one as `$name`, open its SKILL.md first (read only \
         what you need) and follow it; paths it mentions are relative to its folder.\n\
         ### Skill roots\n",
    );
    for (n, root) in roots.iter().enumerate() {
        let _ = writeln!(text, "- `r{n}` = `{}`", root.display());
    }
    text.push_str("### Available skills\n");
    text
}

/// `- NAME: DESCRIPTION (file: rN/…)`; `limit` cuts the description (`Some(0)` and `None`
/// both leave it out).
fn skill_line(skill: &Skill, roots: &[PathBuf], limit: Option<usize>) -> String {
    let file = roots
        .iter()
        .enumerate()
        .find_map(|(n, root)| {
            skill
                .path
                .strip_prefix(root)
                .ok()
                .map(|rest| format!("r{n}/{}", rest.display()))
        })
        .unwrap_or_else(|| skill.path.display().to_string());
    let description = match limit {
        Some(limit) if limit > 0 => cut(&skill.description, limit),
        _ => String::new(),
    };
    format!("- {}: {description} (file: {file})\n", skill.name)
}

fn cut(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let kept: String = text.chars().take(limit.saturating_sub(3)).collect();
    format!("{kept}...")
}

/// History items carrying the whole `SKILL.md` of each skill the user's input names as
/// `$name`, in listing order.
pub(crate) fn attached_skill_items(
    inventory: &SkillInventory,
    input: &[keel_protocol::InputItem],
) -> Vec<crate::models::ResponseItem> {
    let text: String = input
        .iter()
        .filter_map(|item| match item {
            keel_protocol::InputItem::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    attached_skills(inventory, &text)
        .into_iter()
        .map(|(skill, file)| {
            crate::models::ResponseItem::user_text(format!(
                "<skill>\n<name>{}</name>\n<path>{}</path>\n{file}\n</skill>",
                skill.name,
                skill.path.display(),
            ))
        })
        .collect()
}

/// The skills `text` names as `$name` (not inside a word), each with its whole file; a skill
/// whose file can no longer be read is left out, with a log line.
fn attached_skills<'a>(inventory: &'a SkillInventory, text: &str) -> Vec<(&'a Skill, String)> {
    let mentioned: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '$' | '-' | '_' | ':' | '.')))
        .filter_map(|word| word.strip_prefix('$'))
        .map(|name| name.trim_end_matches(['.', ':']))
        .collect();
    let mut named: Vec<&Skill> = inventory
        .skills
        .iter()
        .filter(|skill| skill.enabled && mentioned.contains(&skill.name.as_str()))
        .collect();
    named.sort_by_key(|skill| (scope_rank(skill.scope), skill.name.clone()));
    named
        .into_iter()
        .filter_map(|skill| match inventory
            .texts
            .get(&skill.path)
            .map_or_else(|| read_file(skill), |text| Ok(text.clone()))
        {
            Ok(file) => Some((skill, file)),
            Err(err) => {
                tracing::warn!(skill = %skill.name, path = %skill.path.display(), %err, "cannot read a named skill");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn skill(dir: &Path, name: &str, description: &str) -> std::io::Result<Skill> {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder)?;
        let path = folder.join("SKILL.md");
        std::fs::write(&path, format!("---\nname: {name}\n---\nBody of {name}.\n"))?;
        Ok(Skill {
            name: name.to_string(),
            description: description.to_string(),
            short_description: None,
            path,
            scope: SkillScope::User,
            enabled: true,
            plugin_id: None,
        })
    }

    #[test]
    fn lists_skills_by_root_alias() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let inventory = SkillInventory {
            skills: vec![
                skill(dir.path(), "b", "Bee.")?,
                skill(dir.path(), "a", "Ay.")?,
            ],
            errors: Vec::new(),
            ..SkillInventory::default()
        };
        let text = skills_section(&inventory, DEFAULT_BUDGET_CHARS).unwrap_or_default();
        assert!(text.starts_with("<skills_instructions>\n"), "{text}");
        assert!(text.ends_with("</skills_instructions>"), "{text}");
        let root_line = format!("- `r0` = `{}`\n", dir.path().display());
        assert!(text.contains(&root_line), "{text}");
        let a = text.find("- a: Ay. (file: r0/a/SKILL.md)\n");
        let b = text.find("- b: Bee. (file: r0/b/SKILL.md)\n");
        assert!(a.is_some() && a < b, "{text}");
        assert_eq!(skills_section(&SkillInventory::default(), 100), None);
        Ok(())
    }

    #[test]
    fn over_budget_descriptions_shrink_then_go_then_skills_are_left_out() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let long = "word ".repeat(200).trim_end().to_string();
        let mut inventory = SkillInventory::default();
        for n in 0..50 {
            inventory
                .skills
                .push(skill(dir.path(), &format!("s{n:02}"), &long)?);
        }
        let roomy = skills_section(&inventory, 100_000).unwrap_or_default();
        assert!(
            roomy.contains(&format!("- s00: {long} (file:")),
            "full text"
        );
        let shrunk = skills_section(&inventory, 8_000).unwrap_or_default();
        assert!(shrunk.chars().count() <= 8_100, "{}", shrunk.len());
        assert!(
            shrunk.contains("...") && shrunk.contains("- s49: word"),
            "{shrunk}"
        );
        let bare = skills_section(&inventory, 2_500).unwrap_or_default();
        assert!(bare.contains("- s00:  (file: r0/s00/SKILL.md)"), "{bare}");
        let tiny = skills_section(&inventory, 1_000).unwrap_or_default();
        assert!(
            tiny.contains("more skills are installed but not listed"),
            "{tiny}"
        );
        Ok(())
    }

    #[test]
    fn named_skills_are_attached_whole() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let inventory = SkillInventory {
            skills: vec![
                skill(dir.path(), "deploy", "d")?,
                skill(dir.path(), "lint", "l")?,
            ],
            errors: Vec::new(),
            ..SkillInventory::default()
        };
        let attached = attached_skills(&inventory, "($lint), then $deploy. Not x$deploy or $nope");
        let names: Vec<&str> = attached.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(names, ["deploy", "lint"]);
        assert_eq!(attached[0].1, "---\nname: deploy\n---\nBody of deploy.\n");
        assert!(attached_skills(&inventory, "x$deploy ${deploy}").is_empty());
        Ok(())
    }
}
