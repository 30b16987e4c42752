//! Why a server refuses to start with the authentication flags it was given.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a server refuses to start with the authentication flags it was given.
#[derive(Debug, thiserror::Error)]
pub enum ListenerAuthError {
    /// A non-loopback TCP listener without `--ws-auth`.
    #[error(
        "refusing to listen on {0} without authentication: anyone who can reach it could run \
         commands; pass `--ws-auth capability-token` (with `--ws-token-file` or \
         `--ws-token-sha256`) or `--ws-auth signed-bearer-token` (with \
         `--ws-shared-secret-file`), or listen on a loopback address"
    )]
    NonLoopbackWithoutAuth(SocketAddr),
    /// Token or JWT flags without `--ws-auth`.
    #[error(
        "websocket auth flags need `--ws-auth capability-token` or `--ws-auth signed-bearer-token`"
    )]
    FlagsWithoutMode,
    /// `--ws-auth` on a stdio server, which has no handshake to check.
    #[error("`--ws-auth` needs a `ws://` or `unix://` listener; stdio has no handshake to check")]
    AuthOnStdio,
    /// `--ws-auth capability-token` without a token source.
    #[error(
        "`--ws-auth capability-token` needs exactly one of `--ws-token-file` and `--ws-token-sha256`"
    )]
    NoTokenSource,
    /// `--ws-auth signed-bearer-token` without its secret.
    #[error("`--ws-auth signed-bearer-token` needs `--ws-shared-secret-file`")]
    NoSharedSecret,
    /// A flag of the other mode.
    #[error("`{flag}` does not apply to `--ws-auth {mode}`")]
    FlagOfOtherMode {
        /// The flag given.
        flag: &'static str,
        /// The mode chosen.
        mode: &'static str,
    },
    /// `--ws-token-sha256` that is not 64 hex digits.
    #[error("`--ws-token-sha256` must be a 64-digit hex SHA-256 digest, got `{0}`")]
    BadDigest(String),
    /// A token or secret file that cannot be read.
    #[error("cannot read the {what} {}: {source}", path.display())]
    Unreadable {
        /// Which file.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A token file holding nothing but whitespace.
    #[error("the capability-token file {} is empty", .0.display())]
    EmptyToken(PathBuf),
    /// A shared secret too short to sign safely.
    #[error(
        "the shared-secret file {} holds {len} bytes; at least {min} are required",
        path.display()
    )]
    ShortSecret {
        /// Its path.
        path: PathBuf,
        /// Its length.
        len: usize,
        /// The shortest length accepted.
        min: usize,
    },
}
