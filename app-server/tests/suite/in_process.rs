//! The in-process client drives the same server without a transport.

use keel_app_server::{InProcessAppServerClient, InProcessEvent, ServerConfig};
use keel_protocol::app_server::{
    ClientInfo, ServerNotification, ThreadStartParams, TurnStartParams, TurnStatus, UserInput,
    client_request,
};
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_client_runs_a_turn() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message(
        "in-process hello",
    )])]))
    .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let client = InProcessAppServerClient::start(
        ServerConfig {
            keel_home: home.path().to_path_buf(),
            cli_overrides: Vec::new(),
            cwd: workspace.path().to_path_buf(),
        },
        ClientInfo {
            name: "test".into(),
            title: None,
            version: "1".into(),
        },
        None,
    )
    .await?;
    assert!(client.initialize.user_agent.contains("test/1"));
    let thread = client
        .request::<client_request::ThreadStart>(ThreadStartParams::default())
        .await?;
    let turn = client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread.thread.id.clone(),
            input: vec![UserInput::Text {
                text: "hi".into(),
                text_elements: Vec::new(),
            }],
            cwd: None,
            approval_policy: None,
            sandbox_policy: None,
            model: None,
            effort: None,
        })
        .await?;
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), client.next_event())
            .await?
            .ok_or_else(|| anyhow::anyhow!("server stopped"))?;
        if let InProcessEvent::Notification(ServerNotification::TurnCompleted(done)) = event
            && done.turn.id == turn.turn.id
        {
            assert_eq!(done.turn.status, TurnStatus::Completed);
            break;
        }
    }
    let bad = client
        .request::<client_request::ThreadRead>(keel_protocol::app_server::ThreadReadParams {
            thread_id: "not-a-uuid".into(),
            include_turns: false,
        })
        .await;
    assert!(bad.is_err_and(|err| err.to_string().contains("invalid thread id")));
    Ok(())
}
