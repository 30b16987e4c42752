//! `keel mcp-server --listen` against the official MCP conformance suite's server scenarios:
//! the 2025 revisions through sessions, 2026-07-28 through stateless requests. The suite's
//! other server scenarios call fixture tools, prompts and resources (`test_simple_text`,
//! `test_prompt_with_arguments`, …) that only the suite's reference server has; they do not
//! apply to Keel and are not run.

use std::path::PathBuf;
use std::time::Duration;

use keel_test_support::{JsonLinesProcess, ProcessBuilder};

/// Scenarios of package 0.1.16 (revision 2025-11-25) that apply to a server without the
/// suite's fixtures. `server-sse-polling` needs the fixture tool `test_reconnection` for its
/// resumption check (a warning, not a failure, without it); Keel's own resumption test is in
/// the keel-mcp-server crate.
const STABLE_2025: &[&str] = &[
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
];

/// The alpha's 2025-11-25 scenarios that apply (it adds the session lifecycle).
const ALPHA_2025: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "logging-set-level",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
];

/// The alpha's 2026-07-28 (stateless) scenarios that apply; `server-stateless` runs with a
/// baseline naming its four fixture-tool checks.
const ALPHA_2026: &[&str] = &[
    "tools-list",
    "server-sse-multiple-streams",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "caching",
    "sep-2164-resource-not-found",
    "http-header-validation",
    "input-required-result-unsupported-methods",
];

fn conformance_dir() -> PathBuf {
    PathBuf::from(std::env::var("KEEL_MCP_CONFORMANCE").unwrap_or_default())
}

/// `keel mcp-server --listen http://127.0.0.1:0` and its endpoint URL.
async fn start_server() -> anyhow::Result<(JsonLinesProcess, String)> {
    let home = tempfile::tempdir()?;
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["mcp-server", "--listen", "http://127.0.0.1:0"])
        .home_var("KEEL_HOME")
        .home(home)
        .spawn()?;
    let url = server.http_endpoint().await?;
    Ok((server, url))
}

/// Runs `package`'s server `scenario` against `url` with `extra` arguments; `Err` with the
/// suite's report when it fails.
async fn run(package: &str, url: &str, scenario: &str, extra: &[&str]) -> anyhow::Result<()> {
    let dir = conformance_dir();
    let suite = dir.join("node_modules").join(package).join("dist/index.js");
    // The suite writes its results under the working directory.
    let results = tempfile::tempdir()?;
    let run = tokio::process::Command::new(dir.join("node_modules/.bin/node"))
        .arg(&suite)
        .args(["server", "--url", url, "--scenario", scenario])
        .args(extra)
        .current_dir(results.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await??;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    anyhow::ensure!(
        output.status.success() && !report.contains("FAILURE"),
        "{package} {scenario} {extra:?} failed:\n{report}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn the_applicable_server_scenarios_pass_over_http() -> anyhow::Result<()> {
    let (server, url) = start_server().await?;
    let mut failures = Vec::new();
    let stable = "@modelcontextprotocol/conformance";
    let alpha = "conformance-alpha";
    for scenario in STABLE_2025 {
        if let Err(err) = run(stable, &url, scenario, &[]).await {
            failures.push(err.to_string());
        }
    }
    for scenario in ALPHA_2025 {
        if let Err(err) = run(alpha, &url, scenario, &["--spec-version", "2025-11-25"]).await {
            failures.push(err.to_string());
        }
    }
    for scenario in ALPHA_2026 {
        let args = ["--spec-version", "2026-07-28", "--suite", "all"];
        if let Err(err) = run(alpha, &url, scenario, &args).await {
            failures.push(err.to_string());
        }
    }
    let baseline = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp_server_stateless_baseline.yml"
    );
    let args = [
        "--spec-version",
        "2026-07-28",
        "--suite",
        "all",
        "--expected-failures",
        baseline,
    ];
    if let Err(err) = run(alpha, &url, "server-stateless", &args).await {
        // With a baseline the suite prints the expected checks as FAILURE too; only its exit
        // status says whether anything unexpected failed.
        if !err.to_string().contains("Baseline check passed") {
            failures.push(err.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nserver stderr:\n{}",
        failures.join("\n\n"),
        server.stderr()
    );
    Ok(())
}
