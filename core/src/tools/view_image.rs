//! The `view_image` tool: the model looks at an image file; the image joins the history as
//! user input right after the call's output.

use serde::Deserialize;

use super::BuiltinCall;
use crate::models::{ContentItem, ResponseItem};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewImageArgs {
    path: String,
}

super::builtin_tool!(
    /// `view_image`: attaches a local image to the model's next request.
    ViewImageTool,
    "view_image",
    super::spec::view_image_tool(),
    |call, _call_id, arguments| Ok(call.view_image(arguments))
);

impl BuiltinCall<'_> {
    /// Queues the image for the next request and says so; a missing, non-image or oversized
    /// file is an error for the model naming the file.
    pub(super) fn view_image(&self, arguments: &str) -> String {
        let args: ViewImageArgs = match serde_json::from_str(arguments) {
            Ok(args) => args,
            Err(err) => return format!("failed to parse view_image arguments: {err}"),
        };
        match crate::images::local_image_data_url(&self.context.cwd, args.path.as_ref()) {
            Ok(image_url) => {
                self.session.queue_input(ResponseItem::Message {
                    id: None,
                    role: "user".to_string(),
                    content: vec![
                        ContentItem::InputText {
                            text: format!("Image {}:", args.path),
                        },
                        ContentItem::InputImage { image_url },
                    ],
                });
                format!("attached image {}", args.path)
            }
            Err(err) => err.to_string(),
        }
    }
}
