//! `keel exec --oss` checks the local server before the run: that one answers, and that it
//! has the model; when not, it says what to do (start the server, pull the model) instead of
//! failing on the first model request.

use std::time::Duration;

use keel_core::Config;

use super::LocalProvider;
use crate::failure::usage;

/// How long the local server may take to list its models.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks the `--oss` server of `config` (a `server` one) for `config.model`.
pub(super) async fn check_local_server(
    config: &Config,
    server: LocalProvider,
) -> anyhow::Result<()> {
    let provider = &config.model_provider;
    keel_core::install_tls_provider();
    let client = reqwest::Client::builder().timeout(LIST_TIMEOUT).build()?;
    let url = provider.url_for("models");
    let response = match client.get(&url).send().await {
        Ok(response) => response,
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
    if !response.status().is_success() {
        // A server that cannot list its models may still serve them.
        tracing::debug!(status = %response.status(), %url, "the local server did not list its models");
        return Ok(());
    }
    let listed: Vec<String> = response
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|json| json["data"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|model| model["id"].as_str().map(str::to_string))
        .collect();
    if listed.is_empty() || listed.iter().any(|id| same_model(id, &config.model)) {
        return Ok(());
    }
    let mut shown: Vec<&str> = listed.iter().map(String::as_str).take(10).collect();
    if listed.len() > shown.len() {
        shown.push("...");
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
        shown.join(", ")
    )))
}

/// Whether the server's `listed` id is `wanted`; Ollama adds `:latest` to a name without a tag.
fn same_model(listed: &str, wanted: &str) -> bool {
    listed == wanted || (!wanted.contains(':') && listed == format!("{wanted}:latest"))
}
