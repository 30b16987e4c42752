//! `keel exec --oss` checks the local server before the run: that one answers, and that it
//! has the model; when not, it says what to do (start the server, pull the model) instead of
//! failing on the first model request.

use std::time::Duration;

use keel_core::Config;

use super::LocalProvider;
use crate::failure::usage;

/// How long the local server may take to list its models.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// The first Ollama that serves the Responses API (the oldest Codex's `--oss` accepts).
const OLLAMA_RESPONSES_SINCE: [u64; 3] = [0, 13, 4];

/// Whether the Ollama server of `config` serves the Responses API (by its `/api/version`);
/// `--oss` then speaks Responses to it, as Codex does, and Chat to anything else.
pub(super) async fn ollama_serves_responses(config: &Config) -> bool {
    let base = config.model_provider.base_url().trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let Ok(client) = reqwest::Client::builder().timeout(LIST_TIMEOUT).build() else {
        return false;
    };
    let Ok(response) = client.get(format!("{root}/api/version")).send().await else {
        return false;
    };
    let version = response
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|body| body["version"].as_str().map(str::to_string));
    version.is_some_and(|version| at_least(&version, OLLAMA_RESPONSES_SINCE))
}

/// Whether a dotted version (`0.13.5`, `0.14.0-rc1`) is at least `minimum`.
fn at_least(version: &str, minimum: [u64; 3]) -> bool {
    let mut parts = version
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().ok());
    let mut given = [0u64; 3];
    for slot in &mut given {
        match parts.next() {
            Some(Some(number)) => *slot = number,
            Some(None) => return false,
            None => break,
        }
    }
    given >= minimum
}

/// Checks the `--oss` server of `config` (a `server` one) for `config.model`.
pub(super) async fn check_local_server(
    config: &Config,
    server: LocalProvider,
) -> anyhow::Result<()> {
    let provider = &config.model_provider;
    let models = match crate::provider_models::fetch(provider, None, LIST_TIMEOUT).await {
        Ok(models) => models,
        Err(err) => {
            let why = if err.is_timeout() {
                format!("no answer within {}s", LIST_TIMEOUT.as_secs())
            } else {
                "nothing answers there".to_string()
            };
            let start = match server {
                LocalProvider::Ollama => {
                    "Start one (`ollama serve`; LM Studio, vLLM and llama.cpp's server work too), \
                     or point CODEX_OSS_BASE_URL (or CODEX_OSS_PORT) at it."
                }
                LocalProvider::Lmstudio => {
                    "Start LM Studio's server (`lms server start`, or the Developer tab), on port 1234."
                }
            };
            return Err(usage(format!(
                "--oss: no local model server at {} ({why}).\n{start}",
                provider.base_url()
            )));
        }
    };
    // A server that cannot list its models may still serve them.
    if !models.status.is_success() || models.ids.is_empty() || models.has(&config.model) {
        return Ok(());
    }
    let fetch = match server {
        LocalProvider::Ollama => format!("Fetch it with `ollama pull {}`", config.model),
        LocalProvider::Lmstudio => format!("Download it with `lms get {}`", config.model),
    };
    Err(usage(format!(
        "--oss: the server at {} has no model `{}` (it has {}).\n\
         {fetch} (or load it in your server), or pick one it has with -m.",
        provider.base_url(),
        config.model,
        models.shown(10)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(at_least("0.13.4", OLLAMA_RESPONSES_SINCE));
        assert!(at_least("0.14.0-rc1", OLLAMA_RESPONSES_SINCE));
        assert!(at_least("1.0", OLLAMA_RESPONSES_SINCE));
        assert!(!at_least("0.13.3", OLLAMA_RESPONSES_SINCE));
        assert!(!at_least("0.9.10", OLLAMA_RESPONSES_SINCE));
        assert!(!at_least("unknown", OLLAMA_RESPONSES_SINCE));
    }
}
