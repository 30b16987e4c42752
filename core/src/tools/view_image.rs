//! The `view_image` tool: the model looks at an image file; the image joins the history as
//! user input right after the call's output.

use std::path::Path;

use keel_protocol::exec_server::FileReadResponse;
use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolContext;
use super::builtin::BuiltinTool;
use crate::images::{ImageError, MAX_IMAGE_BYTES};
use crate::models::{ContentItem, ResponseItem};
use crate::turn_context::TurnStop;

// The model's arguments; the field docs are what the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ViewImageArgs {
    /// The image file, absolute or relative to the working directory.
    path: String,
}

/// `view_image`: attaches a local image to the model's next request.
pub(crate) struct ViewImageTool;

impl BuiltinTool for ViewImageTool {
    type Args = ViewImageArgs;
    const NAME: &'static str = "view_image";

    fn description(&self) -> &'static str {
        "Look at a local image file (PNG, JPEG, GIF or WebP, up to 20 MB), such as a screenshot \
         or a rendered chart; it is shown to you with the next request."
    }

    async fn run(&self, ctx: &ToolContext, args: ViewImageArgs) -> Result<String, TurnStop> {
        Ok(view_image(ctx, args).await)
    }
}

/// Queues the image for the next request and says so; a missing, non-image or oversized
/// file is an error for the model naming the file.
async fn view_image(ctx: &ToolContext, args: ViewImageArgs) -> String {
    match image_data_url(ctx, args.path.as_ref()).await {
        Ok(image_url) => {
            ctx.host.queue_input(ResponseItem::Message {
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

/// The image as a `data:` URL, read where the turn's commands run (this host, or a
/// remote environment's).
async fn image_data_url(ctx: &ToolContext, path: &Path) -> Result<String, String> {
    let processes = ctx.host.processes();
    if processes.is_local() {
        return crate::images::local_image_data_url(&ctx.turn.cwd, path)
            .map_err(|err| err.to_string());
    }
    let path = ctx.turn.cwd.join(path);
    let max = MAX_IMAGE_BYTES.min(keel_exec_server::files::MAX_READ_BYTES);
    let image_error = |err: ImageError| err.to_string();
    match processes.read_file(&path, max).await {
        Ok(FileReadResponse::Read { data_base64 }) => {
            crate::images::image_data_url(&path, &data_base64.0).map_err(image_error)
        }
        Ok(FileReadResponse::Missing) => Err(image_error(ImageError::Unreadable {
            path,
            cause: "no such file in the remote environment".to_string(),
        })),
        Ok(FileReadResponse::TooLarge { size }) => {
            Err(image_error(ImageError::TooLarge { path, size, max }))
        }
        Ok(FileReadResponse::Unreadable { message }) => Err(image_error(ImageError::Unreadable {
            path,
            cause: message,
        })),
        Err(err) => Err(format!(
            "cannot read image {} in the remote environment: {err}",
            path.display()
        )),
    }
}
