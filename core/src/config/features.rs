//! The `[features]` switches Keel reads, described once for everything that lists them
//! (`keel features`, the app-server's `experimentalFeature/list`).

use super::Config;

/// One switch under `[features]`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct FeatureInfo {
    /// Its key under `[features]`.
    pub name: &'static str,
    /// What it does, in a few words.
    pub about: &'static str,
    /// Its default (`None`: decided per model family).
    pub default: Option<bool>,
    /// Its state under a configuration (`None`: left to the model family).
    pub state: fn(&Config) -> Option<bool>,
    /// For a built-in's own switch: its key in [`Config::switches`], read in place of `state`.
    pub switch: Option<&'static str>,
}

impl FeatureInfo {
    /// A built-in's own switch, as a feature.
    pub(crate) fn of_switch(key: &'static str, about: &'static str, default: bool) -> Self {
        Self {
            name: key,
            about,
            default: Some(default),
            state: |_| None,
            switch: Some(key),
        }
    }

    /// Its state under `config` (`None`: left to the model family).
    pub fn state_in(&self, config: &Config) -> Option<bool> {
        match self.switch {
            Some(key) => Some(config.switch(key, self.default.unwrap_or(true))),
            None => (self.state)(config),
        }
    }
}

/// The switches of the engine's own (the built-ins' own switches come from their table:
/// [`crate::features`] lists both); Codex's others load silently.
pub const KEEL_FEATURES: &[FeatureInfo] = &[
    FeatureInfo {
        name: "unified_exec",
        about: "exec_command/write_stdin (interactive processes) instead of shell",
        default: None,
        switch: None,
        state: |config| config.unified_exec,
    },
    FeatureInfo {
        name: "shell_snapshot",
        about: "replay the login shell's environment instead of running the profile per command",
        default: Some(true),
        switch: None,
        state: |config| Some(config.shell_snapshot),
    },
    FeatureInfo {
        name: "shell_tool",
        about: "offer the command tools at all",
        default: Some(true),
        switch: None,
        state: |config| Some(config.shell_tool),
    },
    FeatureInfo {
        name: "multi_agent",
        about: "offer the sub-agent tools",
        default: Some(true),
        switch: None,
        state: |config| Some(config.multi_agent),
    },
    FeatureInfo {
        name: "enable_fanout",
        about: "offer spawn_agents_on_csv",
        default: Some(true),
        switch: None,
        state: |config| Some(config.enable_fanout),
    },
    FeatureInfo {
        name: "checkpoints",
        about: "record the workspace around each turn so thread/revert can restore files",
        default: Some(true),
        switch: None,
        state: |config| Some(config.checkpoints),
    },
    FeatureInfo {
        name: "goals",
        about: "thread goals: offer get_goal/create_goal/update_goal",
        default: Some(true),
        switch: None,
        state: |config| Some(config.goals),
    },
    FeatureInfo {
        name: "code_mode",
        about: "drive the models whose catalogue entry says so in code mode (exec runs their JavaScript)",
        default: Some(true),
        switch: None,
        state: |config| Some(config.code_mode),
    },
];
