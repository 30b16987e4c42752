//! A model's context window, asked of the server that runs it when neither `config.toml`
//! (`model_context_window`) nor Keel's model table knows it — the usual case for local and
//! self-hosted models. It sizes auto-compaction, so a long session is summarised before the
//! server starts cutting its history.
//!
//! Where each server says it:
//! - Ollama: `POST /api/show` — `num_ctx` in `parameters` (the window it runs with) when
//!   the model sets one, else the model's trained `*.context_length` in `model_info`.
//! - OpenAI-compatible `GET /models` entries: `max_model_len` (vLLM), `context_length`
//!   (OpenRouter and similar gateways), `max_context_length` (LM Studio), `context_window`,
//!   `meta.n_ctx_train` (llama.cpp's server).

use std::time::Duration;

use serde_json::Value;

use crate::config::ModelProviderInfo;

/// How long each question may take: a server that does not answer soon is not waited for.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(3);

/// The port Ollama listens on by default.
const OLLAMA_PORT: &str = ":11434";

/// Asks the provider's server for `model`'s context window; `None` when it does not say.
pub(crate) async fn discover_context_window(
    http: &reqwest::Client,
    provider_id: &str,
    provider: &ModelProviderInfo,
    model: &str,
    key: Option<String>,
    headers: std::collections::BTreeMap<String, String>,
) -> Option<u64> {
    let authorized = |request: reqwest::RequestBuilder| {
        let mut request = request.timeout(DISCOVERY_TIMEOUT);
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        match &key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    };
    if looks_like_ollama(provider_id, provider) {
        let root = provider.base_url().trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root);
        let show = authorized(http.post(format!("{root}/api/show")))
            .json(&serde_json::json!({ "model": model }));
        if let Some(window) = ask(show).await.as_ref().and_then(ollama_window) {
            return Some(window);
        }
    }
    let list = authorized(http.get(provider.url_for("models")));
    let listed = ask(list).await?;
    listed["data"]
        .as_array()?
        .iter()
        .find(|entry| {
            entry["id"]
                .as_str()
                .is_some_and(|id| model_ids_match(id, model))
        })
        .and_then(listed_window)
}

/// Sends a request and reads a JSON answer; `None` for anything else.
async fn ask(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The built-in local providers, or any provider on Ollama's port.
fn looks_like_ollama(provider_id: &str, provider: &ModelProviderInfo) -> bool {
    matches!(provider_id, "oss" | "ollama")
        || provider
            .base_url()
            .split('/')
            .nth(2)
            .is_some_and(|host| host.ends_with(OLLAMA_PORT))
}

/// The window of an `/api/show` answer: the `num_ctx` it runs with, else the trained length.
fn ollama_window(show: &Value) -> Option<u64> {
    let configured = show["parameters"].as_str().and_then(|parameters| {
        parameters.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    });
    configured.or_else(|| {
        show["model_info"]
            .as_object()?
            .iter()
            .find_map(|(key, value)| {
                key.ends_with(".context_length")
                    .then(|| value.as_u64())
                    .flatten()
            })
    })
}

/// The window of one `GET /models` entry, under whichever name its server uses.
fn listed_window(entry: &Value) -> Option<u64> {
    [
        &entry["max_model_len"],
        &entry["context_length"],
        &entry["max_context_length"],
        &entry["context_window"],
        &entry["meta"]["n_ctx_train"],
    ]
    .into_iter()
    .find_map(Value::as_u64)
    .filter(|window| *window > 0)
}

/// Whether a model id a server lists is the `wanted` one; Ollama adds `:latest` to a name
/// without a tag.
pub fn model_ids_match(listed: &str, wanted: &str) -> bool {
    listed == wanted || (!wanted.contains(':') && listed == format!("{wanted}:latest"))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn ollama_prefers_the_window_it_runs_with() {
        let show = json!({
            "parameters": "stop \"<|end|>\"\nnum_ctx 8192",
            "model_info": {"general.architecture": "gptoss", "gptoss.context_length": 131072},
        });
        assert_eq!(ollama_window(&show), Some(8192));
        let trained = json!({"model_info": {"llama.context_length": 131072}});
        assert_eq!(ollama_window(&trained), Some(131072));
        assert_eq!(ollama_window(&json!({})), None);
    }

    #[test]
    fn each_servers_model_list_field_is_read() {
        for (entry, window) in [
            (json!({"id": "m", "max_model_len": 32768}), Some(32768)),
            (json!({"id": "m", "context_length": 200000}), Some(200000)),
            (json!({"id": "m", "max_context_length": 4096}), Some(4096)),
            (
                json!({"id": "m", "meta": {"n_ctx_train": 8192}}),
                Some(8192),
            ),
            (json!({"id": "m", "context_length": 0}), None),
            (json!({"id": "m"}), None),
        ] {
            assert_eq!(listed_window(&entry), window, "{entry}");
        }
    }
}
