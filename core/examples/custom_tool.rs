//! Gives the model a tool of the embedder's own: a ticket lookup the model calls by name.
//!
//! `cargo run -p keel-core --example custom_tool -- "What is the status of KEEL-12?"`
//! uses `$KEEL_HOME/config.toml` (default `~/.keel`) for the model and provider, and prints
//! the model's final answer on stdout.

use keel_core::{
    Config, ConfigOverrides, ConversationManager, Tool, ToolContext, ToolError, find_keel_home,
};
use keel_protocol::{EventMsg, InputItem, Op};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stand-in for a ticket tracker: the tool's state lives in the embedding program.
struct TicketLookup {
    tickets: Vec<Ticket>,
}

#[derive(Clone, Serialize)]
struct Ticket {
    id: &'static str,
    title: &'static str,
    status: &'static str,
}

/// What the model sends: the schema offered to it is derived from this type.
#[derive(Deserialize, JsonSchema)]
struct LookupArgs {
    /// The ticket's id, such as `KEEL-12`.
    id: String,
}

impl Tool for TicketLookup {
    type Args = LookupArgs;
    type Output = Ticket;
    const NAME: &'static str = "lookup_ticket";

    fn description(&self) -> String {
        "Looks a ticket up in the team's tracker and returns its title and status.".into()
    }

    async fn call(&self, _ctx: ToolContext, args: LookupArgs) -> Result<Ticket, ToolError> {
        self.tickets
            .iter()
            .find(|ticket| ticket.id.eq_ignore_ascii_case(&args.id))
            .cloned()
            .ok_or_else(|| ToolError::Respond(format!("no ticket `{}` in the tracker", args.id)))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is the status of KEEL-12?".into());
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;

    let tickets = vec![Ticket {
        id: "KEEL-12",
        title: "Tools as traits",
        status: "in review",
    }];
    let manager = ConversationManager::builder()
        .tool(TicketLookup { tickets })
        .build()?;

    let conversation = manager.new_conversation(config).await?.conversation;
    conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(prompt)],
        })
        .await?;
    loop {
        match conversation.next_event().await?.msg {
            EventMsg::TaskComplete(done) => {
                println!("{}", done.last_agent_message.unwrap_or_default());
                return Ok(());
            }
            EventMsg::Error(error) => anyhow::bail!(error.message),
            EventMsg::TurnAborted(_) => anyhow::bail!("turn aborted"),
            _ => {}
        }
    }
}
