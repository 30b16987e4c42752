//! Approvals as server requests: each one goes to every client following the thread, and to
//! any client that resumes the thread while it waits; the first answer goes to the engine. A
//! client that disconnects without answering does not decide anything: the others (or a
//! client that resumes the thread later) still can.

use std::sync::Arc;

use keel_protocol::app_server::{
    CommandExecutionApprovalDecision, CommandExecutionRequestApprovalResponse, ServerNotification,
    ServerRequest, ServerRequestResolvedNotification,
};
use keel_protocol::{CallId, Op, RequestId, ReviewDecision};
use tokio::sync::mpsc;

use super::pending_approval::PendingApproval;
use super::{LoadedThread, lock};
use crate::outgoing::{ClientAnswer, ConnectionId, Outgoing};

/// Sends `request` to `outgoing`, forwarding its answer (if it ever comes) to `answers`.
async fn send_request(
    outgoing: &Outgoing,
    request: &ServerRequest,
    answers: &mpsc::UnboundedSender<ClientAnswer>,
) -> Option<RequestId> {
    let (id, answer) = outgoing.request(request.clone()).await?;
    let answers = answers.clone();
    tokio::spawn(async move {
        // An error here means the request was withdrawn or its client is gone: no answer.
        if let Ok(answer) = answer.await {
            let _ = answers.send(answer);
        }
    });
    Some(id)
}

/// The decision a client's result stands for; an unreadable one declines.
fn decision_of(value: serde_json::Value) -> CommandExecutionApprovalDecision {
    match serde_json::from_value::<CommandExecutionRequestApprovalResponse>(value) {
        Ok(response) => response.decision,
        Err(err) => {
            tracing::warn!("unreadable approval answer ({err}); declining");
            CommandExecutionApprovalDecision::Decline
        }
    }
}

impl LoadedThread {
    /// Sends an approval request to every subscriber; the first answer goes to the engine.
    pub(super) async fn ask(
        self: &Arc<Self>,
        call_id: CallId,
        is_patch: bool,
        request: ServerRequest,
    ) {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        let (answers, mut answers_rx) = mpsc::unbounded_channel();
        let mut requests = Vec::new();
        for subscriber in subscribers {
            if let Some(id) = send_request(&subscriber, &request, &answers).await {
                requests.push((subscriber, id));
            }
        }
        if requests.is_empty() {
            tracing::warn!(thread = %self.id, %call_id, "no client to ask for approval; declining");
            self.settle(call_id, is_patch, ReviewDecision::Denied).await;
            return;
        }
        let thread = self.clone();
        let task_call = call_id.clone();
        // Held until the approval is registered: an answer that is already waiting must find
        // it (and remove it), or a stale entry would keep the thread "waiting on approval" and
        // be withdrawn later although it was answered.
        {
            let mut approvals = lock(&self.approvals);
            let task = tokio::spawn(async move {
                // The pending entry holds a sender, so this ends only with an answer (or when
                // the task is aborted because the turn ended). An error answer is not a
                // decision (a client that cannot show the request says so with an error): the
                // approval keeps waiting for another client, a resumed one, or an interrupt.
                let decision = loop {
                    match answers_rx.recv().await {
                        Some(Ok(value)) => break decision_of(value),
                        Some(Err(error)) => {
                            tracing::warn!(
                                thread = %thread.id,
                                call = %task_call,
                                "a client answered the approval with an error ({error}); \
                                 still waiting for a decision"
                            );
                            thread.warn_undecided(&error.to_string()).await;
                        }
                        None => break CommandExecutionApprovalDecision::Decline,
                    }
                };
                // Every copy of the request is settled now, the answered one included: each
                // client is told with `serverRequest/resolved` (as Codex's server does), so
                // the others close their prompt.
                let copies = lock(&thread.approvals).remove(&task_call);
                if let Some(pending) = copies {
                    for (outgoing, id) in pending.requests {
                        thread.withdraw(&outgoing, id).await;
                    }
                }
                thread.settle(task_call, is_patch, decision.into()).await;
            });
            approvals.insert(
                call_id,
                PendingApproval {
                    request,
                    requests,
                    answers,
                    task,
                },
            );
        }
        self.broadcast_status().await;
    }

    /// Sends every pending approval to `connection`, which has just subscribed (a client
    /// resuming the thread, perhaps after its previous connection dropped mid-approval).
    pub(crate) async fn resend_approvals(&self, connection: &Arc<Outgoing>) {
        let pending: Vec<(CallId, ServerRequest, mpsc::UnboundedSender<ClientAnswer>)> =
            lock(&self.approvals)
                .iter()
                .filter(|(_, approval)| {
                    !approval
                        .requests
                        .iter()
                        .any(|(outgoing, _)| outgoing.id() == connection.id())
                })
                .map(|(call_id, approval)| {
                    (
                        call_id.clone(),
                        approval.request.clone(),
                        approval.answers.clone(),
                    )
                })
                .collect();
        for (call_id, request, answers) in pending {
            let Some(id) = send_request(connection, &request, &answers).await else {
                continue;
            };
            let still_pending = match lock(&self.approvals).get_mut(&call_id) {
                Some(approval) => {
                    approval.requests.push((connection.clone(), id.clone()));
                    true
                }
                None => false,
            };
            if !still_pending {
                // Settled while the copy was on its way.
                self.withdraw(connection, id).await;
            }
        }
    }

    /// Forgets the requests a closed connection never answered, so they stop counting as
    /// asked; the approval keeps waiting for another client.
    pub(crate) fn forget_connection(&self, connection: ConnectionId) {
        for approval in lock(&self.approvals).values_mut() {
            approval.requests.retain(|(outgoing, id)| {
                if outgoing.id() == connection {
                    outgoing.forget(id);
                    false
                } else {
                    true
                }
            });
        }
    }

    /// Gives the engine the decision, and marks declined items.
    pub(super) async fn settle(&self, call_id: CallId, is_patch: bool, decision: ReviewDecision) {
        let op = if is_patch {
            Op::PatchApproval {
                id: call_id.clone(),
                decision,
            }
        } else {
            Op::ExecApproval {
                id: call_id.clone(),
                decision,
            }
        };
        if let Err(err) = self.conversation.submit(op).await {
            tracing::warn!(thread = %self.id, "cannot deliver approval: {err}");
        }
        if matches!(decision, ReviewDecision::Denied | ReviewDecision::Abort) {
            let outputs = lock(&self.translator).declined(&call_id);
            self.notify_all(outputs).await;
        }
        self.broadcast_status().await;
    }

    /// Approvals still pending when their turn ends are withdrawn from the clients.
    pub(super) async fn withdraw_approvals(&self) {
        let pending: Vec<PendingApproval> = lock(&self.approvals).drain().map(|(_, p)| p).collect();
        for approval in pending {
            approval.task.abort();
            for (outgoing, request_id) in approval.requests {
                self.withdraw(&outgoing, request_id).await;
            }
        }
    }

    /// Withdraws one copy of a request from its client: no answer is awaited any more, and
    /// the client is told with `serverRequest/resolved`.
    async fn withdraw(&self, outgoing: &Outgoing, request_id: RequestId) {
        outgoing.forget(&request_id);
        outgoing
            .notify(ServerNotification::ServerRequestResolved(
                ServerRequestResolvedNotification {
                    thread_id: self.id.to_string(),
                    request_id,
                },
            ))
            .await;
    }

    /// Aborts every pending approval's waiter (the thread is being unloaded).
    pub(super) fn abort_approvals(&self) {
        for (_, approval) in lock(&self.approvals).drain() {
            approval.task.abort();
        }
    }
}

impl LoadedThread {
    /// Tells the thread's clients that an approval is still open after a client failed to
    /// handle it, so the user is not left wondering why nothing runs.
    async fn warn_undecided(&self, error: &str) {
        self.broadcast(ServerNotification::Warning(
            keel_protocol::app_server::WarningNotification {
                message: format!(
                    "a client could not handle an approval request ({error}); it is still \
                     waiting for an answer from another client, or an interrupt"
                ),
                thread_id: Some(self.id.to_string()),
            },
        ))
        .await;
    }
}
