//! Who may open a websocket connection to a Keel server: a bearer token (a capability token
//! or a signed JWT) checked on the HTTP upgrade, a `Host` check on loopback listeners, and
//! no browsers. Shared by the exec-server and the app-server, with Codex 0.169's flag names.
//!
//! Servers only validate tokens; clients are handed theirs and never mint one.

mod error;
mod handshakes;
mod host;
mod jwt;
mod token;

pub use handshakes::{
    HANDSHAKE_DEADLINE, HandshakeSlot, MAX_PENDING_HANDSHAKES, PendingHandshakes,
};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use http::{HeaderMap, StatusCode, header};

pub use error::ListenerAuthError;
use host::HostPolicy;
use jwt::SignedBearer;
use token::CapabilityToken;

/// The authentication modes of `--ws-auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WsAuthMode {
    /// A secret string, given to the server as a file or as its SHA-256 digest.
    CapabilityToken,
    /// An HS256 JWT signed with a secret the server reads from a file.
    SignedBearerToken,
}

/// Flags that configure listener authentication; flatten them into a server's arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ListenerAuthArgs {
    /// Require a bearer token from every websocket client (loopback included). Required to
    /// listen on a non-loopback address.
    #[arg(long = "ws-auth", value_name = "MODE")]
    pub mode: Option<WsAuthMode>,

    /// File holding the capability token; read on every connection, so replacing it rotates
    /// the token without a restart.
    #[arg(long = "ws-token-file", value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// Hex SHA-256 digest of the capability token (instead of `--ws-token-file`).
    #[arg(long = "ws-token-sha256", value_name = "HEX")]
    pub token_sha256: Option<String>,

    /// File holding the HS256 secret (at least 32 bytes) that signs bearer JWTs; read on
    /// every connection.
    #[arg(long = "ws-shared-secret-file", value_name = "PATH")]
    pub shared_secret_file: Option<PathBuf>,

    /// The `iss` claim a bearer JWT must carry.
    #[arg(long = "ws-issuer", value_name = "ISSUER")]
    pub issuer: Option<String>,

    /// An `aud` value a bearer JWT must carry.
    #[arg(long = "ws-audience", value_name = "AUDIENCE")]
    pub audience: Option<String>,

    /// Clock skew tolerated when checking a JWT's `exp` and `nbf`.
    #[arg(
        long = "ws-max-clock-skew-seconds",
        value_name = "SECONDS",
        default_value_t = 30
    )]
    pub max_clock_skew_seconds: u64,

    /// A `Host` name (without port) a loopback listener accepts besides loopback names, for
    /// a reverse proxy that forwards its public host. Repeatable.
    #[arg(long = "ws-allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
}

impl ListenerAuthArgs {
    fn names_a_credential(&self) -> bool {
        self.token_file.is_some()
            || self.token_sha256.is_some()
            || self.shared_secret_file.is_some()
            || self.issuer.is_some()
            || self.audience.is_some()
    }
}

/// What a server listens on, as far as authentication is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerKind {
    /// stdin/stdout: the peer is the process that started the server.
    Stdio,
    /// A unix socket, reachable by whoever the file mode lets in.
    UnixSocket,
    /// A TCP address; anything but a loopback address is reachable from the network.
    Tcp(SocketAddr),
}

/// A refused HTTP request: the status and the plain-text body the client reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 401 for a missing or wrong token, 403 for a browser or a foreign `Host`, 500 when the
    /// server cannot read its own token.
    pub status: StatusCode,
    /// Why, in one line.
    pub message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone)]
enum Credential {
    Token(CapabilityToken),
    Jwt(SignedBearer),
}

/// The checks one listener applies to each HTTP request before anything else runs.
#[derive(Debug, Clone)]
pub struct ListenerGuard {
    credential: Option<Credential>,
    hosts: HostPolicy,
}

impl ListenerGuard {
    /// Builds the guard for `kind` from the flags, refusing combinations that would leave the
    /// listener open or could never work.
    pub fn new(args: &ListenerAuthArgs, kind: ListenerKind) -> Result<Self, ListenerAuthError> {
        let credential = credential(args)?;
        match kind {
            ListenerKind::Stdio if credential.is_some() => {
                return Err(ListenerAuthError::AuthOnStdio);
            }
            ListenerKind::Tcp(address) if credential.is_none() && !address.ip().is_loopback() => {
                return Err(ListenerAuthError::NonLoopbackWithoutAuth(address));
            }
            _ => {}
        }
        if let Some(credential) = &credential {
            match credential {
                Credential::Token(token) => {
                    token.validate()?;
                    if let CapabilityToken::File(path) = token {
                        warn_if_others_can_read(path);
                    }
                }
                Credential::Jwt(bearer) => {
                    bearer.validate()?;
                    warn_if_others_can_read(&bearer.secret_file);
                }
            }
        }
        let loopback_only =
            matches!(kind, ListenerKind::Tcp(address) if address.ip().is_loopback());
        Ok(Self {
            credential,
            hosts: HostPolicy {
                loopback_only,
                allowed: args
                    .allowed_hosts
                    .iter()
                    .map(|host| host.trim().to_ascii_lowercase())
                    .collect(),
            },
        })
    }

    /// A guard that lets every non-browser request through: for servers embedded in tests
    /// or behind their own gate.
    pub fn open() -> Self {
        Self {
            credential: None,
            hosts: HostPolicy::default(),
        }
    }

    /// Whether clients must present a token.
    pub fn requires_token(&self) -> bool {
        self.credential.is_some()
    }

    /// One line for the start-up banner: how clients are checked.
    pub fn describe(&self) -> &'static str {
        match self.credential {
            Some(Credential::Token(_)) => "clients must send a capability token (Bearer)",
            Some(Credential::Jwt(_)) => "clients must send a signed JWT (Bearer)",
            None => "no authentication (loopback only)",
        }
    }

    /// The check for plain HTTP endpoints such as `/readyz`: the `Host` header only.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .map(|value| value.to_str().unwrap_or("<not text>"));
        if self.hosts.accepts(host) {
            return Ok(());
        }
        tracing::warn!(?host, "refusing a request for a foreign Host");
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "Host `{}` is not a loopback name; a proxy that forwards its own host must be \
                 allowed with --ws-allowed-host",
                host.unwrap_or_default()
            ),
        ))
    }

    /// The check for a plain HTTP API that browsers may legitimately call (MCP's Streamable
    /// HTTP): an `Origin`, when sent, must name a host the listener accepts (so a page whose
    /// DNS name was rebound to loopback is refused), then the `Host` and bearer checks of
    /// [`Self::check_upgrade`].
    pub fn check_http_request(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let authority = origin.to_str().ok().and_then(origin_authority);
            if !authority.is_some_and(|authority| self.hosts.accepts(Some(authority))) {
                tracing::warn!(?origin, "refusing a request from a foreign Origin");
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "Origin `{}` is not allowed: only loopback origins (and hosts allowed \
                         with --ws-allowed-host) may call this server",
                        origin.to_str().unwrap_or("<not text>")
                    ),
                ));
            }
        }
        self.check_host(headers)?;
        self.check_bearer(headers)
    }

    /// The check for a websocket upgrade: no browser (`Origin`), an accepted `Host`, and the
    /// bearer token when one is required.
    pub fn check_upgrade(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            tracing::warn!(?origin, "refusing a connection with an Origin header");
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "browser connections (with an Origin header) are refused",
            ));
        }
        self.check_host(headers)?;
        self.check_bearer(headers)
    }

    /// The bearer token, when the listener requires one.
    fn check_bearer(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(credential) = &self.credential else {
            return Ok(());
        };
        let token = bearer_token(headers)?;
        let verdict = match credential {
            Credential::Token(expected) => expected.accepts(token).map(|accepted| {
                if accepted {
                    Ok(())
                } else {
                    Err("invalid bearer token".to_string())
                }
            }),
            Credential::Jwt(bearer) => bearer
                .check(token)
                .map(|verdict| verdict.map_err(|refusal| refusal.to_string())),
        };
        match verdict {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => {
                tracing::warn!(%reason, "refusing a connection");
                Err(Refusal::new(StatusCode::UNAUTHORIZED, reason))
            }
            Err(err) => {
                tracing::error!("cannot check a client's token: {err}");
                Err(Refusal::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server cannot check tokens right now (see its log)",
                ))
            }
        }
    }
}

/// Says so at start when a token or secret file can be read by other users: they could
/// connect as the token holder. Only a warning, as in Codex, so working setups still start.
fn warn_if_others_can_read(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(metadata) = std::fs::metadata(path) else {
        return;
    };
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o044 != 0 {
        tracing::warn!(
            "{} is readable by other users (mode {mode:03o}): anyone who can read it can connect; \
             make it private with `chmod 600 {}`",
            path.display(),
            path.display()
        );
    }
}

/// The `host[:port]` of an `Origin` value such as `http://localhost:8080`; `None` for
/// `null` or anything without a scheme.
fn origin_authority(origin: &str) -> Option<&str> {
    let (_scheme, rest) = origin.trim().split_once("://")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    (!authority.is_empty()).then_some(authority)
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer_token(headers: &HeaderMap) -> Result<&str, Refusal> {
    let unauthorized = |message: &str| Refusal::new(StatusCode::UNAUTHORIZED, message);
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing bearer token (send `Authorization: Bearer TOKEN`)"))?;
    let value = value
        .to_str()
        .map_err(|_| unauthorized("invalid Authorization header"))?;
    let (scheme, token) = value
        .trim()
        .split_once(' ')
        .ok_or_else(|| unauthorized("invalid Authorization header (expected `Bearer TOKEN`)"))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(unauthorized(
            "invalid Authorization header (expected `Bearer TOKEN`)",
        ));
    }
    Ok(token.trim())
}

fn credential(args: &ListenerAuthArgs) -> Result<Option<Credential>, ListenerAuthError> {
    let other = |flag, mode| ListenerAuthError::FlagOfOtherMode { flag, mode };
    match args.mode {
        None if args.names_a_credential() => Err(ListenerAuthError::FlagsWithoutMode),
        None => Ok(None),
        Some(WsAuthMode::CapabilityToken) => {
            let mode = "capability-token";
            if args.shared_secret_file.is_some() {
                return Err(other("--ws-shared-secret-file", mode));
            }
            if args.issuer.is_some() {
                return Err(other("--ws-issuer", mode));
            }
            if args.audience.is_some() {
                return Err(other("--ws-audience", mode));
            }
            let token = match (&args.token_file, &args.token_sha256) {
                (Some(path), None) => CapabilityToken::File(path.clone()),
                (None, Some(hex)) => CapabilityToken::Digest(token::parse_digest(hex)?),
                _ => return Err(ListenerAuthError::NoTokenSource),
            };
            Ok(Some(Credential::Token(token)))
        }
        Some(WsAuthMode::SignedBearerToken) => {
            let mode = "signed-bearer-token";
            if args.token_file.is_some() {
                return Err(other("--ws-token-file", mode));
            }
            if args.token_sha256.is_some() {
                return Err(other("--ws-token-sha256", mode));
            }
            let secret_file = args
                .shared_secret_file
                .clone()
                .ok_or(ListenerAuthError::NoSharedSecret)?;
            Ok(Some(Credential::Jwt(SignedBearer {
                secret_file,
                issuer: args.issuer.clone(),
                audience: args.audience.clone(),
                max_clock_skew: Duration::from_secs(args.max_clock_skew_seconds),
            })))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn tcp(address: &str) -> ListenerKind {
        ListenerKind::Tcp(address.parse().unwrap())
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn http_requests_from_loopback_origins_pass_and_rebound_ones_do_not() {
        let guard = ListenerGuard::new(&ListenerAuthArgs::default(), tcp("127.0.0.1:0")).unwrap();
        let local = headers(&[
            (header::HOST, "127.0.0.1:4000"),
            (header::ORIGIN, "http://localhost:4000"),
        ]);
        assert_eq!(guard.check_http_request(&local), Ok(()));
        for origin in ["http://evil.example.com", "null", "evil"] {
            let rebound = headers(&[(header::HOST, "127.0.0.1:4000"), (header::ORIGIN, origin)]);
            let refusal = guard.check_http_request(&rebound).unwrap_err();
            assert_eq!(refusal.status, StatusCode::FORBIDDEN, "{origin}");
            assert!(refusal.message.contains("Origin"), "{}", refusal.message);
        }
        let foreign_host = headers(&[(header::HOST, "evil.example.com")]);
        assert_eq!(
            guard.check_http_request(&foreign_host).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn an_open_non_loopback_listener_is_refused() {
        let args = ListenerAuthArgs::default();
        assert!(matches!(
            ListenerGuard::new(&args, tcp("0.0.0.0:0")),
            Err(ListenerAuthError::NonLoopbackWithoutAuth(_))
        ));
        assert!(ListenerGuard::new(&args, tcp("127.0.0.1:0")).is_ok());
        assert!(ListenerGuard::new(&args, ListenerKind::UnixSocket).is_ok());
    }

    #[test]
    fn flag_mistakes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "t").unwrap();
        let cases = [
            (
                ListenerAuthArgs {
                    token_file: Some(token_file.clone()),
                    ..Default::default()
                },
                "need `--ws-auth",
            ),
            (
                ListenerAuthArgs {
                    mode: Some(WsAuthMode::CapabilityToken),
                    ..Default::default()
                },
                "exactly one of",
            ),
            (
                ListenerAuthArgs {
                    mode: Some(WsAuthMode::SignedBearerToken),
                    ..Default::default()
                },
                "--ws-shared-secret-file",
            ),
            (
                ListenerAuthArgs {
                    mode: Some(WsAuthMode::CapabilityToken),
                    token_file: Some(dir.path().join("missing")),
                    ..Default::default()
                },
                "cannot read the capability-token file",
            ),
            (
                ListenerAuthArgs {
                    mode: Some(WsAuthMode::CapabilityToken),
                    token_file: Some(token_file.clone()),
                    audience: Some("a".into()),
                    ..Default::default()
                },
                "`--ws-audience` does not apply",
            ),
        ];
        for (args, expected) in cases {
            let message = ListenerGuard::new(&args, tcp("127.0.0.1:0"))
                .unwrap_err()
                .to_string();
            assert!(message.contains(expected), "{message}");
        }
        let stdio = ListenerAuthArgs {
            mode: Some(WsAuthMode::CapabilityToken),
            token_file: Some(token_file),
            ..Default::default()
        };
        assert!(matches!(
            ListenerGuard::new(&stdio, ListenerKind::Stdio),
            Err(ListenerAuthError::AuthOnStdio)
        ));
    }

    #[test]
    fn the_upgrade_needs_the_bearer_token() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "s3cret\n").unwrap();
        let guard = ListenerGuard::new(
            &ListenerAuthArgs {
                mode: Some(WsAuthMode::CapabilityToken),
                token_file: Some(token_file),
                ..Default::default()
            },
            tcp("127.0.0.1:0"),
        )
        .unwrap();
        let status = |pairs: &[(header::HeaderName, &str)]| {
            guard
                .check_upgrade(&headers(pairs))
                .err()
                .map(|refusal| refusal.status)
        };
        assert_eq!(status(&[]), Some(StatusCode::UNAUTHORIZED));
        assert_eq!(
            status(&[(header::AUTHORIZATION, "Bearer wrong")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(&[(header::AUTHORIZATION, "s3cret")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(status(&[(header::AUTHORIZATION, "Bearer s3cret")]), None);
        assert_eq!(status(&[(header::AUTHORIZATION, "bearer s3cret")]), None);
        assert_eq!(
            status(&[
                (header::AUTHORIZATION, "Bearer s3cret"),
                (header::ORIGIN, "http://localhost")
            ]),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            status(&[
                (header::AUTHORIZATION, "Bearer s3cret"),
                (header::HOST, "evil.example:80")
            ]),
            Some(StatusCode::FORBIDDEN)
        );
    }
}
