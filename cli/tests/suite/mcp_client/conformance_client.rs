//! The MCP conformance suite's client scenarios that are not about authorization, against
//! `keel exec` with the scenario's server configured: the handshake, a tool call with
//! arguments, form defaults (`--mcp-elicitation accept-defaults`, since a headless run has
//! nobody to ask), and SSE reconnection.

use keel_test_support::{Turn, assistant_message, function_call};

use super::oauth::{ScenarioRun, make_executable, run_scenario_with};

/// Each scenario and the tool call the model makes in it (`None`: just the handshake).
const SCENARIOS: &[(&str, Option<(&str, &str)>)] = &[
    ("initialize", None),
    ("tools_call", Some(("add_numbers", r#"{"a": 2, "b": 3}"#))),
    (
        "elicitation-sep1034-client-defaults",
        Some(("test_client_elicitation_defaults", "{}")),
    ),
    ("sse-retry", Some(("test_reconnection", "{}"))),
];

/// The client command: configure the scenario's server, then one `keel exec` turn.
fn client_script(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let script = dir.join("client.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
set -e
for url; do :; done
printf '\n[mcp_servers.conformance]\nurl = "%s"\n' "$url" >> "$KEEL_HOME/config.toml"
cd "$KEEL_TEST_WORKSPACE"
# The suite leaves stdin open; exec would read a prompt from it.
{keel} exec --mcp-elicitation accept-defaults "use the conformance server" < /dev/null \
    > "$KEEL_HOME/exec.out" 2> "$KEEL_HOME/exec.err"
"#,
            keel = env!("CARGO_BIN_EXE_keel"),
        ),
    )?;
    make_executable(&script)?;
    Ok(script)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_conformance),
    ignore = "needs KEEL_MCP_CONFORMANCE: the MCP conformance suite and Node 22 from npm (.ci/run installs them)"
)]
async fn the_client_scenarios_pass_through_keel_exec() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = client_script(dir.path())?;
    let mut failed = Vec::new();
    for (scenario, call) in SCENARIOS {
        let mut turns = Vec::new();
        if let Some((tool, arguments)) = call {
            let name = format!("mcp__conformance__{tool}");
            turns.push(Turn::new([function_call("c1", &name, *arguments)]));
        }
        turns.push(Turn::new([assistant_message("done")]));
        let ScenarioRun { report, home, .. } =
            run_scenario_with(scenario, &script, turns, &[]).await?;
        let exec_out = std::fs::read_to_string(home.path().join("exec.out")).unwrap_or_default();
        if !report.contains("OVERALL: PASSED") || exec_out != "done\n" {
            let exec_err =
                std::fs::read_to_string(home.path().join("exec.err")).unwrap_or_default();
            failed.push(format!(
                "{scenario}: exec printed {exec_out:?}\n{report}\nexec stderr:\n{exec_err}"
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    Ok(())
}
