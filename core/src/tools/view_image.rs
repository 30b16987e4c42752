//! The `view_image` tool: the model looks at an image file; the image joins the history as
//! user input right after the call's output.

use std::path::Path;

use keel_protocol::exec_server::FileReadResponse;
use serde::Deserialize;

use super::ToolContext;
use crate::images::{ImageError, MAX_IMAGE_BYTES};
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
    |call, _call_id, arguments| Ok(view_image(call, arguments).await)
);

/// Queues the image for the next request and says so; a missing, non-image or oversized
/// file is an error for the model naming the file.
async fn view_image(ctx: &ToolContext, arguments: &str) -> String {
    let args: ViewImageArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return format!("failed to parse view_image arguments: {err}"),
    };
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
