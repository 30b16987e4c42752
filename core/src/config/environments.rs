//! Named environments: `[environments.<id>]` tables name exec-servers (a URL and where its
//! token is), and `environment = "<id>"` chooses the one a thread's commands run and patches
//! are written on (`"local"`: this machine). `exec_server_url` stays the unnamed shortcut.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The id that always means this machine.
pub const LOCAL_ENVIRONMENT: &str = "local";

/// One `[environments.<id>]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub struct EnvironmentToml {
    /// The exec-server's `ws://` or `wss://` URL.
    pub url: String,
    /// The environment variable holding its bearer token.
    #[serde(default)]
    pub auth_token_env: Option<String>,
    /// A file holding its bearer token (relative paths: to the Keel home).
    #[serde(default)]
    pub auth_token_file: Option<PathBuf>,
    /// The bearer token itself, as Codex's `environments.toml` writes it (a file or a
    /// variable keeps it out of the configuration).
    #[serde(default)]
    pub auth_bearer_token: Option<String>,
}

/// The exec-server a thread uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChosenRemote {
    /// Its name, when it was chosen by name.
    pub id: Option<String>,
    pub url: String,
    pub token_env: Option<String>,
    pub token_file: Option<PathBuf>,
    /// The token written in the configuration.
    pub token: Option<String>,
}

/// Why a URL is not an exec-server URL, if it is not.
pub(crate) fn ws_url_problem(url: &str) -> Option<String> {
    match reqwest::Url::parse(url) {
        Err(err) => Some(format!(
            "`{url}` is not a URL ({err}); expected e.g. `ws://127.0.0.1:4500`"
        )),
        Ok(parsed) if !matches!(parsed.scheme(), "ws" | "wss") => Some(format!(
            "`{url}` has scheme `{}`; expected `ws` or `wss`",
            parsed.scheme()
        )),
        Ok(_) => None,
    }
}

/// A problem with the environment settings: the dotted key it concerns and what is wrong.
pub(crate) type EnvironmentProblem = (String, String);

/// The remote the settings choose: the named `environment` (or none for `local`), else
/// `exec_server_url`, else none (this machine).
pub(crate) fn choose(
    environment: Option<&str>,
    environments: &BTreeMap<String, EnvironmentToml>,
    exec_server_url: Option<String>,
    exec_server_auth_token_env: Option<String>,
    keel_home: &Path,
) -> Result<Option<ChosenRemote>, EnvironmentProblem> {
    for (id, env) in environments {
        if id == LOCAL_ENVIRONMENT {
            return Err((
                format!("environments.{id}"),
                "`local` is reserved for this machine; give the environment another name"
                    .to_string(),
            ));
        }
        if let Some(problem) = ws_url_problem(&env.url) {
            return Err((format!("environments.{id}.url"), problem));
        }
        let sources = [
            env.auth_token_env.is_some(),
            env.auth_token_file.is_some(),
            env.auth_bearer_token.is_some(),
        ];
        if sources.iter().filter(|given| **given).count() > 1 {
            return Err((
                format!("environments.{id}"),
                "give one of `auth_token_env`, `auth_token_file` and `auth_bearer_token`"
                    .to_string(),
            ));
        }
    }
    match environment {
        Some(LOCAL_ENVIRONMENT) => Ok(None),
        Some(id) => {
            let Some(env) = environments.get(id) else {
                let known: Vec<&str> = std::iter::once(LOCAL_ENVIRONMENT)
                    .chain(environments.keys().map(String::as_str))
                    .collect();
                return Err((
                    "environment".to_string(),
                    format!(
                        "no environment `{id}`: define `[environments.{id}]` with its `url` \
                         (defined: {})",
                        known.join(", ")
                    ),
                ));
            };
            Ok(Some(ChosenRemote {
                id: Some(id.to_string()),
                url: env.url.clone(),
                token_env: env.auth_token_env.clone(),
                token_file: env
                    .auth_token_file
                    .as_ref()
                    .map(|file| keel_home.join(file)),
                token: env.auth_bearer_token.clone(),
            }))
        }
        None => Ok(exec_server_url.map(|url| ChosenRemote {
            id: None,
            url,
            token_env: exec_server_auth_token_env,
            token_file: None,
            token: None,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envs() -> BTreeMap<String, EnvironmentToml> {
        BTreeMap::from([(
            "build-box".to_string(),
            EnvironmentToml {
                url: "wss://build.internal:4500".to_string(),
                auth_token_env: None,
                auth_token_file: Some(PathBuf::from("tokens/build")),
                auth_bearer_token: None,
            },
        )])
    }

    #[test]
    fn a_name_chooses_its_server_and_local_chooses_this_machine() {
        let home = Path::new("/home/u/.keel");
        let chosen = choose(
            Some("build-box"),
            &envs(),
            Some("ws://127.0.0.1:1".into()),
            None,
            home,
        )
        .unwrap()
        .unwrap();
        assert_eq!(chosen.id.as_deref(), Some("build-box"));
        assert_eq!(chosen.url, "wss://build.internal:4500");
        assert_eq!(chosen.token_file, Some(home.join("tokens/build")));
        assert_eq!(
            choose(
                Some("local"),
                &envs(),
                Some("ws://127.0.0.1:1".into()),
                None,
                home
            )
            .unwrap(),
            None
        );
        let unnamed = choose(None, &envs(), Some("ws://127.0.0.1:1".into()), None, home)
            .unwrap()
            .unwrap();
        assert_eq!(unnamed.id, None);
    }

    #[test]
    fn unknown_names_bad_urls_and_two_token_sources_are_refused() {
        let home = Path::new("/k");
        let (key, message) = choose(Some("gpu"), &envs(), None, None, home).unwrap_err();
        assert_eq!(key, "environment");
        assert!(message.contains("no environment `gpu`"), "{message}");
        assert!(message.contains("local, build-box"), "{message}");
        let mut bad = envs();
        bad.insert(
            "web".to_string(),
            EnvironmentToml {
                url: "https://x".to_string(),
                ..EnvironmentToml::default()
            },
        );
        let (key, message) = choose(None, &bad, None, None, home).unwrap_err();
        assert_eq!(key, "environments.web.url");
        assert!(message.contains("expected `ws` or `wss`"), "{message}");
        let mut both = envs();
        if let Some(env) = both.get_mut("build-box") {
            env.auth_token_env = Some("T".to_string());
        }
        let (key, _) = choose(None, &both, None, None, home).unwrap_err();
        assert_eq!(key, "environments.build-box");
    }
}
