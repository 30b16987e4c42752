//! `account/login/*`, `account/gatewayOAuth/*` and the account questions that need a ChatGPT
//! account (`account/rateLimits/read`, `account/usage/read`, ...). Keel authenticates with API
//! keys: an API-key login is stored as `keel login --with-api-key` stores it; everything that
//! needs a ChatGPT account is refused with the reason.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a method that needs a ChatGPT account would answer; Keel never answers it (the
/// request is refused, saying why).
pub type ChatGptAccountResult = serde_json::Value;

/// Params of `account/login/start`: how to sign in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum LoginAccountParams {
    /// Store an OpenAI API key (as `keel login --with-api-key`).
    #[serde(rename_all = "camelCase")]
    ApiKey {
        /// The key.
        api_key: String,
    },
    /// A ChatGPT browser login (Keel has none).
    Chatgpt {},
    /// A ChatGPT device-code login (Keel has none).
    ChatgptDeviceCode {},
    /// ChatGPT tokens a host application holds (Keel has none).
    ChatgptAuthTokens {},
    /// Amazon Bedrock credentials (Keel drives OpenAI-compatible endpoints only).
    AmazonBedrock {},
    /// Amazon Bedrock access keys (Keel drives OpenAI-compatible endpoints only).
    AmazonBedrockAccessKeys {},
}

/// Result of `account/login/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum LoginAccountResponse {
    /// The key is stored; `account/login/completed` and `account/updated` follow.
    ApiKey {},
}

/// Params of `account/login/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelLoginAccountParams {
    /// The login to cancel (a UUID).
    pub login_id: String,
}

/// Whether a login was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CancelLoginAccountStatus {
    /// It was pending and is now cancelled.
    Canceled,
    /// No pending login has this id.
    NotFound,
}

/// Result of `account/login/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelLoginAccountResponse {
    /// What happened.
    pub status: CancelLoginAccountStatus,
}

/// `account/login/completed`: a login ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountLoginCompletedNotification {
    /// The login (`null` for an API-key login, which has none).
    pub login_id: Option<String>,
    /// Whether it succeeded.
    pub success: bool,
    /// Why not.
    pub error: Option<String>,
    /// Where a desktop app's onboarding starts (never set by Keel).
    #[serde(default)]
    pub onboarding_entrypoint: Option<String>,
}

/// `account/updated`: how the server authenticates changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountUpdatedNotification {
    /// `apikey` with a stored key, `null` without one.
    pub auth_mode: Option<String>,
    /// The ChatGPT plan (none).
    pub plan_type: Option<String>,
    /// Why it changed (not given by Keel).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Params of `account/gatewayOAuth/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayOAuthReadParams {
    /// The provider asked about (the default one when absent).
    #[serde(default)]
    pub model_provider: Option<String>,
}

/// Result of `account/gatewayOAuth/read`: whether a provider signs in through a gateway's
/// OAuth (none does in Keel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayOAuthReadResponse {
    /// The provider's id.
    pub provider_id: String,
    /// Its display name.
    pub provider_name: String,
    /// Whether it needs a gateway login (never).
    pub required: bool,
    /// Whether it offers a device-code login (never).
    #[serde(default)]
    pub supports_device_auth: bool,
    /// The login's state (none).
    pub status: Option<String>,
    /// The last login error (none).
    pub error: Option<String>,
}

/// Params of `account/gatewayOAuth/login`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayOAuthLoginParams {
    /// The provider (the default one when absent).
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Use a device code instead of a browser.
    #[serde(default)]
    pub device_auth: bool,
}

/// Result of `account/securitySetup/read`: nothing to set up without a ChatGPT account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountSecuritySetupResponse {
    /// A notice to show (always `null`).
    pub notice: Option<serde_json::Value>,
}

/// Params of `account/rateLimits/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountRateLimitsParams {
    /// Leave out reset-credit details.
    #[serde(default)]
    pub exclude_reset_credit_details: bool,
    /// Whether the client shows the reserve.
    #[serde(default)]
    pub supports_luna_reserve: bool,
}

/// Params of `account/rateLimitResetCredit/consume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeAccountRateLimitResetCreditParams {
    /// Makes a retry harmless.
    pub idempotency_key: String,
    /// Which credit.
    #[serde(default)]
    pub credit_id: Option<String>,
}

/// Params of `account/usage/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountTokenUsageParams {
    /// One thread's usage.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// What a workspace owner is asked to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AddCreditsNudgeCreditType {
    /// Credits.
    #[serde(rename = "credits")]
    Credits,
    /// A higher usage limit.
    #[serde(rename = "usage_limit")]
    UsageLimit,
}

/// Params of `account/sendAddCreditsNudgeEmail`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendAddCreditsNudgeEmailParams {
    /// What to ask for.
    pub credit_type: AddCreditsNudgeCreditType,
}
