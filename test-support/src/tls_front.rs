//! A TLS front for tests: a loopback port that completes TLS handshakes with the given
//! acceptor and relays each connection, in the clear, to a backend.

use crate::{Error, Result};

/// Listens on a loopback port, accepts TLS with `acceptor` and relays each connection to
/// `backend` (`host:port`); returns the port. A client that fails the handshake (refuses the
/// certificate, or lacks one the acceptor wants) is dropped there.
pub async fn tls_front(acceptor: tokio_rustls::TlsAcceptor, backend: String) -> Result<u16> {
    let bind_error = |source| Error::Bind {
        addr: "127.0.0.1:0".to_string(),
        source,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(bind_error)?;
    let port = listener.local_addr().map_err(bind_error)?.port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut client) = acceptor.accept(client).await else {
                    return;
                };
                if let Ok(mut server) = tokio::net::TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    Ok(port)
}
