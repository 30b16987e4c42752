//! The client's own tools in a thread: a call as a `dynamicToolCall` item, started when the
//! model makes it (with the `item/tool/call` request to the client that defined the tool)
//! and completed with the client's answer. Calls of tools the embedding program registered
//! in code are shown the same way (no request goes to the client: the program runs them).

use keel_protocol::app_server::{
    DynamicToolCallItem, DynamicToolCallParams, DynamicToolCallStatus, ServerRequest, ThreadItem,
};
use keel_protocol::{DynamicToolCallEndEvent, DynamicToolContentItem, EventMsg};

use super::{Output, Translator};

impl Translator {
    /// Maps a client-tool event; other events give nothing.
    pub(super) fn client_tool(&mut self, msg: &EventMsg) -> Vec<Output> {
        match msg {
            EventMsg::DynamicToolCallRequest(call) => {
                let mut out =
                    self.start_once(ThreadItem::DynamicToolCall(Box::new(DynamicToolCallItem {
                        id: call.call_id.to_string(),
                        tool: call.tool.clone(),
                        namespace: call.namespace.clone(),
                        arguments: call.arguments.clone(),
                        status: DynamicToolCallStatus::InProgress,
                        content_items: None,
                        success: None,
                        duration_ms: None,
                    })));
                out.push(Output::ClientTool {
                    call_id: call.call_id.clone(),
                    request: ServerRequest::DynamicToolCall(DynamicToolCallParams {
                        thread_id: self.thread_id.clone(),
                        turn_id: call.turn_id.to_string(),
                        call_id: call.call_id.to_string(),
                        tool: call.tool.clone(),
                        namespace: call.namespace.clone(),
                        arguments: call.arguments.clone(),
                    }),
                });
                out
            }
            EventMsg::DynamicToolCallEnd(end) => self.complete(ended_item(end)),
            EventMsg::ToolCallBegin(call) => {
                self.start_once(ThreadItem::DynamicToolCall(Box::new(DynamicToolCallItem {
                    id: call.call_id.to_string(),
                    tool: call.tool.clone(),
                    namespace: None,
                    arguments: call.arguments.clone(),
                    status: DynamicToolCallStatus::InProgress,
                    content_items: None,
                    success: None,
                    duration_ms: None,
                })))
            }
            EventMsg::ToolCallEnd(end) => {
                self.complete(ThreadItem::DynamicToolCall(Box::new(DynamicToolCallItem {
                    id: end.call_id.to_string(),
                    tool: end.tool.clone(),
                    namespace: None,
                    arguments: end.arguments.clone(),
                    status: if end.success {
                        DynamicToolCallStatus::Completed
                    } else {
                        DynamicToolCallStatus::Failed
                    },
                    content_items: Some(vec![DynamicToolContentItem::InputText {
                        text: end.output.clone(),
                    }]),
                    success: Some(end.success),
                    duration_ms: Some(u64::try_from(end.duration.as_millis()).unwrap_or(u64::MAX)),
                })))
            }
            _ => Vec::new(),
        }
    }
}

/// The `dynamicToolCall` item of a call the client answered (or that failed without it).
pub(crate) fn ended_item(end: &DynamicToolCallEndEvent) -> ThreadItem {
    ThreadItem::DynamicToolCall(Box::new(DynamicToolCallItem {
        id: end.call_id.to_string(),
        tool: end.tool.clone(),
        namespace: end.namespace.clone(),
        arguments: end.arguments.clone(),
        status: if end.response.success {
            DynamicToolCallStatus::Completed
        } else {
            DynamicToolCallStatus::Failed
        },
        content_items: Some(end.response.content_items.clone()),
        success: Some(end.response.success),
        duration_ms: Some(u64::try_from(end.duration.as_millis()).unwrap_or(u64::MAX)),
    }))
}
