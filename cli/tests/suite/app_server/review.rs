//! `review/start`: a review turn on a real git repository against the mock model — the
//! reviewer's brief and instructions, its commands, the rendered verdict as
//! `exitedReviewMode`, what the thread keeps of it, and the targets that are refused.

use std::path::Path;
use std::process::Command;

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use serde_json::{Value, json};

use super::common::{World, methods, until_turn_completed};

/// Runs git in `dir`, failing the test on error.
pub(crate) fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A repository with a `main` commit, a `feature` branch commit, and an uncommitted edit.
pub(crate) fn repository(dir: &Path) -> anyhow::Result<()> {
    git(dir, &["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("lib.rs"), "fn one() -> u32 { 1 }\n")?;
    git(dir, &["add", "."])?;
    git(dir, &["commit", "-q", "-m", "first"])?;
    git(dir, &["checkout", "-q", "-b", "feature"])?;
    std::fs::write(dir.join("lib.rs"), "fn one() -> u32 { 2 }\n")?;
    git(dir, &["commit", "-q", "-am", "second"])?;
    std::fs::write(dir.join("new.rs"), "fn two() {}\n")?;
    Ok(())
}

pub(crate) fn review_json(file: &Path) -> String {
    json!({
        "findings": [{
            "title": "[P1] one() returns 2",
            "body": "The function is named one but returns 2.\nCallers expect 1.",
            "confidence_score": 0.9,
            "priority": 1,
            "code_location": {
                "absolute_file_path": file,
                "line_range": {"start": 1, "end": 1}
            }
        }],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "one() no longer returns one.",
        "overall_confidence_score": 0.8
    })
    .to_string()
}

fn items_of<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "item/completed" && m["params"]["item"]["type"] == kind)
        .map(|m| &m["params"]["item"])
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_runs_apart_and_the_thread_keeps_its_verdict() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("before the review")]),
        Turn::new([shell_call("diff-1", ["git", "status", "--porcelain"])]),
        Turn::new([assistant_message("REVIEW-JSON")]),
        Turn::new([assistant_message("will fix")]),
    ]);
    let world = World::new(script, &[]).await?;
    repository(world.ws())?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let first = server.start_turn(&thread_id, "EARLIER-WORDS").await?;
    server.read_turn_completed(&first).await?;

    let started = server
        .request(
            "review/start",
            json!({"threadId": thread_id, "target": {"type": "uncommittedChanges"}}),
        )
        .await?;
    anyhow::ensure!(started["reviewThreadId"] == thread_id.as_str(), "{started}");
    anyhow::ensure!(started["turn"]["status"] == "inProgress", "{started}");
    let turn_id = started["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let messages = until_turn_completed(&mut server, &turn_id).await?;
    let names = methods(&messages);
    anyhow::ensure!(names.contains(&"turn/started".to_string()), "{names:?}");
    let entered = items_of(&messages, "enteredReviewMode");
    anyhow::ensure!(
        entered.len() == 1 && entered[0]["review"] == "uncommitted changes",
        "{entered:?}"
    );
    let commands = items_of(&messages, "commandExecution");
    anyhow::ensure!(commands.len() == 1, "{names:?}");
    let output = commands[0]["aggregatedOutput"].as_str().unwrap_or_default();
    anyhow::ensure!(output.contains("?? new.rs"), "{output}");
    let exited = items_of(&messages, "exitedReviewMode");
    anyhow::ensure!(exited.len() == 1, "{names:?}");
    // Not JSON: the reviewer's words are the review.
    anyhow::ensure!(exited[0]["review"] == "REVIEW-JSON", "{}", exited[0]);
    let agent: Vec<&Value> = items_of(&messages, "agentMessage")
        .into_iter()
        .filter(|item| item["text"] != "before the review")
        .collect();
    anyhow::ensure!(
        agent.len() == 1 && agent[0]["text"] == "REVIEW-JSON",
        "the reviewer's raw answer is shown once, as the report: {agent:?}"
    );
    let completed = messages
        .last()
        .ok_or_else(|| anyhow::anyhow!("no messages"))?;
    anyhow::ensure!(
        completed["params"]["turn"]["status"] == "completed",
        "{completed}"
    );

    // The reviewer's first request: its own instructions and schema, a fresh history.
    let requests = world.mock.requests();
    anyhow::ensure!(requests.len() == 3, "{} requests", requests.len());
    let review_request = &requests[1];
    let instructions = review_request.body["instructions"]
        .as_str()
        .unwrap_or_default();
    anyhow::ensure!(
        instructions.contains("reviewing a code change"),
        "{instructions}"
    );
    anyhow::ensure!(
        review_request.body["text"]["format"]["type"] == "json_schema",
        "{}",
        review_request.body["text"]
    );
    let sent = serde_json::to_string(review_request.input())?;
    anyhow::ensure!(!sent.contains("EARLIER-WORDS"), "{sent}");
    anyhow::ensure!(
        sent.contains("uncommitted changes of this repository"),
        "{sent}"
    );

    // The next turn sees the verdict, not the reviewer's work.
    let next = server.start_turn(&thread_id, "FIX-IT").await?;
    server.read_turn_completed(&next).await?;
    let requests = world.mock.requests();
    let last = requests
        .last()
        .ok_or_else(|| anyhow::anyhow!("no request"))?;
    let sent = serde_json::to_string(last.input())?;
    anyhow::ensure!(
        sent.contains("EARLIER-WORDS") && sent.contains("FIX-IT"),
        "{sent}"
    );
    anyhow::ensure!(
        sent.contains("code review of uncommitted changes"),
        "{sent}"
    );
    anyhow::ensure!(sent.contains("REVIEW-JSON"), "{sent}");
    anyhow::ensure!(
        !sent.contains("diff-1"),
        "the reviewer's calls leaked: {sent}"
    );
    let base_instructions = last.body["instructions"].as_str().unwrap_or_default();
    anyhow::ensure!(!base_instructions.contains("reviewing a code change"));

    // thread/read after a restart shows the review turn with both review items.
    drop(server);
    let mut server = world.server().await?;
    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await?;
    let text = read.to_string();
    anyhow::ensure!(
        text.contains("enteredReviewMode") && text.contains("exitedReviewMode"),
        "{text}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_findings_are_rendered_and_kept_as_data() -> anyhow::Result<()> {
    let workspace_probe = tempfile::tempdir()?;
    repository(workspace_probe.path())?;
    let target = workspace_probe.path().join("lib.rs");
    let script = Script::new([Turn::new([assistant_message(format!(
        "```json\n{}\n```",
        review_json(&target)
    ))])]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server
        .start_thread(json!({"cwd": workspace_probe.path()}))
        .await?;
    let started = server
        .request(
            "review/start",
            json!({"threadId": thread_id, "target": {"type": "baseBranch", "branch": "main"}}),
        )
        .await?;
    let turn_id = started["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let messages = until_turn_completed(&mut server, &turn_id).await?;
    let entered = items_of(&messages, "enteredReviewMode");
    anyhow::ensure!(
        entered.len() == 1 && entered[0]["review"] == "changes against 'main'",
        "{entered:?}"
    );
    let exited = items_of(&messages, "exitedReviewMode");
    anyhow::ensure!(exited.len() == 1, "{:?}", methods(&messages));
    let review = exited[0]["review"].as_str().unwrap_or_default();
    let expected_place = format!("{}:1", target.display());
    anyhow::ensure!(
        review.starts_with("Verdict: patch is incorrect. one() no longer returns one.")
            && review.contains("[P1] one() returns 2")
            && review.contains(&expected_place)
            && review.contains("\n  Callers expect 1."),
        "{review}"
    );
    let output = &exited[0]["reviewOutput"];
    anyhow::ensure!(
        output["overall_correctness"] == "patch is incorrect"
            && output["findings"][0]["priority"] == 1,
        "{output}"
    );
    // The brief names the merge base the server computed.
    let base = git(workspace_probe.path(), &["merge-base", "HEAD", "main"])?;
    let requests = world.mock.requests();
    let sent = serde_json::to_string(requests[0].input())?;
    anyhow::ensure!(sent.contains(&format!("git diff {base}")), "{sent}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_targets_that_name_nothing_are_refused() -> anyhow::Result<()> {
    let world = World::new(Script::new(Vec::<Turn>::new()), &[]).await?;
    let repo = tempfile::tempdir()?;
    repository(repo.path())?;
    let mut server = world.server().await?;
    // The world's workspace is not a repository.
    let plain = server.start_thread(world.thread_params()).await?;
    let in_repo = server.start_thread(json!({"cwd": repo.path()})).await?;
    let cases = [
        (
            &plain,
            json!({"type": "uncommittedChanges"}),
            "is not in a git repository",
        ),
        (
            &in_repo,
            json!({"type": "baseBranch", "branch": "no-such"}),
            "branch 'no-such' does not exist",
        ),
        (
            &in_repo,
            json!({"type": "commit", "sha": "0123456789abcdef"}),
            "commit '0123456789abcdef' does not exist",
        ),
        (
            &in_repo,
            json!({"type": "commit", "sha": "--output=/tmp/x"}),
            "does not exist",
        ),
        (
            &in_repo,
            json!({"type": "custom", "instructions": "   "}),
            "instructions are empty",
        ),
    ];
    for (thread, target, expected) in cases {
        let result = server
            .request(
                "review/start",
                json!({"threadId": thread, "target": target}),
            )
            .await;
        let error = match result {
            Err(keel_test_support::Error::JsonRpc { error, .. }) => error,
            other => anyhow::bail!("{target}: expected an error, got {other:?}"),
        };
        anyhow::ensure!(error["code"] == -32602, "{target}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        anyhow::ensure!(message.contains(expected), "{target}: {message}");
    }
    let unknown = server
        .request(
            "review/start",
            json!({"threadId": "00000000-0000-7000-8000-000000000000", "target": {"type": "uncommittedChanges"}}),
        )
        .await;
    anyhow::ensure!(
        matches!(unknown, Err(keel_test_support::Error::JsonRpc { .. })),
        "{unknown:?}"
    );
    // Nothing ran: the threads are idle and the model was never asked.
    anyhow::ensure!(world.mock.requests().is_empty());
    let next = server.start_turn(&in_repo, "still usable").await;
    anyhow::ensure!(next.is_ok(), "{next:?}");
    Ok(())
}
