//! One message per websocket frame, over any stream tungstenite can drive.

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::{Frame, Outgoing};
use crate::codec::encode_event;

/// Reads text (or UTF-8 binary) frames until close, error, or the receiver is gone.
pub(crate) async fn read_frames<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: SplitStream<WebSocketStream<S>>,
    frames: mpsc::Sender<Frame>,
) {
    while let Some(message) = stream.next().await {
        let frame = match message {
            // Handed over without copying; tungstenite already checked it is UTF-8.
            Ok(Message::Text(text)) => Frame::Line(text.into()),
            Ok(Message::Binary(bytes)) => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => Frame::Text(text),
                Err(err) => Frame::Rejected(keel_protocol::FrameError::NotUtf8 {
                    valid_up_to: err.utf8_error().valid_up_to(),
                }),
            },
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
            Ok(Message::Close(_)) => return,
            Err(err) => {
                tracing::debug!(%err, "websocket read failed; closing");
                return;
            }
        };
        let last = matches!(frame, Frame::Invalid(_));
        if frames.send(frame).await.is_err() || last {
            return;
        }
    }
}

/// Sends each message as a text frame, flushing whenever the queue runs empty, then closes.
pub(crate) async fn write_frames<M, S>(
    mut messages: mpsc::Receiver<M>,
    mut sink: SplitSink<WebSocketStream<S>, Message>,
) where
    M: Into<Outgoing>,
    S: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(message) = messages.recv().await {
        let message = match message.into() {
            Outgoing::Text(text) => text,
            Outgoing::Event(event) => match encode_event(&event) {
                Ok(text) => text,
                Err(err) => {
                    tracing::error!(%err, "could not encode an event");
                    continue;
                }
            },
        };
        let sent = if messages.is_empty() {
            sink.send(Message::text(message)).await
        } else {
            sink.feed(Message::text(message)).await
        };
        if let Err(err) = sent {
            tracing::debug!(%err, "websocket write failed; closing");
            return;
        }
    }
    if let Err(err) = sink.close().await {
        tracing::debug!(%err, "websocket close failed");
    }
}
