//! `keel queue --thread ID --message TEXT [--resume]`: keep a message for a recorded thread,
//! delivered as its next turn once the thread is idle in a server that has it loaded (as
//! Codex 0.171's `codex queue`, over the same `thread/queue/*` methods).
//!
//! With `--resume` the thread is resumed, here (an app-server in this process) or on the
//! `--remote` server, and the command stays until every queued message of the thread has run.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use keel_app_server::{
    AppServerClient, EventDelivery, InProcessAppServerClient, InProcessEvent, ServerConfig,
};
use keel_core::find_keel_home;
use keel_protocol::app_server::{
    ClientInfo, ServerNotification, SessionSource, ThreadQueueAddParams, ThreadQueueListParams,
    ThreadReadParams, ThreadResumeParams, ThreadStatus, UserInput, client_request,
};

use crate::failure::usage;

/// Arguments of `keel queue`.
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// The thread: its id or exact name.
    #[arg(long, value_name = "THREAD")]
    pub thread: String,

    /// The message to queue.
    #[arg(long, value_name = "TEXT")]
    pub message: String,

    /// Then resume the thread (here, or on the `--remote` server) and run what is queued.
    #[arg(long)]
    pub resume: bool,

    /// Queue on an app-server elsewhere (`ws://host:port` or `wss://host:port`).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// The environment variable holding the bearer token of `--remote`.
    #[arg(long, value_name = "ENV_VAR", requires = "remote")]
    pub remote_auth_token_env: Option<String>,
}

/// Runs `keel queue`.
pub async fn run(args: QueueArgs) -> anyhow::Result<ExitCode> {
    if args.message.trim().is_empty() {
        return Err(usage("--message is empty"));
    }
    match &args.remote {
        Some(url) => {
            let client = crate::exec::remote::connect(
                url,
                args.remote_auth_token_env.as_deref(),
                "keel_queue",
            )
            .await?;
            queue(&client, &args).await
        }
        None => {
            let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
            let cwd = std::env::current_dir().context("reading the current directory")?;
            let client = InProcessAppServerClient::start_with_delivery(
                ServerConfig {
                    keel_home: home,
                    cli_overrides: Vec::new(),
                    cwd,
                    session_source: SessionSource::Cli,
                    deliver_queued_messages: args.resume,
                    client_backends: Default::default(),
                    threads: Default::default(),
                },
                ClientInfo {
                    name: "keel_queue".to_string(),
                    title: None,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                },
                None,
                EventDelivery::WaitForConsumer,
            )
            .await?;
            let code = queue(&client, &args).await?;
            client.shutdown(std::time::Duration::from_secs(60)).await;
            Ok(code)
        }
    }
}

async fn queue<C: AppServerClient>(client: &C, args: &QueueArgs) -> anyhow::Result<ExitCode> {
    let thread_id = crate::sessions::lookup::thread_id(client, &args.thread, false).await?;
    // What waits before this message, and the message: what a `--resume` run delivers
    // (counted here, as a server with the thread loaded may run it before we follow).
    let waiting = client
        .request::<client_request::ThreadQueueList>(ThreadQueueListParams {
            thread_id: thread_id.clone(),
            cursor: None,
            limit: None,
        })
        .await
        .map(|list| list.data.len())
        .map_err(|err| anyhow::anyhow!("failed to read the thread's queue: {err}"))?;
    let added = client
        .request::<client_request::ThreadQueueAdd>(ThreadQueueAddParams {
            thread_id: thread_id.clone(),
            client_user_message_id: uuid::Uuid::now_v7().to_string(),
            input: vec![UserInput::Text {
                text: args.message.clone(),
                text_elements: Vec::new(),
            }],
            responsesapi_client_metadata: None,
        })
        .await
        .map_err(|err| anyhow::anyhow!("failed to queue the message: {err}"))?;
    println!(
        "Queued message {} for thread {thread_id}.",
        added.queued_submission.id
    );
    if !args.resume {
        return Ok(ExitCode::SUCCESS);
    }
    client
        .request::<client_request::ThreadResume>(ThreadResumeParams {
            thread_id: thread_id.clone(),
            overrides: Default::default(),
        })
        .await
        .map_err(|err| {
            anyhow::anyhow!("the message is queued, but resuming the thread failed: {err}")
        })?;
    // Until the queue is empty and no turn runs: checked now (a server that had the thread
    // loaded may have run everything before this connection followed it) and after each turn.
    while !all_delivered(client, &thread_id).await? {
        let Some(event) = client.next_event().await else {
            anyhow::bail!("the app-server closed before the queue was delivered");
        };
        match event {
            InProcessEvent::Notification(ServerNotification::TurnCompleted(done))
                if done.thread_id == thread_id => {}
            InProcessEvent::ServerRequest { id, request } => {
                // Nobody is here to answer: as `keel exec` answers.
                client
                    .respond(
                        id,
                        crate::exec::drive::unattended_answer(
                            request,
                            crate::exec::UnattendedElicitation::Decline,
                        ),
                    )
                    .await?;
                continue;
            }
            _ => continue,
        }
    }
    eprintln!(
        "Ran {} queued message(s) on thread {thread_id}.",
        waiting + 1
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether the thread's queue is empty and no turn runs (none claimed for a message taken
/// just now either).
async fn all_delivered<C: AppServerClient>(client: &C, thread_id: &str) -> anyhow::Result<bool> {
    let left = client
        .request::<client_request::ThreadQueueList>(ThreadQueueListParams {
            thread_id: thread_id.to_string(),
            cursor: None,
            limit: Some(1),
        })
        .await?;
    let read = client
        .request::<client_request::ThreadRead>(ThreadReadParams {
            thread_id: thread_id.to_string(),
            include_turns: false,
        })
        .await?;
    Ok(left.data.is_empty() && read.thread.status == ThreadStatus::Idle)
}
