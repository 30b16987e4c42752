//! OAuth for remote MCP servers, against the official MCP conformance suite's authorization
//! servers: for each auth scenario the suite starts an OAuth-protected MCP server and runs a
//! client script that logs in with `keel mcp login` (a `$BROWSER` that follows the
//! authorization redirect back to Keel's loopback callback, as a signed-in browser would) and
//! then runs `keel exec`, whose model calls the server's tool with the stored token. The suite
//! checks discovery, registration, PKCE, the token request and the bearer token's use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, write_config,
};
use serde_json::Value;

/// The scenarios of protocol revisions 2025-11-25 and 2025-03-26 Keel passes.
const PASSING: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/2025-03-26-oauth-metadata-backcompat",
    // Draft revision (`auth/resource-mismatch` has its own test: the login must fail).
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
];

/// Extension scenarios Keel's client does not implement (machine-to-machine grants), run
/// against the baseline that lists them with the reason: they must fail as listed, and the
/// suite fails the run when one starts passing.
const EXTENSIONS: &[&str] = &[
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",
];

/// The suite's directory (`node_modules/.bin/node` and the conformance package).
pub(super) fn conformance_dir() -> PathBuf {
    PathBuf::from(std::env::var("KEEL_MCP_CONFORMANCE").unwrap_or_default())
}

/// A `$BROWSER` that follows the authorization redirect back to Keel's loopback callback, as
/// a signed-in browser would.
fn browser_script(dir: &Path) -> anyhow::Result<PathBuf> {
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        "#!/bin/sh\nexec curl -sS -L -o /dev/null \"$1\"\n",
    )?;
    make_executable(&browser)?;
    Ok(browser)
}

/// Lets the suite run `script` as a command.
pub(super) fn make_executable(script: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// The client command the suite runs with the server's URL appended: log in, then one turn.
fn client_script(dir: &Path) -> anyhow::Result<PathBuf> {
    let browser = browser_script(dir)?;
    let script = dir.join("client.sh");
    let keel = env!("CARGO_BIN_EXE_keel");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
set -e
for url; do :; done
printf '\n[mcp_servers.conformance]\nurl = "%s"\n' "$url" >> "$KEEL_HOME/config.toml"
# Keel's client ID metadata document, and a pre-registered client when the scenario gives one.
node -e '
const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{{}}");
console.log("[mcp_servers.conformance.oauth]");
// The client ID metadata document the suite expects (used where the server accepts one).
console.log("client_metadata_url = \"https://conformance-test.local/client-metadata.json\"");
if (c.client_id) {{
  console.log("client_id = " + JSON.stringify(c.client_id));
  if (c.client_secret) console.log("client_secret = " + JSON.stringify(c.client_secret));
}}' >> "$KEEL_HOME/config.toml"
# Before the login the server is reported as needing one.
{keel} doctor > "$KEEL_HOME/doctor.out" 2>&1 || true
BROWSER={browser} {keel} mcp login conformance
cd "$KEEL_TEST_WORKSPACE"
# The suite leaves stdin open; exec would read a prompt from it.
{keel} exec "call the conformance tool" < /dev/null > "$KEEL_HOME/exec.out"
cp "$KEEL_HOME/mcp_credentials.json" "$KEEL_HOME/credentials.after-login"
{keel} mcp logout conformance > "$KEEL_HOME/logout.out" 2>&1
"#,
            browser = browser.display(),
        ),
    )?;
    make_executable(&script)?;
    Ok(script)
}

/// The client command for `auth/scope-step-up`, as a user would go through it: log in, run a
/// turn whose tool call the server refuses for want of scope, read Keel's message saying so,
/// log in again (Keel now asks for the granted and the required scopes), run the turn again.
fn step_up_client_script(dir: &Path) -> anyhow::Result<PathBuf> {
    let browser = browser_script(dir)?;
    let script = dir.join("step-up.sh");
    let keel = env!("CARGO_BIN_EXE_keel");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
set -e
for url; do :; done
printf '\n[mcp_servers.conformance]\nurl = "%s"\n' "$url" >> "$KEEL_HOME/config.toml"
BROWSER={browser} {keel} mcp login conformance
cd "$KEEL_TEST_WORKSPACE"
{keel} exec "call the conformance tool" < /dev/null > "$KEEL_HOME/exec1.out" 2> "$KEEL_HOME/exec1.err"
grep -q "needs more access" "$KEEL_HOME/exec1.err"
BROWSER={browser} {keel} mcp login conformance
{keel} exec "call the conformance tool" < /dev/null > "$KEEL_HOME/exec.out" 2> "$KEEL_HOME/exec2.err"
"#,
            browser = browser.display(),
        ),
    )?;
    make_executable(&script)?;
    Ok(script)
}

/// Runs the suite's client `scenario` with `command` (the server's URL appended) under `env`,
/// Node 22 first on `PATH`; returns its report.
pub(super) async fn run_suite(
    scenario: &str,
    command: &std::ffi::OsStr,
    env: &[(&str, &std::ffi::OsStr)],
) -> anyhow::Result<String> {
    Ok(run_suite_with(scenario, command, env, &[]).await?.1)
}

/// [`run_suite`] with `extra` arguments for the suite; also whether it exited successfully.
async fn run_suite_with(
    scenario: &str,
    command: &std::ffi::OsStr,
    env: &[(&str, &std::ffi::OsStr)],
    extra: &[&str],
) -> anyhow::Result<(bool, String)> {
    let dir = conformance_dir();
    let bin = dir.join("node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let run = tokio::process::Command::new(bin.join("node"))
        .arg(&suite)
        .args([
            "client",
            "--scenario",
            scenario,
            "--timeout",
            "60000",
            "--command",
        ])
        .arg(command)
        .args(extra)
        .env("PATH", path)
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await??;
    Ok((
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    ))
}

/// One scenario's run: whether the suite passed it, its report, and the mock and home the
/// client used (the workspace is kept until the run is dropped).
pub(super) struct ScenarioRun {
    pub passed: bool,
    pub report: String,
    pub mock: MockModelServer,
    pub home: tempfile::TempDir,
    _workspace: tempfile::TempDir,
}

/// Runs `scenario` with `script` against a fresh home and a mock model playing `turns`,
/// passing `extra` arguments to the suite.
pub(super) async fn run_scenario_with(
    scenario: &str,
    script: &Path,
    turns: Vec<Turn>,
    extra: &[&str],
) -> anyhow::Result<ScenarioRun> {
    let mock = MockModelServer::start(Script::new(turns)).await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        Vec::<(String, toml::Value)>::new(),
    )?;
    let (passed, report) = run_suite_with(
        scenario,
        script.as_os_str(),
        &[
            ("KEEL_HOME", home.path().as_os_str()),
            ("KEEL_TEST_WORKSPACE", workspace.path().as_os_str()),
        ],
        extra,
    )
    .await?;
    Ok(ScenarioRun {
        passed,
        report,
        mock,
        home,
        _workspace: workspace,
    })
}

/// The turns of most scenarios: call the server's tool, then answer.
fn call_the_tool() -> Vec<Turn> {
    vec![
        Turn::new([function_call("c1", "mcp__conformance__test-tool", "{}")]),
        Turn::new([assistant_message("done")]),
    ]
}

/// Runs one scenario with a fresh home and mock model; returns the suite's report.
async fn run_scenario(
    scenario: &str,
    script: &Path,
) -> anyhow::Result<(String, MockModelServer, tempfile::TempDir)> {
    let run = run_scenario_with(scenario, script, call_the_tool(), &[]).await?;
    Ok((run.report, run.mock, run.home))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn conformance_auth_scenarios_log_in_and_call_the_tool() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = client_script(dir.path())?;
    let mut failed = Vec::new();
    for scenario in PASSING {
        let (report, mock, home) = run_scenario(scenario, &script).await?;
        let passed = report.contains("OVERALL: PASSED");
        // The turn called the protected tool with the stored token and got its answer.
        let tool_output = mock
            .requests()
            .get(1)
            .and_then(|request| request.tool_output("c1").cloned())
            .map(|output| match output {
                Value::String(text) => text,
                other => other.to_string(),
            })
            .unwrap_or_default();
        let exec_out = std::fs::read_to_string(home.path().join("exec.out")).unwrap_or_default();
        if !passed || !tool_output.contains("test") || exec_out != "done\n" {
            failed.push(format!(
                "{scenario}: tool output {tool_output:?}, exec printed {exec_out:?}\n{report}"
            ));
        }
        let read = |name: &str| std::fs::read_to_string(home.path().join(name)).unwrap_or_default();
        let doctor = read("doctor.out");
        assert!(
            doctor.contains("needs a login: run `keel mcp login conformance`"),
            "{scenario}: doctor before the login said:\n{doctor}"
        );
        // The tokens were kept for the server, readable by their owner only, and the logout
        // removed them.
        assert!(
            read("credentials.after-login").contains("\"conformance\""),
            "{scenario}"
        );
        let credentials = home.path().join("mcp_credentials.json");
        let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::metadata(&credentials)?);
        assert_eq!(mode & 0o777, 0o600, "{scenario}: {}", credentials.display());
        assert!(
            read("logout.out").contains("Logged out of `conformance`"),
            "{scenario}"
        );
        assert!(
            !read("mcp_credentials.json").contains("\"conformance\""),
            "{scenario}"
        );
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    Ok(())
}

/// The client command for the app-server's login: a Node script speaking JSON-RPC to
/// `keel app-server` on stdio. It asks for the login, follows the authorization page's
/// redirect (as a signed-in browser), waits for `mcpServer/oauthLogin/completed`, and checks
/// that `mcpServerStatus/list` now reports the server logged in with its tool.
fn app_server_client(dir: &Path) -> anyhow::Result<PathBuf> {
    let driver = dir.join("app_server_login.mjs");
    std::fs::write(&driver, include_str!("../../fixtures/app_server_login.mjs"))?;
    Ok(driver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn the_app_server_logs_in_for_its_client() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let driver = app_server_client(dir.path())?;
    let home = tempfile::tempdir()?;
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("unused")])])).await?;
    write_config(
        home.path(),
        &mock.uri(),
        Vec::<(String, toml::Value)>::new(),
    )?;
    let node = conformance_dir().join("node_modules/.bin/node");
    let command = format!("{} {}", node.display(), driver.display());
    let report = run_suite(
        "auth/metadata-default",
        command.as_ref(),
        &[
            ("KEEL_HOME", home.path().as_os_str()),
            ("KEEL_BIN", env!("CARGO_BIN_EXE_keel").as_ref()),
        ],
    )
    .await?;
    assert!(report.contains("OVERALL: PASSED"), "{report}");
    // The driver got through every step: not logged in, the login, its completion, and the
    // server's tool listed with the stored token.
    let status = std::fs::read_to_string(home.path().join("app-server-login.ok"))
        .map_err(|err| anyhow::anyhow!("the driver did not finish ({err}):\n{report}"))?;
    assert!(status.contains("\"authStatus\":\"oAuth\""), "{status}");
    let stored = std::fs::read_to_string(home.path().join("mcp_credentials.json"))?;
    assert!(stored.contains("\"conformance\""), "{stored}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn a_refusal_for_want_of_scope_is_granted_by_the_next_login() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = step_up_client_script(dir.path())?;
    let mut turns = call_the_tool();
    turns.insert(1, Turn::new([assistant_message("refused")]));
    turns.insert(
        2,
        Turn::new([function_call("c1", "mcp__conformance__test-tool", "{}")]),
    );
    let ScenarioRun {
        report, mock, home, ..
    } = run_scenario_with("auth/scope-step-up", &script, turns, &[]).await?;
    let read = |name: &str| std::fs::read_to_string(home.path().join(name)).unwrap_or_default();
    assert!(
        report.contains("OVERALL: PASSED"),
        "{report}\nfirst exec:\n{}\nsecond exec:\n{}",
        read("exec1.err"),
        read("exec2.err")
    );
    // Both authorizations asked for the right scopes (a wrong one is only a warning).
    assert!(!report.contains("WARNING"), "{report}");
    // The model was told why the first call failed, and the second call got the tool's answer.
    let first = mock
        .requests()
        .get(1)
        .and_then(|request| request.tool_output("c1").cloned())
        .unwrap_or_default();
    assert!(first.to_string().contains("needs more access"), "{first}");
    let second = mock
        .requests()
        .get(3)
        .and_then(|request| request.tool_output("c1").cloned())
        .unwrap_or_default();
    assert!(second.to_string().contains("test"), "{second}");
    assert_eq!(read("exec.out"), "done\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn the_extension_scenarios_fail_only_as_the_baseline_says() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = client_script(dir.path())?;
    let baseline = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp_client_extension_baseline.yml"
    );
    for scenario in EXTENSIONS {
        let ScenarioRun { passed, report, .. } = run_scenario_with(
            scenario,
            &script,
            call_the_tool(),
            &["--expected-failures", baseline],
        )
        .await?;
        assert!(passed, "{scenario}:\n{report}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn a_server_naming_another_resource_gets_no_login() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = client_script(dir.path())?;
    let (report, _mock, home) = run_scenario("auth/resource-mismatch", &script).await?;
    assert!(report.contains("OVERALL: PASSED"), "{report}");
    // The protected-resource metadata names another resource: no token was asked for or kept.
    let stored =
        std::fs::read_to_string(home.path().join("mcp_credentials.json")).unwrap_or_default();
    assert!(!stored.contains("access_token"), "{stored}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn a_machine_logs_in_with_its_client_credentials() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("client-credentials.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
set -e
for url; do :; done
printf '\n[mcp_servers.conformance]\nurl = "%s"\n' "$url" >> "$KEEL_HOME/config.toml"
node -e '
const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{{}}");
console.log("[mcp_servers.conformance.oauth]");
console.log("client_id = " + JSON.stringify(c.client_id));
console.log("client_secret = " + JSON.stringify(c.client_secret));' >> "$KEEL_HOME/config.toml"
# No browser: the login must not need one.
BROWSER=/bin/false {keel} mcp login conformance --client-credentials
cd "$KEEL_TEST_WORKSPACE"
{keel} exec "call the conformance tool" < /dev/null > "$KEEL_HOME/exec.out"
"#,
            keel = env!("CARGO_BIN_EXE_keel"),
        ),
    )?;
    make_executable(&script)?;
    let (report, mock, home) = run_scenario("auth/client-credentials-basic", &script).await?;
    assert!(report.contains("OVERALL: PASSED"), "{report}");
    let tool_output = mock
        .requests()
        .get(1)
        .and_then(|request| request.tool_output("c1").cloned())
        .unwrap_or_default();
    assert!(tool_output.to_string().contains("test"), "{tool_output}");
    let exec_out = std::fs::read_to_string(home.path().join("exec.out")).unwrap_or_default();
    assert_eq!(exec_out, "done\n");
    Ok(())
}
