//! `account/login/*`, `account/logout` and `account/gatewayOAuth/*`. Keel authenticates with
//! API keys: an API-key login stores the key as `keel login --with-api-key` does (Codex's
//! `auth.json`), logout removes it, and every ChatGPT or Bedrock login is refused with the
//! reason. No provider signs in through a gateway's OAuth.

use std::sync::Arc;

use keel_core::config::{self, ModelProviderInfo};
use keel_protocol::app_server::{
    AccountLoginCompletedNotification, AccountUpdatedNotification, CancelLoginAccountParams,
    CancelLoginAccountResponse, CancelLoginAccountStatus, EmptyResponse, GatewayOAuthReadParams,
    GatewayOAuthReadResponse, LoginAccountParams, LoginAccountResponse, ServerNotification,
    ThreadOverrides,
};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// `account/login/start`.
async fn login_start(
    state: &AppState,
    params: LoginAccountParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let kind = match params {
        LoginAccountParams::ApiKey { api_key } => {
            let home = state.keel_home().to_path_buf();
            tokio::task::spawn_blocking(move || config::store_api_key(&home, &api_key))
                .await
                .map_err(|err| AppServerError::Internal(format!("login: {err}")))?
                .map_err(|err| AppServerError::InvalidRequest(err.to_string()))?;
            let outgoing = outgoing.clone();
            return Reply::then(&LoginAccountResponse::ApiKey {}, async move {
                outgoing
                    .notify(ServerNotification::AccountLoginCompleted(
                        AccountLoginCompletedNotification {
                            login_id: None,
                            success: true,
                            error: None,
                            onboarding_entrypoint: None,
                        },
                    ))
                    .await;
                outgoing.notify(account_updated(Some("apikey"))).await;
            });
        }
        LoginAccountParams::Chatgpt {}
        | LoginAccountParams::ChatgptDeviceCode {}
        | LoginAccountParams::ChatgptAuthTokens {} => "ChatGPT login",
        LoginAccountParams::AmazonBedrock {} | LoginAccountParams::AmazonBedrockAccessKeys {} => {
            "Amazon Bedrock login"
        }
    };
    Err(AppServerError::InvalidRequest(format!(
        "{kind} is not offered: Keel authenticates with API keys \
         (account/login/start with type apiKey, `keel login --with-api-key`, or the provider's \
         environment variable)"
    )))
}

/// `account/login/cancel`: Keel never has a login pending.
fn login_cancel(params: &CancelLoginAccountParams) -> Result<CancelLoginAccountResponse> {
    uuid::Uuid::parse_str(&params.login_id).map_err(|_| {
        AppServerError::InvalidRequest(format!("invalid login id: {}", params.login_id))
    })?;
    Ok(CancelLoginAccountResponse {
        status: CancelLoginAccountStatus::NotFound,
    })
}

/// `account/logout`: removes the stored key (if any); `account/updated` follows when one was
/// removed. Keys in the environment stay, as they are not Keel's to remove.
async fn logout(state: &AppState, outgoing: &Arc<Outgoing>) -> Result<Reply> {
    let home = state.keel_home().to_path_buf();
    let removed = tokio::task::spawn_blocking(move || config::remove_stored_api_key(&home))
        .await
        .map_err(|err| AppServerError::Internal(format!("logout: {err}")))?
        .map_err(|err| AppServerError::InvalidRequest(err.to_string()))?;
    if !removed {
        return Reply::now(&EmptyResponse {});
    }
    Reply::then_notify(&EmptyResponse {}, outgoing, account_updated(None))
}

fn account_updated(auth_mode: Option<&str>) -> ServerNotification {
    ServerNotification::AccountUpdated(AccountUpdatedNotification {
        auth_mode: auth_mode.map(str::to_string),
        plan_type: None,
        reason: None,
    })
}

/// The provider a gateway request names (or the default one), which must be configured.
fn gateway_provider(
    state: &AppState,
    asked: Option<String>,
) -> Result<(String, ModelProviderInfo)> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let id = asked.unwrap_or_else(|| config.model_provider_id.clone());
    let provider = config
        .model_providers
        .get(&id)
        .cloned()
        .ok_or_else(|| super::model_providers::not_configured(&id))?;
    Ok((id, provider))
}

/// `account/gatewayOAuth/read`: no provider of Keel's signs in through a gateway.
fn gateway_read(
    state: &AppState,
    params: GatewayOAuthReadParams,
) -> Result<GatewayOAuthReadResponse> {
    let (id, provider) = gateway_provider(state, params.model_provider)?;
    Ok(GatewayOAuthReadResponse {
        provider_name: if provider.name.is_empty() {
            id.clone()
        } else {
            provider.name.clone()
        },
        provider_id: id,
        required: false,
        supports_device_auth: false,
        status: None,
        error: None,
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(AccountLoginStart, |ctx, p| login_start(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(AccountLoginCancel, |_, p| Reply::now(&login_cancel(&p)?));
handle!(AccountLogout, |ctx, _| logout(ctx.state, ctx.outgoing())
    .await);
handle!(AccountGatewayOAuthRead, |ctx, p| Reply::now(&gateway_read(
    ctx.state, p
)?));
handle!(AccountGatewayOAuthLogin, |ctx, p| {
    gateway_provider(ctx.state, p.model_provider)?;
    Err(AppServerError::InvalidRequest(
        "The selected provider does not use gateway OAuth".into(),
    ))
});
handle!(AccountGatewayOAuthCancel, |_, _| Reply::now(
    &EmptyResponse {}
));
