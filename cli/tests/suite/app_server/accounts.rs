//! Account methods over `keel app-server`, as Codex 0.171 answers them under API-key
//! authentication: an API-key login is stored (and announced), logout removes it; ChatGPT
//! logins, plan limits, usage, credits, plugin sharing and feedback upload are refused with
//! the reason; no provider uses gateway OAuth; ChatGPT apps are none; the Windows sandbox set-up
//! fails off Windows.

use keel_test_support::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{World, request_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_login_is_stored_and_chatgpt_features_are_refused() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let auth = world.home.path().join("auth.json");

    // An API-key login: stored as `keel login --with-api-key` stores it, then announced.
    let answer = server
        .request(
            "account/login/start",
            json!({"type": "apiKey", "apiKey": "sk-login-test"}),
        )
        .await?;
    assert_eq!(answer, json!({"type": "apiKey"}));
    let completed = server.read_notification("account/login/completed").await?;
    assert_eq!(
        completed["params"],
        json!({"loginId": null, "success": true, "error": null, "onboardingEntrypoint": null})
    );
    let updated = server.read_notification("account/updated").await?;
    assert_eq!(updated["params"]["authMode"], "apikey");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&auth)?)?;
    assert_eq!(stored["OPENAI_API_KEY"], "sk-login-test");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&auth)?.permissions()) & 0o777,
        0o600
    );

    // Logout removes it.
    assert_eq!(
        server.request("account/logout", json!(null)).await?,
        json!({})
    );
    let updated = server.read_notification("account/updated").await?;
    assert_eq!(updated["params"]["authMode"], Value::Null);
    assert!(!auth.exists());

    // ChatGPT and Bedrock logins are refused with the reason; a bad variant names the choices.
    for kind in ["chatgpt", "chatgptDeviceCode", "amazonBedrock"] {
        let error =
            request_error(&mut server, "account/login/start", json!({"type": kind})).await?;
        assert_eq!(error["code"], -32600, "{error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("API keys")),
            "{error}"
        );
    }
    let error = request_error(&mut server, "account/login/start", json!({"type": "bogus"})).await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown variant `bogus`")),
        "{error}"
    );
    let cancel = server
        .request(
            "account/login/cancel",
            json!({"loginId": "7b0c6a1e-4a55-4c55-9b8c-2f1f0e7d8a11"}),
        )
        .await?;
    assert_eq!(cancel, json!({"status": "notFound"}));
    let error = request_error(
        &mut server,
        "account/login/cancel",
        json!({"loginId": "nope"}),
    )
    .await?;
    assert_eq!(error["message"], "invalid login id: nope");

    // What needs a ChatGPT account: refused, saying so.
    for (method, params, action) in [
        ("account/rateLimits/read", json!(null), "read rate limits"),
        ("account/usage/read", json!({}), "read token usage"),
        (
            "account/workspaceMessages/read",
            json!(null),
            "read workspace messages",
        ),
        (
            "account/rateLimitResetCredit/consume",
            json!({"idempotencyKey": "k1"}),
            "rate limit reset credits",
        ),
        (
            "account/sendAddCreditsNudgeEmail",
            json!({"creditType": "credits"}),
            "notify workspace owner",
        ),
        ("plugin/share/list", json!({}), "list remote plugin shares"),
        (
            "plugin/share/checkout",
            json!({"remotePluginId": "plg_1"}),
            "checkout plugin share",
        ),
    ] {
        let error = request_error(&mut server, method, params).await?;
        assert_eq!(error["code"], -32600, "{method}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("{action}: chatgpt authentication required")),
            "{method}: {message}"
        );
    }
    let error = request_error(
        &mut server,
        "account/sendAddCreditsNudgeEmail",
        json!({"creditType": "bogus"}),
    )
    .await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown variant `bogus`")),
        "{error}"
    );
    let error = request_error(
        &mut server,
        "feedback/upload",
        json!({"classification": "bug"}),
    )
    .await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("feedback/save")),
        "{error}"
    );
    assert_eq!(
        server
            .request("account/securitySetup/read", json!(null))
            .await?,
        json!({"notice": null})
    );

    // Gateway OAuth: the configured provider does not use it; an unknown one is named.
    let read = server
        .request("account/gatewayOAuth/read", json!({}))
        .await?;
    assert_eq!(read["required"], false);
    assert_eq!(read["supportsDeviceAuth"], false);
    assert_eq!(read["status"], Value::Null);
    let error = request_error(
        &mut server,
        "account/gatewayOAuth/read",
        json!({"modelProvider": "nope"}),
    )
    .await?;
    assert_eq!(
        error["data"],
        json!({"type": "modelProviderNotConfigured", "modelProvider": "nope"})
    );
    let error = request_error(&mut server, "account/gatewayOAuth/login", json!(null)).await?;
    assert_eq!(
        error["message"],
        "The selected provider does not use gateway OAuth"
    );
    assert_eq!(
        server
            .request("account/gatewayOAuth/cancel", json!(null))
            .await?,
        json!({})
    );

    // Apps: none, every asked id missing; a thread that is not loaded is refused.
    assert_eq!(
        server
            .request("app/read", json!({"appIds": ["asdk_app_x"]}))
            .await?,
        json!({"apps": [], "missingAppIds": ["asdk_app_x"]})
    );
    assert_eq!(
        server.request("app/installed", json!({})).await?,
        json!({"apps": []})
    );
    let error = request_error(
        &mut server,
        "app/installed",
        json!({"threadId": "00000000-0000-7000-8000-000000000000"}),
    )
    .await?;
    assert_eq!(error["code"], -32600);

    // The Windows sandbox: started, then failed off Windows.
    assert_eq!(
        server
            .request("windowsSandbox/setupStart", json!({"mode": "unelevated"}))
            .await?,
        json!({"started": true})
    );
    let done = server
        .read_notification("windowsSandbox/setupCompleted")
        .await?;
    assert_eq!(
        done["params"],
        json!({"mode": "unelevated", "success": false,
               "error": "unelevated Windows sandbox setup is only supported on Windows"})
    );
    Ok(())
}
