//! The provider's rate-limit headers reach app-server clients as
//! `account/rateLimits/updated`: OpenAI's `x-ratelimit-*` and Codex's `x-codex-*` windows.

use keel_test_support::{Script, Turn, assistant_message};
use serde_json::Value;

use super::app_server::common::{World, until_turn_completed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_headers_become_a_notification() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("one")])
            .with_header("x-ratelimit-limit-requests", "100")
            .with_header("x-ratelimit-remaining-requests", "25")
            .with_header("x-ratelimit-reset-requests", "6m0s")
            .with_header("x-ratelimit-limit-tokens", "1000")
            .with_header("x-ratelimit-remaining-tokens", "900"),
        Turn::new([assistant_message("two")])
            .with_header("x-codex-primary-used-percent", "42.4")
            .with_header("x-codex-primary-window-minutes", "300")
            .with_header("x-codex-primary-reset-at", "1900000000"),
        Turn::new([assistant_message("three")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let mut seen: Vec<Value> = Vec::new();
    for text in ["a", "b", "c"] {
        let turn = server.start_turn(&thread, text).await?;
        let messages = until_turn_completed(&mut server, &turn).await?;
        seen.extend(
            messages
                .into_iter()
                .filter(|m| m["method"] == "account/rateLimits/updated")
                .map(|m| m["params"]["rateLimits"].clone()),
        );
    }
    assert_eq!(seen.len(), 2, "no headers, no notification: {seen:?}");
    let now = chrono_now();
    let openai = &seen[0];
    assert_eq!(openai["primary"]["usedPercent"], 75);
    let resets = openai["primary"]["resetsAt"].as_i64().unwrap_or_default();
    assert!((now + 300..=now + 420).contains(&resets), "{openai}");
    assert_eq!(openai["secondary"]["usedPercent"], 10);
    let codex = &seen[1];
    assert_eq!(codex["primary"]["usedPercent"], 42);
    assert_eq!(codex["primary"]["windowDurationMins"], 300);
    assert_eq!(codex["primary"]["resetsAt"], 1_900_000_000i64);
    assert!(codex["secondary"].is_null());
    Ok(())
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
