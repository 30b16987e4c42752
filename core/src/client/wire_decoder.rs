//! How one wire API's server-sent frames become response events. The provider that sends a
//! request chooses its decoder, so the stream that reads the frames knows no wire API.

use super::ResponseEvent;
use super::sse::Frame;
use crate::error::Result;

/// Decodes one response's frames, in order.
pub(super) trait WireDecoder: Send {
    /// The events one frame gives (often none).
    fn map_frame(&mut self, frame: &Frame) -> Result<Vec<ResponseEvent>>;

    /// Whether the answer is complete though its end marker has not come: a server that said
    /// why it stopped may keep the stream open, or close it without the marker.
    fn answered(&self) -> bool {
        false
    }

    /// The events that close an answer [`answered`](Self::answered) without its end marker.
    fn finish(&mut self) -> Vec<ResponseEvent> {
        Vec::new()
    }
}
