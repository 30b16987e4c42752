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
