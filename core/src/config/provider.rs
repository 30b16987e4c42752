//! Model providers: the `[model_providers.<id>]` tables of `config.toml`, the built-in `openai`
//! and `ollama` entries, and how a provider turns into URLs, headers and an API key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::client::WireApi;

use crate::config_error::{ConfigError, Result};

/// Id of the built-in OpenAI provider (the default `model_provider`).
pub const OPENAI_PROVIDER_ID: &str = "openai";
/// Id of the built-in Ollama provider.
pub const OLLAMA_PROVIDER_ID: &str = "ollama";
/// The id of the built-in LM Studio provider (its local server, on port 1234).
pub const LMSTUDIO_PROVIDER_ID: &str = "lmstudio";
/// Where LM Studio's server listens unless told otherwise.
pub const LMSTUDIO_DEFAULT_BASE_URL: &str = "http://localhost:1234/v1";
/// Base URL of the built-in OpenAI provider unless `OPENAI_BASE_URL` is set.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Base URL of the built-in Ollama provider.
pub const OLLAMA_DEFAULT_BASE_URL: &str = "http://localhost:11434/v1";

/// Id of the built-in local provider Codex calls `oss` (`--oss`): an Ollama-compatible server.
pub const OSS_PROVIDER_ID: &str = "oss";
/// Retries of a failed request when the provider does not say.
pub const DEFAULT_REQUEST_MAX_RETRIES: u64 = 4;
/// Reconnections of a dropped stream when the provider does not say.
pub const DEFAULT_STREAM_MAX_RETRIES: u64 = 5;
/// Idle time after which a stream is considered dropped, when the provider does not say.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
/// Upper bound on `request_max_retries`, whatever the file says (as in Codex).
pub const MAX_REQUEST_MAX_RETRIES: u64 = 100;
/// Upper bound on `stream_max_retries`, whatever the file says (as in Codex).
pub const MAX_STREAM_MAX_RETRIES: u64 = 100;

/// One model provider, as written under `[model_providers.<id>]` (same keys as Codex).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelProviderInfo {
    /// Display name; defaults to the provider id when the file leaves it out.
    #[serde(default)]
    pub name: String,
    /// Base URL the endpoint path is appended to; `None` means the OpenAI default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key; `None` means no key is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_key: Option<String>,
    /// Extra help shown when the `env_key` variable is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_key_instructions: Option<String>,
    /// Which API the provider speaks.
    #[serde(default)]
    pub wire_api: WireApi,
    /// Query parameters added to every request URL (e.g. Azure's `api-version`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query_params: BTreeMap<String, String>,
    /// Static HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub http_headers: BTreeMap<String, String>,
    /// HTTP headers whose values come from environment variables (header → variable).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_http_headers: BTreeMap<String, String>,
    /// Retries of a failed request; see [`ModelProviderInfo::request_max_retries`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_max_retries: Option<u64>,
    /// Reconnections of a dropped stream; see [`ModelProviderInfo::stream_max_retries`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_max_retries: Option<u64>,
    /// Idle stream timeout in milliseconds; see [`ModelProviderInfo::stream_idle_timeout`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// Chat wire: the field of an assistant message that carries its reasoning back to the
    /// model within a turn (`reasoning_content` for DeepSeek's thinking mode, `reasoning` for
    /// LocalAI); see [`ModelProviderInfo::chat_reasoning_field_for`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_reasoning_field: Option<String>,
    /// Takes OpenAI's credentials (as Codex): `CODEX_API_KEY` first, then the `env_key`
    /// variable. On for the built-in `openai` provider.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_openai_auth: bool,
    /// The key `keel login` stored, for a provider that takes OpenAI's credentials (read
    /// when the configuration loads; never written to a file from here).
    #[serde(skip)]
    pub stored_api_key: Option<super::stored_key::StoredApiKey>,
}

/// Parts of a base URL that mark an Azure OpenAI endpoint.
const AZURE_HOST_MARKERS: &[&str] = &[
    "openai.azure.",
    "cognitiveservices.azure.",
    "aoai.azure.",
    "azure-api.",
    "azurefd.",
    "windows.net/openai",
];

/// The variable `codex exec` (and OpenAI's SDKs driving it) reads OpenAI's API key from.
pub const CODEX_API_KEY_ENV: &str = "CODEX_API_KEY";

impl ModelProviderInfo {
    /// The API key: for a provider taking OpenAI's credentials `CODEX_API_KEY`, then the key
    /// `keel login` stored; then the `env_key` variable; `None` if the provider needs none.
    ///
    /// A missing or blank variable is an error naming the variable, the provider and the
    /// provider's `env_key_instructions`.
    pub fn api_key(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>> {
        if self.requires_openai_auth
            && let Some(value) = env(CODEX_API_KEY_ENV).filter(|v| !v.trim().is_empty())
        {
            return Ok(Some(value));
        }
        if let Some(stored) = self
            .stored_api_key
            .as_ref()
            .filter(|_| self.requires_openai_auth)
        {
            return Ok(Some(stored.expose().to_string()));
        }
        let Some(var) = &self.env_key else {
            return Ok(None);
        };
        match env(var) {
            Some(value) if !value.trim().is_empty() => Ok(Some(value)),
            _ => Err(ConfigError::MissingEnvVar {
                provider: self.name.clone(),
                var: var.clone(),
                instructions: self.env_key_instructions.clone(),
            }),
        }
    }

    /// Whether the provider compacts a conversation itself (a Responses request ending in a
    /// `compaction_trigger` item), as Codex decides it: OpenAI's API (the provider named
    /// `OpenAI`) and Azure OpenAI (named `azure`, or on an Azure host).
    pub fn supports_remote_compaction(&self) -> bool {
        if !self.wire_api.capabilities().remote_compaction {
            return false;
        }
        let base_url = self.base_url().to_ascii_lowercase();
        self.name == "OpenAI"
            || self.name.eq_ignore_ascii_case("azure")
            || AZURE_HOST_MARKERS
                .iter()
                .any(|marker| base_url.contains(marker))
    }

    /// Retries of a failed request: the configured value capped at 100, default 4.
    pub fn request_max_retries(&self) -> u64 {
        self.request_max_retries
            .unwrap_or(DEFAULT_REQUEST_MAX_RETRIES)
            .min(MAX_REQUEST_MAX_RETRIES)
    }

    /// Reconnections of a dropped stream: the configured value capped at 100, default 5.
    pub fn stream_max_retries(&self) -> u64 {
        self.stream_max_retries
            .unwrap_or(DEFAULT_STREAM_MAX_RETRIES)
            .min(MAX_STREAM_MAX_RETRIES)
    }

    /// How long a stream may stay silent before it is treated as dropped (default 300 s).
    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(
            self.stream_idle_timeout_ms
                .unwrap_or(DEFAULT_STREAM_IDLE_TIMEOUT_MS),
        )
    }

    /// Headers for every request: `http_headers` plus each `env_http_headers` entry whose
    /// variable is set to a non-blank value (those win on a name clash).
    pub fn headers(&self, env: &dyn Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
        let mut headers = self.http_headers.clone();
        for (header, var) in &self.env_http_headers {
            if let Some(value) = env(var)
                && !value.trim().is_empty()
            {
                headers.insert(header.clone(), value);
            }
        }
        headers
    }

    /// The field reasoning goes back in for `model` on the Chat wire: the configured one
    /// (`""` for none), else `reasoning_content` for DeepSeek models, which refuse a tool
    /// step of a thinking turn without it; else none.
    pub fn chat_reasoning_field_for(&self, model: &str) -> Option<String> {
        match &self.chat_reasoning_field {
            Some(field) if field.is_empty() => None,
            Some(field) => Some(field.clone()),
            None if model.to_ascii_lowercase().contains("deepseek") => {
                Some("reasoning_content".to_string())
            }
            None => None,
        }
    }

    /// The base URL without a trailing `/`, falling back to the OpenAI default.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(OPENAI_DEFAULT_BASE_URL)
            .trim_end_matches('/')
    }

    /// `base_url` + `/` + `path` + the percent-encoded `query_params`.
    pub fn url_for(&self, path: &str) -> String {
        let mut url = format!("{}/{}", self.base_url(), path.trim_start_matches('/'));
        let mut separator = if url.contains('?') { '&' } else { '?' };
        for (key, value) in &self.query_params {
            url.push(separator);
            url.push_str(&percent_encode(key));
            url.push('=');
            url.push_str(&percent_encode(value));
            separator = '&';
        }
        url
    }

    /// The URL of this provider's endpoint: `/responses` or `/chat/completions` per `wire_api`.
    pub fn endpoint_url(&self) -> String {
        self.url_for(self.wire_api.endpoint_path())
    }
}

/// The built-in providers, `openai` and `ollama`; a non-blank `openai_base_url` (the
/// `OPENAI_BASE_URL` variable) replaces the OpenAI base URL.
pub fn built_in_model_providers(
    openai_base_url: Option<&str>,
) -> BTreeMap<String, ModelProviderInfo> {
    built_in_model_providers_with(openai_base_url, None)
}

/// The built-in providers, with `oss` at `oss_base_url` (else the local Ollama port).
pub fn built_in_model_providers_with(
    openai_base_url: Option<&str>,
    oss_base_url: Option<&str>,
) -> BTreeMap<String, ModelProviderInfo> {
    let openai_base_url = openai_base_url
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .unwrap_or(OPENAI_DEFAULT_BASE_URL);
    let openai = ModelProviderInfo {
        name: "OpenAI".to_string(),
        base_url: Some(openai_base_url.to_string()),
        env_key: Some("OPENAI_API_KEY".to_string()),
        env_key_instructions: Some(
            "Create an API key at https://platform.openai.com/api-keys and export it \
             (CODEX_API_KEY is read first)."
                .to_string(),
        ),
        requires_openai_auth: true,
        wire_api: WireApi::Responses,
        env_http_headers: BTreeMap::from([
            (
                "OpenAI-Organization".to_string(),
                "OPENAI_ORGANIZATION".to_string(),
            ),
            ("OpenAI-Project".to_string(), "OPENAI_PROJECT".to_string()),
        ]),
        ..ModelProviderInfo::default()
    };
    let ollama = ModelProviderInfo {
        name: "Ollama".to_string(),
        base_url: Some(OLLAMA_DEFAULT_BASE_URL.to_string()),
        wire_api: WireApi::Chat,
        ..ModelProviderInfo::default()
    };
    let oss = ModelProviderInfo {
        name: "gpt-oss (local)".to_string(),
        base_url: Some(
            oss_base_url
                .map(str::trim)
                .filter(|url| !url.is_empty())
                .unwrap_or(OLLAMA_DEFAULT_BASE_URL)
                .to_string(),
        ),
        ..ollama.clone()
    };
    let lmstudio = ModelProviderInfo {
        name: "LM Studio".to_string(),
        base_url: Some(LMSTUDIO_DEFAULT_BASE_URL.to_string()),
        ..ollama.clone()
    };
    BTreeMap::from([
        (OPENAI_PROVIDER_ID.to_string(), openai),
        (OLLAMA_PROVIDER_ID.to_string(), ollama),
        (OSS_PROVIDER_ID.to_string(), oss),
        (LMSTUDIO_PROVIDER_ID.to_string(), lmstudio),
    ])
}

/// Looks a variable up in the process environment; pass as the `env` of
/// [`ModelProviderInfo::api_key`] and [`ModelProviderInfo::headers`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn a_provider_that_does_not_name_its_wire_speaks_responses()
    -> std::result::Result<(), toml::de::Error> {
        let provider: ModelProviderInfo =
            toml::from_str("name = \"gateway\"\nbase_url = \"http://127.0.0.1:9/v1\"\n")?;
        assert_eq!(provider.wire_api, WireApi::Responses);
        assert_eq!(provider.endpoint_url(), "http://127.0.0.1:9/v1/responses");
        Ok(())
    }

    #[test]
    fn openai_built_in() {
        let providers = built_in_model_providers(None);
        let openai = &providers["openai"];
        assert_eq!(openai.name, "OpenAI");
        assert_eq!(openai.wire_api, WireApi::Responses);
        assert_eq!(openai.endpoint_url(), "https://api.openai.com/v1/responses");
        assert_eq!(
            openai
                .api_key(&env_of(&[("OPENAI_API_KEY", "sk-test")]))
                .unwrap(),
            Some("sk-test".to_string())
        );
        assert_eq!(openai.request_max_retries(), 4);
        assert_eq!(openai.stream_max_retries(), 5);
        assert_eq!(openai.stream_idle_timeout(), Duration::from_secs(300));
    }

    #[test]
    fn openai_base_url_override_and_blank_ignored() {
        let providers = built_in_model_providers(Some("http://127.0.0.1:9/v1/"));
        assert_eq!(
            providers["openai"].endpoint_url(),
            "http://127.0.0.1:9/v1/responses"
        );
        let providers = built_in_model_providers(Some("  "));
        assert_eq!(providers["openai"].base_url(), "https://api.openai.com/v1");
    }

    #[test]
    fn ollama_built_in_needs_no_key() {
        let providers = built_in_model_providers(None);
        let ollama = &providers["ollama"];
        assert_eq!(ollama.name, "Ollama");
        assert_eq!(ollama.wire_api, WireApi::Chat);
        assert_eq!(ollama.api_key(&env_of(&[])).unwrap(), None);
        assert_eq!(
            ollama.endpoint_url(),
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn missing_api_key_names_variable_provider_and_instructions() {
        let provider = ModelProviderInfo {
            name: "Azure".to_string(),
            env_key: Some("AZURE_OPENAI_API_KEY".to_string()),
            env_key_instructions: Some("Get one from the Azure portal.".to_string()),
            ..ModelProviderInfo::default()
        };
        let err = provider.api_key(&env_of(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing API key for model provider `Azure`: set the environment variable \
             `AZURE_OPENAI_API_KEY`. Get one from the Azure portal."
        );
        // A blank value counts as missing.
        let err = provider
            .api_key(&env_of(&[("AZURE_OPENAI_API_KEY", "  ")]))
            .unwrap_err();
        assert!(matches!(err, ConfigError::MissingEnvVar { .. }), "{err}");
    }

    /// As `codex exec`: OpenAI-auth providers read `CODEX_API_KEY` first; a provider with
    /// only an `env_key` never falls back to it.
    #[test]
    fn codex_api_key_comes_first_for_openai_auth_providers_only() {
        let openai = &built_in_model_providers(None)["openai"];
        let both = [("CODEX_API_KEY", "codex"), ("OPENAI_API_KEY", "openai")];
        assert_eq!(
            openai.api_key(&env_of(&both)).unwrap().as_deref(),
            Some("codex")
        );
        assert_eq!(
            openai
                .api_key(&env_of(&[("OPENAI_API_KEY", "openai")]))
                .unwrap()
                .as_deref(),
            Some("openai")
        );
        let custom = ModelProviderInfo {
            name: "Gateway".to_string(),
            env_key: Some("OPENAI_API_KEY".to_string()),
            ..ModelProviderInfo::default()
        };
        assert_eq!(
            custom.api_key(&env_of(&both)).unwrap().as_deref(),
            Some("openai")
        );
        assert!(
            custom
                .api_key(&env_of(&[("CODEX_API_KEY", "codex")]))
                .is_err()
        );
        let opted_in = ModelProviderInfo {
            requires_openai_auth: true,
            ..custom
        };
        assert_eq!(
            opted_in.api_key(&env_of(&both)).unwrap().as_deref(),
            Some("codex")
        );
    }

    #[test]
    fn missing_api_key_without_instructions() {
        let provider = ModelProviderInfo {
            name: "Mock".to_string(),
            env_key: Some("MOCK_KEY".to_string()),
            ..ModelProviderInfo::default()
        };
        assert_eq!(
            provider.api_key(&env_of(&[])).unwrap_err().to_string(),
            "missing API key for model provider `Mock`: set the environment variable `MOCK_KEY`"
        );
    }

    #[test]
    fn url_for_appends_encoded_query_params() {
        let provider = ModelProviderInfo {
            base_url: Some("https://example.openai.azure.com/openai/".to_string()),
            wire_api: WireApi::Responses,
            query_params: BTreeMap::from([
                ("api-version".to_string(), "2025-04-01-preview".to_string()),
                ("note".to_string(), "a b&c".to_string()),
            ]),
            ..ModelProviderInfo::default()
        };
        assert_eq!(
            provider.endpoint_url(),
            "https://example.openai.azure.com/openai/responses?api-version=2025-04-01-preview&note=a%20b%26c"
        );
        assert_eq!(
            provider.url_for("/models"),
            "https://example.openai.azure.com/openai/models?api-version=2025-04-01-preview&note=a%20b%26c"
        );
    }

    #[test]
    fn url_for_without_base_url_uses_openai_default() {
        let provider = ModelProviderInfo::default();
        assert_eq!(
            provider.endpoint_url(),
            "https://api.openai.com/v1/responses"
        );
    }

    #[test]
    fn headers_merge_static_and_env() {
        let provider = ModelProviderInfo {
            http_headers: BTreeMap::from([
                ("X-Static".to_string(), "1".to_string()),
                ("X-Both".to_string(), "static".to_string()),
            ]),
            env_http_headers: BTreeMap::from([
                ("X-Both".to_string(), "BOTH_VAR".to_string()),
                ("X-Env".to_string(), "ENV_VAR".to_string()),
                ("X-Unset".to_string(), "UNSET_VAR".to_string()),
                ("X-Blank".to_string(), "BLANK_VAR".to_string()),
            ]),
            ..ModelProviderInfo::default()
        };
        let env = env_of(&[
            ("BOTH_VAR", "from-env"),
            ("ENV_VAR", "e"),
            ("BLANK_VAR", ""),
        ]);
        assert_eq!(
            provider.headers(&env),
            BTreeMap::from([
                ("X-Both".to_string(), "from-env".to_string()),
                ("X-Env".to_string(), "e".to_string()),
                ("X-Static".to_string(), "1".to_string()),
            ])
        );
    }

    #[test]
    fn retries_are_capped() {
        let provider = ModelProviderInfo {
            request_max_retries: Some(1_000),
            stream_max_retries: Some(101),
            stream_idle_timeout_ms: Some(1_500),
            ..ModelProviderInfo::default()
        };
        assert_eq!(provider.request_max_retries(), 100);
        assert_eq!(provider.stream_max_retries(), 100);
        assert_eq!(provider.stream_idle_timeout(), Duration::from_millis(1_500));
    }
}
