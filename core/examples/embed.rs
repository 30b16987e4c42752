//! Embeds the Keel engine: `cargo run -p keel-core --example embed -- "list the files"`.
//! Uses `$KEEL_HOME/config.toml` (default `~/.keel`) for the model and provider.
//!
//! The embedding program answers the engine's approval requests itself: this one asks its
//! user on the terminal (`y` runs it once, `a` for the rest of the session, anything else
//! declines). Nothing is approved without an answer. When the sandbox cannot confine a
//! command (no `keel-linux-sandbox` beside the program, an old kernel) the question says so;
//! under the `never` approval policy such a command is refused and a warning says why.

use std::io::{BufRead, Write};

use keel_core::{Config, ConfigOverrides, ConversationManager, find_keel_home};
use keel_protocol::{EventMsg, InputItem, Op, ReviewDecision};

/// Asks the user about `what` on stderr and reads the answer from stdin.
fn ask(what: &str, reason: Option<&str>) -> anyhow::Result<ReviewDecision> {
    let mut err = std::io::stderr().lock();
    writeln!(err, "\nallow {what}?")?;
    if let Some(reason) = reason {
        writeln!(err, "  ({reason})")?;
    }
    write!(err, "[y]es / [a]lways this session / [n]o: ")?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(match answer.trim() {
        "y" | "yes" => ReviewDecision::Approved,
        "a" | "always" => ReviewDecision::ApprovedForSession,
        _ => ReviewDecision::Denied,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Say hello".into());
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
    let manager = ConversationManager::new();
    let conversation = manager.new_conversation(config).await?.conversation;
    conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(prompt)],
        })
        .await?;
    loop {
        match conversation.next_event().await?.msg {
            EventMsg::AgentMessageDelta(delta) => print!("{}", delta.delta),
            EventMsg::ExecCommandBegin(begin) => eprintln!("$ {}", begin.command.join(" ")),
            EventMsg::Warning(warning) => eprintln!("warning: {}", warning.message),
            EventMsg::ExecApprovalRequest(request) => {
                // Blocking on the terminal is fine here: this program does nothing else.
                let what = format!("running `{}`", request.command.join(" "));
                let decision = ask(&what, request.reason.as_deref())?;
                let op = Op::ExecApproval {
                    id: request.call_id,
                    decision,
                };
                conversation.submit(op).await?;
            }
            EventMsg::ApplyPatchApprovalRequest(request) => {
                let files: Vec<String> = request
                    .changes
                    .keys()
                    .map(|path| path.display().to_string())
                    .collect();
                let what = format!("changing {}", files.join(", "));
                let decision = ask(&what, request.reason.as_deref())?;
                let op = Op::PatchApproval {
                    id: request.call_id,
                    decision,
                };
                conversation.submit(op).await?;
            }
            EventMsg::TaskComplete(_) => break println!(),
            EventMsg::Error(error) => anyhow::bail!(error.message),
            EventMsg::TurnAborted(_) => anyhow::bail!("turn aborted"),
            _ => {}
        }
    }
    Ok(())
}
