//! `modelProvider/*` (Codex 0.171): the providers of the user's file and OpenAI, which one new
//! threads use, a gateway editor, and what the default provider offers. Writes go through the
//! same checked `config.toml` edit as `config/value/write`. Keel drives OpenAI-compatible
//! endpoints only: Bedrock and Vertex AI tables a Codex file holds are listed, never written.

use std::collections::BTreeMap;

use keel_core::config::{self, OPENAI_PROVIDER_ID, WireApi};
use keel_protocol::app_server::{
    ConfigEdit, ConfigWriteResponse, GatewayAuth, MergeStrategy,
    ModelProviderCapabilitiesReadResponse, ModelProviderConfigWriteParams,
    ModelProviderConfigWriteResponse, ModelProviderDefaultSetParams, ModelProviderListResponse,
    ModelProviderSummary, NoParams, ProviderSettings, ProviderSettingsPatch, ThreadOverrides,
};
use serde_json::{Value, json};

use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// The error of a request naming a provider that is not configured (Codex's words).
pub(crate) fn not_configured(provider: &str) -> AppServerError {
    AppServerError::Refused {
        message: format!(
            "This chat uses model provider \u{201c}{provider}\u{201d}, which is no longer configured. Restore this provider\u{2019}s configuration to continue."
        ),
        data: json!({"type": "modelProviderNotConfigured", "modelProvider": provider}),
    }
}

/// A refused write, with the code Codex clients branch on.
fn refused(message: &str, code: &str) -> AppServerError {
    AppServerError::Refused {
        message: message.to_string(),
        data: json!({"config_write_error_code": code}),
    }
}

/// The `[model_providers.*]` tables of the user's file, as written.
fn file_tables(state: &AppState) -> Result<BTreeMap<String, toml::Table>> {
    let path = state.keel_home().join(config::CONFIG_FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(AppServerError::Io {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let table: toml::Table = text
        .parse()
        .map_err(|err| AppServerError::InvalidRequest(format!("{}: {err}", path.display())))?;
    Ok(table
        .get("model_providers")
        .and_then(toml::Value::as_table)
        .map(|providers| {
            providers
                .iter()
                .filter_map(|(id, value)| Some((id.clone(), value.as_table()?.clone())))
                .collect()
        })
        .unwrap_or_default())
}

/// One provider as a settings form shows it.
fn summary(id: &str, table: Option<&toml::Table>, name: &str) -> ModelProviderSummary {
    let text = |key: &str| {
        table
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    let has = |key: &str| table.is_some_and(|table| table.contains_key(key));
    let settings = if table.is_none() && id == OPENAI_PROVIDER_ID {
        ProviderSettings::Openai
    } else if let Some(aws) = table
        .and_then(|table| table.get("aws"))
        .and_then(toml::Value::as_table)
    {
        ProviderSettings::Bedrock {
            profile: aws
                .get("profile")
                .and_then(toml::Value::as_str)
                .map(str::to_string),
            region: aws
                .get("region")
                .and_then(toml::Value::as_str)
                .map(str::to_string),
        }
    } else if id == "gcp" {
        ProviderSettings::Gcp {
            credential_file: text("credential_file"),
            location: text("location"),
            project_id: text("project_id"),
        }
    } else {
        let env_key = text("env_key");
        let external = has("experimental_bearer_token")
            || has("auth")
            || table
                .and_then(|table| table.get("requires_openai_auth"))
                .and_then(toml::Value::as_bool)
                .unwrap_or(false);
        let extra = has("http_headers") || has("env_http_headers") || has("query_params");
        let auth = match env_key {
            _ if external => GatewayAuth::ExternallyConfigured { env_key: None },
            Some(env_key) if extra => GatewayAuth::ExternallyConfigured {
                env_key: Some(env_key),
            },
            Some(env_key) => GatewayAuth::EnvironmentVariable { env_key },
            None if extra => GatewayAuth::ExternallyConfigured { env_key: None },
            None => GatewayAuth::None,
        };
        ProviderSettings::CustomGateway { auth }
    };
    ModelProviderSummary {
        id: id.to_string(),
        name: name.to_string(),
        can_edit: table.is_some(),
        // A URL with credentials in it is not shown.
        base_url: text("base_url").filter(|url| {
            url::Url::parse(url)
                .is_ok_and(|url| url.username().is_empty() && url.password().is_none())
        }),
        settings,
    }
}

/// Whether the server's own `-c` names the provider, so the file's choice does not count.
fn default_overridden(state: &AppState) -> bool {
    state
        .config
        .cli_overrides
        .iter()
        .any(|(key, _)| key == "model_provider")
}

/// `modelProvider/list`.
pub(crate) fn list(state: &AppState, _params: NoParams) -> Result<ModelProviderListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let tables = file_tables(state)?;
    let mut ids: Vec<&String> = tables.keys().collect();
    let openai = OPENAI_PROVIDER_ID.to_string();
    if !tables.contains_key(&openai) {
        ids.push(&openai);
    }
    ids.sort();
    let data = ids
        .into_iter()
        .map(|id| {
            let name = config
                .model_providers
                .get(id)
                .map_or_else(|| id.clone(), |provider| provider.name.clone());
            summary(id, tables.get(id), &name)
        })
        .collect();
    Ok(ModelProviderListResponse {
        data,
        default_provider_id: config.model_provider_id,
        can_change_default: !default_overridden(state),
    })
}

/// `modelProvider/default/set`: writes `model_provider`.
pub(crate) fn default_set(
    state: &AppState,
    params: ModelProviderDefaultSetParams,
) -> Result<ConfigWriteResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    if !config.model_providers.contains_key(&params.provider_id) {
        return Err(refused(
            &format!("Model provider `{}` is not configured.", params.provider_id),
            "configValidationError",
        ));
    }
    super::config_write::write(
        state,
        "modelProvider/default/set",
        &[ConfigEdit {
            key_path: "model_provider".into(),
            value: Value::String(params.provider_id),
            merge_strategy: MergeStrategy::Replace,
        }],
        None,
        None,
    )
}

/// `modelProvider/capabilities/read`: about the default provider.
pub(crate) fn capabilities_read(
    state: &AppState,
    _params: NoParams,
) -> Result<ModelProviderCapabilitiesReadResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    Ok(ModelProviderCapabilitiesReadResponse {
        image_generation: false,
        web_search: config.model_provider.wire_api == WireApi::Responses,
    })
}

/// `modelProvider/config/write`: creates or edits a gateway.
pub(crate) fn config_write(
    state: &AppState,
    params: ModelProviderConfigWriteParams,
) -> Result<ModelProviderConfigWriteResponse> {
    let ProviderSettingsPatch::CustomGateway {
        provider_id,
        name,
        base_url,
        env_key,
    } = params.settings
    else {
        return Err(AppServerError::InvalidRequest(
            "Keel drives OpenAI-compatible endpoints only: Amazon Bedrock and Google Cloud Vertex AI \
             settings cannot be written; configure a gateway (`\"type\": \"customGateway\"`) instead"
                .into(),
        ));
    };
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let tables = file_tables(state)?;
    let validation = |message: &str| refused(message, "configValidationError");
    let name = name.map(|name| name.trim().to_string());
    if name.as_deref() == Some("") {
        return Err(validation("Enter a provider name."));
    }
    if let Some(Some(env_key)) = &env_key
        && !valid_env_name(env_key)
    {
        return Err(validation("Invalid API key environment variable name."));
    }
    if let Some(Some(url)) = &base_url
        && !acceptable_base_url(url)
    {
        return Err(validation(
            "Enter an HTTP(S) base URL without credentials, a query, or a fragment.",
        ));
    }
    let built_in = config::built_in_model_providers(None);
    let (id, edits) = match provider_id.flatten() {
        Some(id) => {
            if built_in.contains_key(&id) && !tables.contains_key(&id) {
                return Err(validation(
                    "A custom provider or gateway cannot use a built-in provider ID.",
                ));
            }
            let Some(table) = tables.get(&id) else {
                return Err(refused("Unknown provider ID.", "configPathNotFound"));
            };
            if env_key.as_ref().is_some_and(Option::is_some)
                && matches!(
                    summary(&id, Some(table), "").settings,
                    ProviderSettings::CustomGateway {
                        auth: GatewayAuth::ExternallyConfigured { env_key: None }
                    }
                )
            {
                return Err(validation(
                    "Authentication is configured externally. Omit envKey to preserve it.",
                ));
            }
            let key = |field: &str| format!("model_providers.\"{id}\".{field}");
            let mut edits = Vec::new();
            let mut set = |field: &str, value: Option<Option<String>>| {
                if let Some(value) = value {
                    edits.push(ConfigEdit {
                        key_path: key(field),
                        value: value.map_or(Value::Null, Value::String),
                        merge_strategy: MergeStrategy::Replace,
                    });
                }
            };
            set("name", name.map(Some));
            set("base_url", base_url);
            set("env_key", env_key);
            (id, edits)
        }
        None => {
            let Some(name) = name else {
                return Err(validation("Enter a provider name."));
            };
            if built_in
                .values()
                .any(|provider| provider.name.eq_ignore_ascii_case(&name))
                || built_in.keys().any(|id| id.eq_ignore_ascii_case(&name))
            {
                return Err(validation(
                    "This name is reserved for a built-in provider. Enter a different custom provider name.",
                ));
            }
            let Some(Some(base_url)) = base_url else {
                return Err(validation(
                    "A base URL is required to create a custom provider.",
                ));
            };
            let id = free_id(&name, |id| {
                tables.contains_key(id) || config.model_providers.contains_key(id)
            });
            let mut table = json!({"name": name, "base_url": base_url, "wire_api": "responses"});
            if let Some(Some(env_key)) = env_key {
                table["env_key"] = Value::String(env_key);
            }
            let edits = vec![ConfigEdit {
                key_path: format!("model_providers.\"{id}\""),
                value: table,
                merge_strategy: MergeStrategy::Replace,
            }];
            (id, edits)
        }
    };
    if !edits.is_empty() {
        super::config_write::write(state, "modelProvider/config/write", &edits, None, None)?;
    }
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let tables = file_tables(state)?;
    let name = config
        .model_providers
        .get(&id)
        .map_or_else(|| id.clone(), |provider| provider.name.clone());
    Ok(ModelProviderConfigWriteResponse {
        provider: summary(&id, tables.get(&id), &name),
    })
}

/// A provider id from a name: lower-case ASCII letters and digits, other runs as one `-`;
/// `-2`, `-3`, … when taken.
fn free_id(name: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() { "provider" } else { slug };
    if !taken(slug) {
        return slug.to_string();
    }
    (2..)
        .map(|n| format!("{slug}-{n}"))
        .find(|id| !taken(id))
        .unwrap_or_else(|| slug.to_string())
}

/// A name a shell could export: letters, digits and `_`, not starting with a digit.
fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An HTTP(S) URL without credentials, query or fragment.
fn acceptable_base_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.username().is_empty()
            && url.password().is_none()
            && url.query().is_none()
            && url.fragment().is_none()
            && url.host().is_some()
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ModelProviderList, |ctx, p| Reply::now(&list(ctx.state, p)?));
handle!(ModelProviderDefaultSet, |ctx, p| Reply::now(&default_set(
    ctx.state, p
)?));
handle!(ModelProviderConfigWrite, |ctx, p| Reply::now(
    &config_write(ctx.state, p)?
));
handle!(ModelProviderCapabilitiesRead, |ctx, p| Reply::now(
    &capabilities_read(ctx.state, p)?
));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_names() {
        assert_eq!(free_id("My Gateway", |_| false), "my-gateway");
        assert_eq!(
            free_id("My Gateway", |id| id == "my-gateway"),
            "my-gateway-2"
        );
        assert_eq!(free_id("Ünïcode GW! 2.0", |_| false), "n-code-gw-2-0");
        assert!(valid_env_name("MY_KEY") && !valid_env_name("") && !valid_env_name("A-B"));
        assert!(acceptable_base_url("http://127.0.0.1:8/v1"));
        assert!(!acceptable_base_url("http://u:p@host/v1"));
        assert!(!acceptable_base_url("https://host/v1?x=1"));
    }
}
