//! Every hook defined for a working directory, with where it comes from and whether it may
//! run. Layers add up (every file's hooks run): the user's (`KEEL_HOME/hooks.json` and
//! `[hooks]` in `KEEL_HOME/config.toml`), then, for a trusted project only, the project's
//! (`.codex/hooks.json` and `[hooks]` in `.codex/config.toml`, from the repository root down to
//! the working directory), then installed plugins' (`hooks/hooks.json` or what their manifest
//! names; a plugin hook's trust key is `PLUGIN@MARKETPLACE:FILE:event:group:handler`, and it
//! is told `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA`). Trust records are read from the
//! user's config only, so a plugin's hooks run only once the user trusted them.

use std::path::{Path, PathBuf};

use super::config::{CommandHandler, DefinedHook, parse_hooks};
use super::event::HookEvent;
use super::trust::{TrustStatus, definition_hash, hook_key, read_states, status};

/// Where a hook was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSource {
    /// The user's own files.
    User,
    /// The project's files (trusted projects only).
    Project,
    /// An installed plugin's hooks.
    Plugin,
}

impl HookSource {
    /// The app-server's name for it.
    pub fn wire_name(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Plugin => "plugin",
        }
    }
}

/// One hook handler, ready to list or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The name its trust is recorded under.
    pub key: String,
    /// When it runs.
    pub event: HookEvent,
    /// Which tool (or source) it applies to; `None` for all.
    pub matcher: Option<String>,
    /// What it runs.
    pub handler: CommandHandler,
    /// Where it was defined.
    pub source: HookSource,
    /// The file it was defined in.
    pub source_path: PathBuf,
    /// Its place among all hooks: by event, then layer, file and position.
    pub display_order: usize,
    /// `sha256:…` of its definition.
    pub current_hash: String,
    /// Whether the user reviewed it in this form.
    pub trust: TrustStatus,
    /// `false` when the user turned it off.
    pub enabled: bool,
    /// The plugin that brought it (`PLUGIN@MARKETPLACE`).
    pub plugin_id: Option<String>,
}

impl Hook {
    /// Whether it runs: enabled and trusted (or trust bypassed).
    pub fn runs(&self, bypass_trust: bool) -> bool {
        self.enabled && (bypass_trust || self.trust == TrustStatus::Trusted)
    }
}

/// The hooks of one working directory and the problems found loading them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookInventory {
    /// In display order.
    pub hooks: Vec<Hook>,
    /// Files that could not be read or parsed, and groups that were dropped.
    pub warnings: Vec<String>,
    /// Hooks the embedding program registered in code; they run after the user's.
    pub embedded: Vec<super::EmbeddedHook>,
}

impl HookInventory {
    /// The hooks of `event` that run for `name` (a tool name, a session-start source), in
    /// display order.
    pub fn matching<'a>(
        &'a self,
        event: HookEvent,
        name: Option<&'a str>,
        bypass_trust: bool,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks.iter().filter(move |hook| {
            hook.event == event
                && hook.runs(bypass_trust)
                && name.is_none_or(|name| super::config::matches(hook.matcher.as_deref(), name))
        })
    }

    /// The inventory with the embedding program's hooks added.
    pub fn with_embedded(mut self, hooks: &[super::EmbeddedHook]) -> Self {
        self.embedded.extend(hooks.iter().cloned());
        self
    }

    /// Whether no hook of any kind is defined.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty() && self.embedded.is_empty()
    }

    /// The inventory with each hook's trust and on/off choice read again from the user's
    /// config text, so a hook trusted or turned off while a thread is loaded counts from its
    /// next turn. `None` when nothing changed.
    pub(crate) fn with_choices_from(&self, user_config_text: &str) -> Option<Self> {
        let states = read_states(user_config_text);
        let mut fresh = self.clone();
        for hook in &mut fresh.hooks {
            let state = states.get(&hook.key);
            hook.trust = status(state, &hook.current_hash);
            hook.enabled = state.and_then(|state| state.enabled).unwrap_or(true);
        }
        (fresh != *self).then_some(fresh)
    }

    /// Hooks that would run but are held back for lack of trust.
    pub fn held_back(&self) -> impl Iterator<Item = &Hook> {
        self.hooks
            .iter()
            .filter(|hook| hook.enabled && hook.trust != TrustStatus::Trusted)
    }
}

/// Loads the hooks for a thread in `cwd`.
pub fn load_hooks(keel_home: &Path, cwd: &Path, project_trusted: bool) -> HookInventory {
    let user_config = keel_home.join(crate::config::CONFIG_FILE_NAME);
    let user_text = std::fs::read_to_string(&user_config).unwrap_or_default();
    let states = read_states(&user_text);
    let mut layers = vec![(HookSource::User, keel_home.to_path_buf())];
    if project_trusted {
        let repo_root = crate::repo_root::repo_root(cwd);
        let mut dirs: Vec<&Path> = Vec::new();
        for dir in cwd.ancestors() {
            dirs.push(dir);
            if repo_root.is_none_or(|root| dir == root) {
                break;
            }
        }
        // From the repository root down to the working directory.
        for dir in dirs.into_iter().rev() {
            layers.push((HookSource::Project, dir.join(".codex")));
        }
    }
    let mut warnings = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    for (layer_index, (source, dir)) in layers.iter().enumerate() {
        let json_path = dir.join("hooks.json");
        let toml_path = dir.join(crate::config::CONFIG_FILE_NAME);
        let from_json = read_json_layer(&json_path, &mut warnings);
        let from_toml = read_toml_layer(&toml_path, &mut warnings);
        if !from_json.is_empty() && !from_toml.is_empty() {
            warnings.push(format!(
                "loading hooks from both {} and {}; prefer one of them",
                json_path.display(),
                toml_path.display()
            ));
        }
        for (file_index, (path, hooks)) in [(json_path, from_json), (toml_path, from_toml)]
            .into_iter()
            .enumerate()
        {
            for hook in hooks {
                found.push(Found {
                    layer: layer_index,
                    file: file_index,
                    key: hook_key(&path, &hook),
                    path: path.clone(),
                    source: *source,
                    plugin_id: None,
                    hook,
                });
            }
        }
    }
    found.extend(plugin_hooks(keel_home, layers.len(), &mut warnings));
    found.sort_by_key(|found| {
        (
            found.hook.event.rank(),
            found.layer,
            found.file,
            found.hook.group_index,
            found.hook.handler_index,
        )
    });
    let hooks = found
        .into_iter()
        .enumerate()
        .map(|(display_order, found)| {
            let current_hash = definition_hash(&found.hook);
            let state = states.get(&found.key);
            Hook {
                trust: status(state, &current_hash),
                enabled: state.and_then(|state| state.enabled).unwrap_or(true),
                key: found.key,
                event: found.hook.event,
                matcher: found.hook.matcher,
                handler: found.hook.handler,
                source: found.source,
                source_path: found.path,
                display_order,
                current_hash,
                plugin_id: found.plugin_id,
            }
        })
        .collect();
    HookInventory {
        hooks,
        warnings,
        embedded: Vec::new(),
    }
}

/// One hook as found, with what orders it and the key its trust is recorded under.
struct Found {
    layer: usize,
    file: usize,
    key: String,
    path: PathBuf,
    source: HookSource,
    plugin_id: Option<String>,
    hook: DefinedHook,
}

/// The hooks of installed, enabled plugins, as layers after `first_layer`: each command's
/// `${CLAUDE_PLUGIN_ROOT}` is the plugin's installed copy, and it runs with
/// `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` set.
fn plugin_hooks(keel_home: &Path, first_layer: usize, warnings: &mut Vec<String>) -> Vec<Found> {
    crate::plugin_files::installed_plugins(keel_home)
        .iter()
        .enumerate()
        .flat_map(|(offset, plugin)| {
            hooks_of_plugin(plugin, keel_home, first_layer + offset, warnings)
        })
        .collect()
}

/// One plugin's hooks, as layer `layer`.
fn hooks_of_plugin(
    plugin: &crate::plugin_files::InstalledPlugin,
    keel_home: &Path,
    layer: usize,
    warnings: &mut Vec<String>,
) -> Vec<Found> {
    let root = plugin.dir.display().to_string();
    let data = plugin.data_dir(keel_home).display().to_string();
    let mut found = Vec::new();
    for (file, (path, prefix, value)) in plugin.hook_sources().into_iter().enumerate() {
        for mut hook in parse_hooks(value, &path, warnings) {
            hook.handler.command = hook.handler.command.replace("${CLAUDE_PLUGIN_ROOT}", &root);
            hook.handler.env = vec![
                ("CLAUDE_PLUGIN_ROOT".to_string(), root.clone()),
                ("CLAUDE_PLUGIN_DATA".to_string(), data.clone()),
            ];
            found.push(Found {
                layer,
                file,
                key: format!(
                    "{prefix}:{}:{}:{}",
                    hook.event.snake_name(),
                    hook.group_index,
                    hook.handler_index
                ),
                path: path.clone(),
                source: HookSource::Plugin,
                plugin_id: Some(plugin.id.to_string()),
                hook,
            });
        }
    }
    found
}

/// The trust keys and events of `plugin`'s hooks (for `plugin/read`), and the problems found.
pub fn plugin_hook_keys(
    plugin: &crate::plugin_files::InstalledPlugin,
    keel_home: &Path,
) -> (Vec<(String, HookEvent)>, Vec<String>) {
    let mut warnings = Vec::new();
    let keys = hooks_of_plugin(plugin, keel_home, 0, &mut warnings)
        .into_iter()
        .map(|found| (found.key, found.hook.event))
        .collect();
    (keys, warnings)
}

fn read_json_layer(path: &Path, warnings: &mut Vec<String>) -> Vec<DefinedHook> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(root) => parse_hooks(root, path, warnings),
        Err(err) => {
            warnings.push(format!(
                "failed to parse hooks config {}: {err}",
                path.display()
            ));
            Vec::new()
        }
    }
}

fn read_toml_layer(path: &Path, warnings: &mut Vec<String>) -> Vec<DefinedHook> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        // A config file that does not parse is reported where the config is loaded.
        return Vec::new();
    };
    let Some(toml::Value::Table(hooks)) = table.get("hooks") else {
        return Vec::new();
    };
    let mut events = hooks.clone();
    events.remove("state");
    if events.is_empty() {
        return Vec::new();
    }
    match serde_json::to_value(&events) {
        Ok(events) => parse_hooks(serde_json::json!({ "hooks": events }), path, warnings),
        Err(err) => {
            warnings.push(format!(
                "failed to read the hooks in {}: {err}",
                path.display()
            ));
            Vec::new()
        }
    }
}
