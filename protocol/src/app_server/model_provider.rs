//! `modelProvider/*` (Codex 0.171): the providers a client can pick between, which one new
//! threads use, and a form-sized editor for a gateway's settings. Setting the default answers
//! as `config/value/write` does ([`super::ConfigWriteResponse`]).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// Result of `modelProvider/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderListResponse {
    /// The providers of the user's file, and OpenAI, by id.
    pub data: Vec<ModelProviderSummary>,
    /// The provider new threads use.
    pub default_provider_id: String,
    /// False when the server was started with a `-c model_provider=…` that overrides the file.
    pub can_change_default: bool,
}

/// One provider, as a picker or settings form shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderSummary {
    /// The key of its `[model_providers.<id>]` table.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Whether `modelProvider/config/write` may edit it (its table is in the user's file).
    pub can_edit: bool,
    /// Its endpoint; `null` when absent or holding credentials.
    pub base_url: Option<String>,
    /// What kind of provider it is, with the settings a form edits.
    pub settings: ProviderSettings,
}

/// A provider's kind and editable settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ProviderSettings {
    /// OpenAI itself.
    Openai,
    /// An OpenAI-compatible endpoint.
    CustomGateway {
        /// How requests are authenticated.
        auth: GatewayAuth,
    },
    /// Amazon Bedrock (listed when a Codex file configures it; Keel does not drive it).
    Bedrock {
        /// The AWS profile.
        #[serde(default)]
        profile: Option<String>,
        /// The AWS region.
        #[serde(default)]
        region: Option<String>,
    },
    /// Google Cloud Vertex AI (listed when a Codex file configures it; Keel does not drive it).
    #[serde(rename_all = "camelCase")]
    Gcp {
        /// The credentials file.
        #[serde(default)]
        credential_file: Option<String>,
        /// The region.
        #[serde(default)]
        location: Option<String>,
        /// The project.
        #[serde(default)]
        project_id: Option<String>,
    },
}

/// How a gateway's requests are authenticated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum GatewayAuth {
    /// No key.
    None,
    /// A key read from an environment variable.
    #[serde(rename_all = "camelCase")]
    EnvironmentVariable {
        /// The variable.
        env_key: String,
    },
    /// Set up in ways the form does not edit (headers, a token, OpenAI sign-in); kept on edits.
    #[serde(rename_all = "camelCase")]
    ExternallyConfigured {
        /// The key variable, when there is one beside the rest.
        #[serde(default)]
        env_key: Option<String>,
    },
}

/// Params of `modelProvider/default/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderDefaultSetParams {
    /// The provider new threads should use; it must be configured.
    pub provider_id: String,
}

/// Params of `modelProvider/config/write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelProviderConfigWriteParams {
    /// What to change.
    pub settings: ProviderSettingsPatch,
}

/// Result of `modelProvider/config/write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderConfigWriteResponse {
    /// The provider as written.
    pub provider: ModelProviderSummary,
}

/// A change to one provider's settings. A field left out keeps its value; `null` removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum ProviderSettingsPatch {
    /// Creates a gateway (no `providerId`) or edits one of the user's.
    #[serde(rename_all = "camelCase")]
    CustomGateway {
        /// The gateway to edit; a new one when absent.
        #[serde(default, deserialize_with = "present")]
        provider_id: Option<Option<String>>,
        /// Its name (required for a new one).
        #[serde(default)]
        name: Option<String>,
        /// Its endpoint (required for a new one).
        #[serde(default, deserialize_with = "present")]
        base_url: Option<Option<String>>,
        /// The environment variable holding its key.
        #[serde(default, deserialize_with = "present")]
        env_key: Option<Option<String>>,
    },
    /// Amazon Bedrock settings (refused by Keel, which does not drive Bedrock).
    #[serde(rename_all = "camelCase")]
    Bedrock {
        /// Which Bedrock provider.
        provider_id: BedrockProviderId,
        /// The AWS profile.
        #[serde(default, deserialize_with = "present")]
        profile: Option<Option<String>>,
        /// The AWS region.
        #[serde(default, deserialize_with = "present")]
        region: Option<Option<String>>,
    },
    /// Google Cloud settings (refused by Keel, which does not drive Vertex AI).
    #[serde(rename_all = "camelCase")]
    Gcp {
        /// Always `gcp`.
        provider_id: GcpProviderId,
        /// The project.
        #[serde(default, deserialize_with = "present")]
        project_id: Option<Option<String>>,
        /// The region.
        #[serde(default, deserialize_with = "present")]
        location: Option<Option<String>>,
        /// The credentials file (absolute).
        #[serde(default, deserialize_with = "present")]
        credential_file: Option<Option<String>>,
    },
}

/// The Bedrock providers Codex knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BedrockProviderId {
    /// Bedrock's OpenAI-compatible endpoint.
    #[serde(rename = "amazon-bedrock")]
    AmazonBedrock,
    /// Bedrock's runtime endpoint.
    #[serde(rename = "amazon-bedrock-runtime")]
    AmazonBedrockRuntime,
}

/// The Google Cloud provider Codex knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum GcpProviderId {
    /// Vertex AI.
    #[serde(rename = "gcp")]
    Gcp,
}

/// Result of `modelProvider/capabilities/read`: what the default provider offers beyond
/// text and tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderCapabilitiesReadResponse {
    /// Image generation (Keel has no image-generation tool: always false).
    pub image_generation: bool,
    /// The hosted web search tool (providers on the Responses API).
    pub web_search: bool,
}

/// Tells a field sent as `null` (`Some(None)`: remove it) from one left out (`None`: keep it).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}
