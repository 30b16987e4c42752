//! Methods of what comes with a ChatGPT account or another platform: ChatGPT apps, plugin
//! sharing through OpenAI's catalogue, the plan's rate limits, usage and credits, workspace
//! messages, feedback upload to OpenAI, the Windows sandbox. Keel answers what it can say
//! honestly as Codex does under API-key authentication (no apps, no security notice, a
//! Windows set-up that fails off Windows) and refuses the rest with `-32600` naming what Keel
//! does not offer and why.

use std::sync::Arc;

use keel_protocol::app_server::{
    AppsInstalledResponse, AppsReadResponse, GetAccountSecuritySetupResponse, ServerNotification,
    WindowsSandboxSetupCompletedNotification, WindowsSandboxSetupMode,
    WindowsSandboxSetupStartParams, WindowsSandboxSetupStartResponse,
};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::{AppState, parse_thread_id};

/// A request that needs a ChatGPT account: what it would do, and why Keel cannot.
fn needs_chatgpt(action: &str) -> AppServerError {
    AppServerError::InvalidRequest(format!(
        "{action}: chatgpt authentication required; Keel has no ChatGPT accounts \
         (it authenticates with API keys)"
    ))
}

/// Apps are looked up for a thread only if that thread is loaded (as Codex checks).
async fn check_app_thread(state: &AppState, thread_id: Option<&str>) -> Result<()> {
    if let Some(thread_id) = thread_id {
        let id = parse_thread_id(thread_id)?;
        if state.loaded(id).await.is_none() {
            return Err(AppServerError::InvalidRequest(format!(
                "thread not found: {id}"
            )));
        }
    }
    Ok(())
}

/// `windowsSandbox/setupStart`: answers `started`, then reports the set-up failed, as Codex
/// does off Windows.
fn windows_setup(
    params: &WindowsSandboxSetupStartParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let which = match params.mode {
        WindowsSandboxSetupMode::Elevated => "elevated",
        WindowsSandboxSetupMode::Unelevated => "unelevated",
    };
    let notification = ServerNotification::WindowsSandboxSetupCompleted(
        WindowsSandboxSetupCompletedNotification {
            mode: params.mode,
            success: false,
            error: Some(format!(
                "{which} Windows sandbox setup is only supported on Windows"
            )),
        },
    );
    Reply::then_notify(
        &WindowsSandboxSetupStartResponse { started: true },
        outgoing,
        notification,
    )
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(AppRead, |ctx, p| {
    check_app_thread(ctx.state, p.thread_id.as_deref()).await?;
    Reply::now(&AppsReadResponse {
        apps: Vec::new(),
        missing_app_ids: p.app_ids,
    })
});
handle!(AppInstalled, |ctx, p| {
    check_app_thread(ctx.state, p.thread_id.as_deref()).await?;
    Reply::now(&AppsInstalledResponse::default())
});
handle!(WindowsSandboxSetupStart, |ctx, p| windows_setup(
    &p,
    ctx.outgoing()
));
handle!(AccountSecuritySetupRead, |_, _| Reply::now(
    &GetAccountSecuritySetupResponse::default()
));
handle!(AccountRateLimitsRead, |_, _| Err(needs_chatgpt(
    "read rate limits"
)));
handle!(AccountRateLimitResetCreditConsume, |_, _| Err(
    needs_chatgpt("rate limit reset credits")
));
handle!(AccountUsageRead, |_, _| Err(needs_chatgpt(
    "read token usage"
)));
handle!(AccountWorkspaceMessagesRead, |_, _| Err(needs_chatgpt(
    "read workspace messages"
)));
handle!(AccountSendAddCreditsNudgeEmail, |_, _| Err(needs_chatgpt(
    "notify workspace owner"
)));
handle!(PluginShareSave, |_, _| Err(needs_chatgpt(
    "save remote plugin share"
)));
handle!(PluginShareUpdateTargets, |_, _| Err(needs_chatgpt(
    "update remote plugin share targets"
)));
handle!(PluginShareList, |_, _| Err(needs_chatgpt(
    "list remote plugin shares"
)));
handle!(PluginShareCheckout, |_, _| Err(needs_chatgpt(
    "checkout plugin share"
)));
handle!(PluginShareDelete, |_, _| Err(needs_chatgpt(
    "delete remote plugin share"
)));
handle!(FeedbackUpload, |_, _| Err(AppServerError::InvalidRequest(
    "feedback upload is not offered: Keel sends nothing to OpenAI (or anyone); \
     use feedback/save to write the report to a file"
        .into()
)));
