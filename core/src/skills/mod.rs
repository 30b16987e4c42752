//! Skills: folders with a `SKILL.md` (front matter naming the skill and saying when to use
//! it, then instructions, optionally with scripts and files beside it) that teach the model a
//! task without code. The prompt lists each skill's name, description and path; the model
//! opens the body when it needs it, and a user who writes `$name` attaches the body to the
//! turn.
//!
//! Skills are found in the user's folder (`KEEL_HOME/skills`) and, for a trusted project only,
//! in the project's folders (`.codex/skills` and `.agents/skills`, from the working directory
//! up to the repository root: the names Codex reads, so existing skill folders work). A
//! malformed `SKILL.md` is reported with what is wrong, never fatal.

mod discover;
mod front_matter;
mod prompt;
mod switches;

use std::path::PathBuf;

pub(crate) use discover::{
    MAX_DEPTH, MAX_SKILL_FILE_BYTES, ReadSkillFiles, SKILL_FILE, load_skills_from, skill_roots_in,
    too_large,
};
pub use discover::{SkillRoot, load_skills, skill_roots, user_home, with_extra_roots};
pub use keel_protocol::app_server::SkillScope;
pub(crate) use prompt::{attached_skill_items, budget_chars, skills_section};
pub(crate) use switches::SkillsToml;
pub use switches::{SkillSwitch, read_switches, switched};

/// A skill that loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The name the model and the user refer to it by.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// A one-line summary for lists, if the skill gives one.
    pub short_description: Option<String>,
    /// Its `SKILL.md`.
    pub path: PathBuf,
    /// Where it was found.
    pub scope: SkillScope,
    /// Offered to the model and attachable by `$name` (the user may turn a skill off).
    pub enabled: bool,
    /// The installed plugin that brought it (`PLUGIN@MARKETPLACE`).
    pub plugin_id: Option<String>,
}

/// A `SKILL.md` that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillLoadError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it, for the user to fix.
    pub message: String,
}

/// The skills found for one working directory, with the files that failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillInventory {
    /// Loaded skills, one per name (the nearest folder wins), sorted by name.
    pub skills: Vec<Skill>,
    /// Files that could not be loaded.
    pub errors: Vec<SkillLoadError>,
    /// The `SKILL.md` texts read from a remote environment, by path (this host cannot read
    /// them again when the user attaches a skill).
    pub(crate) texts: std::collections::BTreeMap<PathBuf, String>,
}
