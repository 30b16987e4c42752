//! `[shell_environment_policy]`: which environment variables commands run by the model see.
//!
//! The steps run in Codex's order: start from the inherited set, drop the default secret-like
//! names unless `ignore_default_excludes`, drop `exclude` matches, add `set`, and finally keep
//! only `include_only` matches when that list is non-empty. Patterns are `*`/`?` globs matched
//! case-insensitively against variable names.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Names dropped unless `ignore_default_excludes` is true: likely credentials.
pub const DEFAULT_EXCLUDES: [&str; 3] = ["*KEY*", "*SECRET*", "*TOKEN*"];

/// Variables kept by `inherit = "core"` (plus every `LC_*`).
pub const CORE_VARS: [&str; 11] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "TERM",
];

/// Which variables of the parent environment a command starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(rename_all = "lowercase")]
pub enum ShellEnvironmentPolicyInherit {
    /// The whole parent environment.
    #[default]
    All,
    /// Only [`CORE_VARS`] and `LC_*`.
    Core,
    /// Nothing.
    None,
}

/// The resolved `[shell_environment_policy]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellEnvironmentPolicy {
    /// The starting set of variables.
    pub inherit: ShellEnvironmentPolicyInherit,
    /// Keep names matching [`DEFAULT_EXCLUDES`].
    pub ignore_default_excludes: bool,
    /// Globs of names to drop.
    pub exclude: Vec<String>,
    /// Variables to set, after the excludes.
    pub set: BTreeMap<String, String>,
    /// If non-empty, globs of the only names kept (applied last).
    pub include_only: Vec<String>,
}

impl ShellEnvironmentPolicy {
    /// Builds a command's environment from `vars` (the parent environment) under this policy.
    pub fn create_env(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = match self.inherit {
            ShellEnvironmentPolicyInherit::All => vars.into_iter().collect(),
            ShellEnvironmentPolicyInherit::Core => vars
                .into_iter()
                .filter(|(name, _)| is_core_var(name))
                .collect(),
            ShellEnvironmentPolicyInherit::None => BTreeMap::new(),
        };
        if !self.ignore_default_excludes {
            env.retain(|name, _| !matches_any(name, DEFAULT_EXCLUDES));
        }
        env.retain(|name, _| !matches_any(name, &self.exclude));
        env.extend(self.set.clone());
        if !self.include_only.is_empty() {
            env.retain(|name, _| matches_any(name, &self.include_only));
        }
        env
    }

    /// [`ShellEnvironmentPolicy::create_env`] applied to this process's environment (variables
    /// whose name or value is not UTF-8 are skipped).
    pub fn create_env_from_process(&self) -> BTreeMap<String, String> {
        self.create_env(std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        }))
    }
}

fn is_core_var(name: &str) -> bool {
    CORE_VARS.contains(&name) || name.starts_with("LC_")
}

fn matches_any<I, S>(name: &str, patterns: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    patterns
        .into_iter()
        .any(|pattern| glob_matches(pattern.as_ref(), name))
}

/// Case-insensitive glob match where `*` matches any run of characters and `?` exactly one.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().flat_map(char::to_lowercase).collect();
    let name: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
    let (mut p, mut n) = (0, 0);
    // Position of the last `*` seen and the name position it is currently matched up to;
    // on a mismatch the star swallows one more character (linear backtracking).
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars(pairs).into_iter().collect()
    }

    const PARENT: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C"),
        ("TERM", "xterm"),
        ("OPENAI_API_KEY", "sk"),
        ("github_token", "gh"),
        ("MY_SECRET_THING", "s"),
        ("EDITOR", "vi"),
        ("CARGO_HOME", "/c"),
    ];

    #[test]
    fn default_inherits_all_minus_secrets() {
        let env = ShellEnvironmentPolicy::default().create_env(vars(PARENT));
        assert_eq!(
            env,
            map(&[
                ("CARGO_HOME", "/c"),
                ("EDITOR", "vi"),
                ("HOME", "/home/u"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("PATH", "/usr/bin"),
                ("TERM", "xterm"),
            ])
        );
    }

    #[test]
    fn ignore_default_excludes_keeps_secrets() {
        let policy = ShellEnvironmentPolicy {
            ignore_default_excludes: true,
            ..ShellEnvironmentPolicy::default()
        };
        assert_eq!(policy.create_env(vars(PARENT)), map(PARENT));
    }

    #[test]
    fn core_keeps_only_core_vars() {
        let policy = ShellEnvironmentPolicy {
            inherit: ShellEnvironmentPolicyInherit::Core,
            ..ShellEnvironmentPolicy::default()
        };
        assert_eq!(
            policy.create_env(vars(PARENT)),
            map(&[
                ("HOME", "/home/u"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("PATH", "/usr/bin"),
                ("TERM", "xterm"),
            ])
        );
    }

    #[test]
    fn none_with_set() {
        let policy = ShellEnvironmentPolicy {
            inherit: ShellEnvironmentPolicyInherit::None,
            set: map(&[("CI", "1"), ("API_TOKEN", "kept")]),
            ..ShellEnvironmentPolicy::default()
        };
        // `set` comes after the excludes, so an explicitly set secret-like name survives.
        assert_eq!(
            policy.create_env(vars(PARENT)),
            map(&[("API_TOKEN", "kept"), ("CI", "1")])
        );
    }

    #[test]
    fn exclude_then_set_then_include_only() {
        let policy = ShellEnvironmentPolicy {
            exclude: vec!["lc_*".to_string(), "EDIT?R".to_string()],
            set: map(&[("PATH", "/opt/bin"), ("EXTRA", "x")]),
            include_only: vec!["PATH".to_string(), "L*".to_string(), "E*".to_string()],
            ..ShellEnvironmentPolicy::default()
        };
        assert_eq!(
            policy.create_env(vars(PARENT)),
            map(&[("EXTRA", "x"), ("LANG", "C.UTF-8"), ("PATH", "/opt/bin")])
        );
    }

    #[test]
    fn glob_matching() {
        let cases = [
            ("*KEY*", "OPENAI_API_KEY", true),
            ("*KEY*", "keyboard", true),
            ("*KEY*", "KY", false),
            ("PATH", "path", true),
            ("PATH", "PATHS", false),
            ("P?TH", "PATH", true),
            ("P?TH", "PTH", false),
            ("*", "", true),
            ("", "", true),
            ("", "A", false),
            ("a*b*c", "aXXbYYbZc", true),
            ("a*b*c", "aXXbYYbZ", false),
            ("*_*_*", "A_B", false),
            ("**x", "yyx", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(glob_matches(pattern, name), expected, "{pattern} vs {name}");
        }
    }
}
