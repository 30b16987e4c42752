//! Codex's `environments.toml`, read from the Keel home so a Codex user's file works here:
//! `default` (the environment threads use), `include_local`, and `[[environments]]` with
//! `id`, `url` and `auth_bearer_token`. Entries join `[environments]` of `config.toml`, which
//! wins for an id both define; `environment` in `config.toml` wins over `default`. Codex's
//! exec-servers started by command (`program`) are refused with what to do instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::EnvironmentToml;
use super::toml_model::ConfigToml;
use crate::config_error::{ConfigError, ConfigOrigin, Result};

/// The file's name in the Keel home.
pub const ENVIRONMENTS_FILE_NAME: &str = "environments.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvironmentsFile {
    #[serde(default)]
    default: Option<String>,
    /// Whether `local` is offered besides the file's environments; Keel always offers it.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted from Codex's file; Keel always offers `local`"
    )]
    include_local: Option<bool>,
    #[serde(default)]
    environments: Vec<EnvironmentEntry>,
}

/// One `[[environments]]` entry, with every key Codex reads (the unused ones checked only).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "Codex's keys Keel does not use are accepted, not read"
)]
struct EnvironmentEntry {
    id: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    auth_bearer_token: Option<String>,
    #[serde(default)]
    program: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    connect_timeout_sec: Option<f64>,
    #[serde(default)]
    initialize_timeout_sec: Option<f64>,
    #[serde(default)]
    skills: Option<toml::Value>,
}

fn problem(path: &Path, key: String, message: String) -> ConfigError {
    ConfigError::InvalidValue {
        origin: ConfigOrigin::File(path.to_path_buf()),
        key,
        message,
    }
}

/// Adds the environments of `<keel_home>/environments.toml`, when there is one, to `file`.
pub(crate) fn merge(file: &mut ConfigToml, keel_home: &Path) -> Result<()> {
    let path = keel_home.join(ENVIRONMENTS_FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let parsed: EnvironmentsFile = toml::from_str(&text).map_err(|err| {
        problem(
            &path,
            "(top level)".to_string(),
            err.message().trim().to_string(),
        )
    })?;
    for (index, entry) in parsed.environments.into_iter().enumerate() {
        let key = format!("environments[{index}]");
        if entry.program.is_some() {
            return Err(problem(
                &path,
                format!("{key}.program"),
                format!(
                    "environment `{}` starts its exec-server with a command; Keel does not start \
                     exec-servers: run `keel exec-server --listen ws://HOST:PORT` there and give \
                     its `url`",
                    entry.id
                ),
            ));
        }
        let Some(url) = entry.url else {
            return Err(problem(
                &path,
                format!("{key}.url"),
                format!("environment `{}` has no `url`", entry.id),
            ));
        };
        file.environments
            .entry(entry.id)
            .or_insert(EnvironmentToml {
                url,
                auth_token_env: None,
                auth_token_file: None,
                auth_bearer_token: entry.auth_bearer_token,
            });
    }
    if file.environment.is_none() {
        file.environment = parsed.default;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigOverrides};

    fn home_with(environments: &str, config: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(super::ENVIRONMENTS_FILE_NAME),
            environments,
        )
        .unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        home
    }

    #[test]
    fn codex_environments_join_the_config_whose_own_settings_win() {
        let home = home_with(
            r#"
default = "gpu"
include_local = true
[[environments]]
id = "gpu"
url = "wss://gpu.internal:4500"
auth_bearer_token = "codex-style-token"
connect_timeout_sec = 5
[[environments]]
id = "build"
url = "ws://127.0.0.1:1"
"#,
            "[environments.build]\nurl = \"wss://build.internal:4500\"\n",
        );
        let config = Config::load(home.path(), Vec::new(), ConfigOverrides::default()).unwrap();
        assert_eq!(config.environment.as_deref(), Some("gpu"));
        assert_eq!(
            config.exec_server_url.as_deref(),
            Some("wss://gpu.internal:4500")
        );
        assert_eq!(
            config
                .exec_server_auth_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            Some("codex-style-token".to_string())
        );
        // `environment` in config.toml, and its own table, win.
        let chosen = Config::load(
            home.path(),
            vec![("environment".to_string(), toml::Value::from("build"))],
            ConfigOverrides::default(),
        )
        .unwrap();
        assert_eq!(
            chosen.exec_server_url.as_deref(),
            Some("wss://build.internal:4500")
        );
        assert!(chosen.exec_server_auth_token.is_none());
    }

    #[test]
    fn a_started_exec_server_or_an_unknown_key_is_refused_naming_it() {
        let home = home_with(
            "[[environments]]\nid = \"spawned\"\nprogram = \"codex\"\nargs = [\"exec-server\"]\n",
            "",
        );
        let err = Config::load(home.path(), Vec::new(), ConfigOverrides::default()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("environments.toml"), "{text}");
        assert!(text.contains("Keel does not start exec-servers"), "{text}");
        let home = home_with(
            "[[environments]]\nid = \"x\"\nurl = \"ws://h:1\"\nport = 1\n",
            "",
        );
        let err = Config::load(home.path(), Vec::new(), ConfigOverrides::default()).unwrap_err();
        assert!(err.to_string().contains("port"), "{err}");
    }
}
