//! The `--listen` URL: `stdio://` or `ws://IP:PORT`.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use crate::error::ExecServerError;

/// Where a server accepts connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenUrl {
    /// One connection on the process's stdin and stdout.
    Stdio,
    /// Websocket connections on a TCP address; port 0 picks a free port.
    WebSocket(SocketAddr),
}

impl FromStr for ListenUrl {
    type Err = ExecServerError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| ExecServerError::InvalidListenUrl {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        if url == "stdio://" || url == "stdio" {
            return Ok(Self::Stdio);
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(invalid("missing scheme"));
        };
        match scheme {
            "stdio" => Err(invalid("`stdio://` takes no address")),
            "ws" => {
                let address = rest.strip_suffix('/').unwrap_or(rest);
                if address.is_empty() {
                    return Err(invalid("missing IP:PORT after `ws://`"));
                }
                address.parse().map(Self::WebSocket).map_err(|_| {
                    invalid("the address must be an IP literal and a port, e.g. ws://127.0.0.1:0")
                })
            }
            "wss" => Err(invalid("TLS (`wss://`) is not supported")),
            _ => Err(invalid(&format!("unsupported scheme `{scheme}`"))),
        }
    }
}

impl fmt::Display for ListenUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio => f.write_str("stdio://"),
            Self::WebSocket(address) => write!(f, "ws://{address}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_the_supported_forms() {
        assert_eq!("stdio://".parse::<ListenUrl>().unwrap(), ListenUrl::Stdio);
        assert_eq!(
            "ws://127.0.0.1:0".parse::<ListenUrl>().unwrap(),
            ListenUrl::WebSocket("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(
            "ws://[::1]:4000/".parse::<ListenUrl>().unwrap(),
            ListenUrl::WebSocket("[::1]:4000".parse().unwrap())
        );
    }

    #[test]
    fn rejects_bad_urls_with_the_expected_form() {
        for url in [
            "http://127.0.0.1:1",
            "ws://localhost:1",
            "ws://127.0.0.1",
            "127.0.0.1:1",
            "ws://",
        ] {
            let message = url.parse::<ListenUrl>().unwrap_err().to_string();
            assert!(
                message.contains("expected `stdio://` or `ws://IP:PORT`"),
                "{message}"
            );
            assert!(message.contains(url), "{message}");
        }
    }
}
