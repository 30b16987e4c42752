//! Plugs in a model backend Keel does not ship: here a tiny rule-based "model" written in
//! the example, with no HTTP at all. It answers a question by first running `ls` and then
//! summarising what the command printed, the loop a real model drives.
//!
//! `cargo run -p keel-core --example custom_provider -- "What is in this directory?"`
//! (the configuration in `$KEEL_HOME/config.toml`, default `~/.keel`, still sets the
//! approval policy, the sandbox and the model name passed to the provider).

use futures::future::BoxFuture;
use keel_core::{
    ClientSettings, Config, ConfigOverrides, ContentItem, ConversationManager, ModelProvider,
    Prompt, ResponseEvent, ResponseItem, ResponseStream, find_keel_home,
};
use keel_protocol::{EventMsg, InputItem, Op};

/// A backend that lists the directory, then reports the listing.
struct ListThenAnswer;

impl ListThenAnswer {
    /// The next output item, from what the conversation holds so far.
    fn reply(prompt: &Prompt) -> ResponseItem {
        let listing = prompt.input.iter().rev().find_map(|item| match item {
            ResponseItem::FunctionCallOutput { call_id, output } if call_id == "ls-1" => {
                Some(output.text().into_owned())
            }
            _ => None,
        });
        match listing {
            None => ResponseItem::FunctionCall {
                id: None,
                name: "shell".into(),
                namespace: None,
                arguments: r#"{"command":["ls"]}"#.into(),
                call_id: "ls-1".into(),
            },
            Some(output) => {
                // The shell tool answers with JSON: the output and its metadata.
                let shown = serde_json::from_str::<serde_json::Value>(&output)
                    .ok()
                    .and_then(|v| v["output"].as_str().map(str::to_string))
                    .unwrap_or(output);
                let files: Vec<&str> = shown.lines().collect();
                ResponseItem::Message {
                    id: None,
                    role: "assistant".into(),
                    content: vec![ContentItem::OutputText {
                        text: format!("This directory holds: {}", files.join(", ")),
                    }],
                }
            }
        }
    }
}

impl ModelProvider for ListThenAnswer {
    fn stream<'a>(
        &'a self,
        _settings: &'a ClientSettings,
        prompt: &'a Prompt,
    ) -> BoxFuture<'a, keel_core::Result<ResponseStream>> {
        let events = vec![
            Ok(ResponseEvent::Created),
            Ok(ResponseEvent::OutputItemDone(Self::reply(prompt))),
            Ok(ResponseEvent::Completed {
                response_id: "local".into(),
                token_usage: None,
            }),
        ];
        Box::pin(async move { Ok(ResponseStream::from_events(futures::stream::iter(events))) })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is in this directory?".into());
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
    let manager = ConversationManager::builder()
        .provider(ListThenAnswer)
        .build()?;
    let conversation = manager.new_conversation(config).await?.conversation;
    conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(prompt)],
        })
        .await?;
    loop {
        match conversation.next_event().await?.msg {
            EventMsg::ExecCommandBegin(begin) => eprintln!("$ {}", begin.command.join(" ")),
            EventMsg::Warning(warning) => eprintln!("warning: {}", warning.message),
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
