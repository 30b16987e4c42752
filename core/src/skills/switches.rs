//! Skills a user turned off, or on again: `[[skills.config]]` entries in the user's
//! `config.toml`, each naming a skill by `name` or by the `path` of its `SKILL.md`, with
//! `enabled`. The same entries Codex writes, so a user's choices carry over. A skill turned
//! off stays listed (marked off) but is neither offered to the model nor attached by `$name`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Skill, SkillInventory};

/// One `[[skills.config]]` entry: a skill chosen by name or by path, turned on or off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSwitch {
    /// The skill's name, when it is chosen by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its `SKILL.md`, when it is chosen by path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Whether the skill is offered.
    pub enabled: bool,
}

impl SkillSwitch {
    /// Whether this entry is about `skill`.
    fn selects(&self, skill: &Skill) -> bool {
        self.name.as_deref() == Some(skill.name.as_str())
            || self.path.as_deref() == Some(skill.path.as_path())
    }

    /// Whether this entry uses the same selector as `name` or `path`.
    fn same_selector(&self, name: Option<&str>, path: Option<&Path>) -> bool {
        (name.is_some() && self.name.as_deref() == name)
            || (path.is_some() && self.path.as_deref() == path)
    }
}

/// `[skills]` in a config file.
#[cfg_attr(test, derive(Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct SkillsToml {
    /// The switches, in file order (a later entry for the same skill wins).
    pub config: Vec<SkillSwitch>,
}

#[derive(Deserialize)]
struct ConfigFileSkills {
    #[serde(default)]
    skills: SkillsToml,
}

/// The switches in the config file at `config_file`, read again so that a change made during a
/// session counts from the next turn; `None` when the file cannot be read or parsed.
pub fn read_switches(config_file: &Path) -> Option<Vec<SkillSwitch>> {
    let text = std::fs::read_to_string(config_file).ok()?;
    toml::from_str::<ConfigFileSkills>(&text)
        .ok()
        .map(|file| file.skills.config)
}

impl SkillInventory {
    /// The inventory with each skill marked on or off by `switches` (the last entry about a
    /// skill decides; a skill no entry names is on).
    pub fn with_switches(mut self, switches: &[SkillSwitch]) -> Self {
        for skill in &mut self.skills {
            skill.enabled = switches
                .iter()
                .rev()
                .find(|switch| switch.selects(skill))
                .is_none_or(|switch| switch.enabled);
        }
        self
    }
}

/// `switches` after the user turned the skill chosen by `name` or `path` on or off: entries
/// with the same selector go, and turning a skill off adds one (on is the default, so turning
/// one on needs no entry).
pub fn switched(
    switches: &[SkillSwitch],
    name: Option<&str>,
    path: Option<&Path>,
    enabled: bool,
) -> Vec<SkillSwitch> {
    let mut out: Vec<SkillSwitch> = switches
        .iter()
        .filter(|switch| !switch.same_selector(name, path))
        .cloned()
        .collect();
    if !enabled {
        out.push(SkillSwitch {
            name: if path.is_some() {
                None
            } else {
                name.map(str::to_string)
            },
            path: path.map(Path::to_path_buf),
            enabled: false,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_protocol::app_server::SkillScope;

    fn skill(name: &str) -> Skill {
        Skill {
            name: name.to_string(),
            description: "d".to_string(),
            short_description: None,
            path: PathBuf::from(format!("/skills/{name}/SKILL.md")),
            scope: SkillScope::User,
            enabled: true,
            plugin_id: None,
        }
    }

    #[test]
    fn the_last_entry_about_a_skill_decides() {
        let inventory = SkillInventory {
            skills: vec![skill("a"), skill("b"), skill("c")],
            errors: Vec::new(),
            ..SkillInventory::default()
        };
        let switches = vec![
            SkillSwitch {
                name: Some("a".into()),
                path: None,
                enabled: false,
            },
            SkillSwitch {
                name: None,
                path: Some(PathBuf::from("/skills/b/SKILL.md")),
                enabled: false,
            },
            SkillSwitch {
                name: Some("a".into()),
                path: None,
                enabled: true,
            },
        ];
        let enabled: Vec<bool> = inventory
            .with_switches(&switches)
            .skills
            .iter()
            .map(|skill| skill.enabled)
            .collect();
        assert_eq!(enabled, [true, false, true]);
    }

    #[test]
    fn turning_off_adds_one_entry_and_turning_on_removes_it() {
        let off = switched(&[], Some("a"), None, false);
        assert_eq!(
            off,
            [SkillSwitch {
                name: Some("a".into()),
                path: None,
                enabled: false
            }]
        );
        assert_eq!(switched(&off, Some("a"), None, false), off);
        assert!(switched(&off, Some("a"), None, true).is_empty());
        let by_path = switched(&off, None, Some(Path::new("/s/b/SKILL.md")), false);
        assert_eq!(by_path.len(), 2);
        assert_eq!(by_path[1].path.as_deref(), Some(Path::new("/s/b/SKILL.md")));
    }
}
