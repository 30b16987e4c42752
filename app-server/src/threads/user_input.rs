//! The model's questions (`request_user_input`) as `item/tool/requestUserInput` server
//! requests: sent to every client following the thread; the first answer goes to the
//! engine. An error answer, an unreadable one, or no client at all gives the model empty
//! answers (it is told nobody answered), so the turn never waits on a client that cannot ask.

use std::sync::Arc;

use keel_protocol::app_server::{ServerRequest, ToolRequestUserInputResponse};
use keel_protocol::{CallId, Op, UserInputResponse};

use super::LoadedThread;

impl LoadedThread {
    /// Asks every subscriber; the first answer is given to the engine.
    pub(super) async fn ask_user(self: &Arc<Self>, call_id: CallId, request: ServerRequest) {
        let mut first = self.ask_every_subscriber(&request).await;
        let thread = Arc::clone(self);
        tokio::spawn(async move {
            let response = match first.recv().await {
                Some(Ok(value)) => {
                    match serde_json::from_value::<ToolRequestUserInputResponse>(value) {
                        Ok(answer) => UserInputResponse {
                            answers: answer.answers,
                        },
                        Err(err) => {
                            tracing::warn!(
                                "unreadable answers to request_user_input ({err}); none given"
                            );
                            UserInputResponse::default()
                        }
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!("the client could not answer request_user_input: {error}");
                    UserInputResponse::default()
                }
                None => UserInputResponse::default(),
            };
            let answer = Op::UserInputAnswer {
                id: call_id,
                response,
            };
            if let Err(err) = thread.conversation.submit(answer).await {
                tracing::debug!("thread gone before its answers arrived: {err}");
            }
        });
    }
}
