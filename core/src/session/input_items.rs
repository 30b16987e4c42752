//! What the user's input becomes: an item of the model's history and the event clients show.

use keel_protocol::{InputItem, UserMessageEvent};

use crate::models::{ContentItem, ResponseItem};

/// Converts user input to history items: a user message with its text and images, and an
/// `agent_message` item for each message from another agent.
pub(crate) fn user_input_items(cwd: &std::path::Path, items: &[InputItem]) -> Vec<ResponseItem> {
    let mut history = Vec::new();
    let content: Vec<ContentItem> = items
        .iter()
        .filter_map(|item| {
            Some(match item {
                InputItem::Text { text } => ContentItem::InputText { text: text.clone() },
                InputItem::Image { image_url } => ContentItem::InputImage {
                    image_url: image_url.clone(),
                },
                // Read when the input arrives; a file that cannot be sent is named to the
                // model in its place (clients check paths before they submit).
                InputItem::LocalImage { path } => {
                    match crate::images::local_image_data_url(cwd, path) {
                        Ok(image_url) => ContentItem::InputImage { image_url },
                        Err(err) => ContentItem::InputText {
                            text: format!("[image not attached: {err}]"),
                        },
                    }
                }
                InputItem::AgentMessage {
                    author,
                    recipient,
                    message_type,
                    payload,
                } => {
                    history.push(ResponseItem::agent_message(
                        message_type,
                        author,
                        recipient,
                        payload,
                    ));
                    return None;
                }
            })
        })
        .collect();
    if !content.is_empty() {
        history.insert(
            0,
            ResponseItem::Message {
                id: None,
                role: "user".to_string(),
                content,
            },
        );
    }
    history
}

/// The event that shows the user's input to clients: its text, and its images by URL or path.
pub(super) fn user_message_event(input: &[InputItem]) -> UserMessageEvent {
    let mut message = String::new();
    let mut images = Vec::new();
    for item in input {
        match item {
            InputItem::Text { text } => message.push_str(text),
            InputItem::Image { image_url } => images.push(image_url.clone()),
            InputItem::LocalImage { path } => images.push(path.display().to_string()),
            InputItem::AgentMessage { payload, .. } => message.push_str(payload),
        }
    }
    UserMessageEvent { message, images }
}
