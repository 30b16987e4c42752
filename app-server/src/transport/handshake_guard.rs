//! Listeners whose connections must finish their handshake in time: at most
//! [`HANDSHAKE_DEADLINE`] from accept to an accepted websocket upgrade, and no more than
//! [`keel_exec_server::listener_auth::MAX_PENDING_HANDSHAKES`] at once (a new one closes the
//! oldest waiting one). A flood of idle connections without a token so cannot use up the
//! process's descriptors and lock the token holder out.
//!
//! The accepted stream is wrapped ([`GuardedIo`]); once the upgrade handler has checked the
//! token, it marks the connection's [`HandshakeTicket`] as passed and the stream stops
//! checking.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use keel_exec_server::listener_auth::{HANDSHAKE_DEADLINE, HandshakeSlot, PendingHandshakes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tokio_util::sync::WaitForCancellationFutureOwned;

/// `inner`, with every accepted connection held to the handshake rules.
pub(crate) struct GuardedListener<L> {
    inner: L,
    pending: PendingHandshakes,
}

impl<L> GuardedListener<L> {
    pub(crate) fn new(inner: L) -> Self {
        Self {
            inner,
            pending: PendingHandshakes::default(),
        }
    }
}

impl<L: Listener> Listener for GuardedListener<L> {
    type Io = GuardedIo<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.inner.accept().await;
        let slot = self.pending.admit();
        (GuardedIo::new(io, slot), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection's standing in its handshake, handed to the request handler as connect info.
#[derive(Debug, Clone)]
pub(crate) struct HandshakeTicket(Arc<Mutex<Option<HandshakeSlot>>>);

impl HandshakeTicket {
    /// The client showed what the listener requires: the connection may stay.
    pub(crate) fn passed(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    fn pending(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

impl<L: Listener> Connected<IncomingStream<'_, GuardedListener<L>>> for HandshakeTicket {
    fn connect_info(stream: IncomingStream<'_, GuardedListener<L>>) -> Self {
        stream.io().ticket.clone()
    }
}

/// An accepted stream that fails once its handshake runs out of time or room.
pub(crate) struct GuardedIo<I> {
    inner: I,
    ticket: HandshakeTicket,
    deadline: Pin<Box<Sleep>>,
    evicted: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<I> GuardedIo<I> {
    fn new(inner: I, slot: HandshakeSlot) -> Self {
        let evicted = Box::pin(slot.evicted().clone().cancelled_owned());
        Self {
            inner,
            ticket: HandshakeTicket(Arc::new(Mutex::new(Some(slot)))),
            deadline: Box::pin(tokio::time::sleep(HANDSHAKE_DEADLINE)),
            evicted,
        }
    }

    /// An error once a connection still in its handshake must close; registers for the
    /// wake-up that says so otherwise.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if !self.ticket.pending() {
            return Ok(());
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the handshake did not finish in time",
            ));
        }
        if self.evicted.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "too many connections in their handshake",
            ));
        }
        Ok(())
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for GuardedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Err(err) = this.check(cx) {
            return Poll::Ready(Err(err));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for GuardedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
