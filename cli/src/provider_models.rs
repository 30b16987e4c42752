//! Asking a provider which models it serves (`GET {base_url}/models`), for the checks that run
//! before any model does (`keel doctor`, `keel exec --oss`).

use std::time::Duration;

use keel_core::config::{ModelProviderInfo, process_env};

/// A provider's answer to `GET /models`.
pub(crate) struct ModelList {
    /// The HTTP status.
    pub status: reqwest::StatusCode,
    /// The model ids listed (none when the body is not an OpenAI-style list).
    pub ids: Vec<String>,
    /// The body as text, for error messages.
    pub body: String,
}

impl ModelList {
    /// Whether the list names `wanted`.
    pub(crate) fn has(&self, wanted: &str) -> bool {
        self.ids
            .iter()
            .any(|id| keel_core::model_ids_match(id, wanted))
    }

    /// Up to `max` of the ids, for messages.
    pub(crate) fn shown(&self, max: usize) -> String {
        let mut shown: Vec<&str> = self.ids.iter().map(String::as_str).take(max).collect();
        if self.ids.len() > shown.len() {
            shown.push("...");
        }
        shown.join(", ")
    }
}

/// Asks `provider` for its models, with its headers and `key`, within `timeout`.
pub(crate) async fn fetch(
    provider: &ModelProviderInfo,
    key: Option<&str>,
    timeout: Duration,
) -> Result<ModelList, reqwest::Error> {
    keel_core::install_tls_provider();
    let client = reqwest::Client::builder().timeout(timeout).build()?;
    let mut request = client.get(provider.url_for("models"));
    for (header, value) in provider.headers(&process_env) {
        request = request.header(header, value);
    }
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let ids = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|json| json["data"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|model| model["id"].as_str().map(str::to_string))
        .collect();
    Ok(ModelList { status, ids, body })
}
