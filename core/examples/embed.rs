//! Embeds the Keel engine: `cargo run -p keel-core --example embed -- "list the files"`.
//! Uses `$KEEL_HOME/config.toml` (default `~/.keel`) for the model and provider.

use keel_core::{Config, ConfigOverrides, ConversationManager, find_keel_home};
use keel_protocol::{EventMsg, InputItem, Op, ReviewDecision};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Say hello".into());
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
    let manager = ConversationManager::new();
    let new = manager.new_conversation(config).await?;
    let conversation = new.conversation;
    conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(prompt)],
        })
        .await?;
    loop {
        match conversation.next_event().await?.msg {
            EventMsg::AgentMessageDelta(delta) => print!("{}", delta.delta),
            EventMsg::ExecCommandBegin(begin) => println!("\n$ {}", begin.command.join(" ")),
            EventMsg::ExecApprovalRequest(request) => {
                // A real embedder would ask its user; this one approves everything once.
                let op = Op::ExecApproval {
                    id: request.call_id,
                    decision: ReviewDecision::Approved,
                };
                conversation.submit(op).await?;
            }
            EventMsg::ApplyPatchApprovalRequest(request) => {
                let op = Op::PatchApproval {
                    id: request.call_id,
                    decision: ReviewDecision::Approved,
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
