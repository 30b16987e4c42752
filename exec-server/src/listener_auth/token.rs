//! Capability tokens: a shared secret string the client presents as a bearer token.

use std::path::PathBuf;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ListenerAuthError;

/// Where the expected capability token comes from.
#[derive(Debug, Clone)]
pub(crate) enum CapabilityToken {
    /// A file holding the token, read again on every handshake so that a rotated token takes
    /// effect without a restart.
    File(PathBuf),
    /// The SHA-256 digest of the token, so the server never holds the token itself.
    Digest([u8; 32]),
}

impl CapabilityToken {
    /// Checks that the token source can be used now, so that a typo fails at start-up.
    pub(crate) fn validate(&self) -> Result<(), ListenerAuthError> {
        match self {
            Self::File(path) => read_token_file(path).map(|_| ()),
            Self::Digest(_) => Ok(()),
        }
    }

    /// Whether `presented` is the expected token, compared in constant time (on digests, so
    /// neither the length nor a prefix of the token leaks through timing).
    pub(crate) fn accepts(&self, presented: &str) -> Result<bool, ListenerAuthError> {
        let expected: [u8; 32] = match self {
            Self::File(path) => sha256(read_token_file(path)?.as_bytes()),
            Self::Digest(digest) => *digest,
        };
        Ok(bool::from(sha256(presented.as_bytes()).ct_eq(&expected)))
    }
}

/// Parses a `--ws-token-sha256` value: 64 hex digits.
pub(crate) fn parse_digest(hex: &str) -> Result<[u8; 32], ListenerAuthError> {
    let invalid = || ListenerAuthError::BadDigest(hex.to_string());
    let hex = hex.trim();
    if hex.len() != 64 {
        return Err(invalid());
    }
    let mut digest = [0u8; 32];
    for (index, byte) in digest.iter_mut().enumerate() {
        let pair = hex.get(index * 2..index * 2 + 2).ok_or_else(invalid)?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| invalid())?;
    }
    Ok(digest)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The token in `path`, without surrounding whitespace (a trailing newline from `echo` is
/// not part of it).
fn read_token_file(path: &PathBuf) -> Result<String, ListenerAuthError> {
    let text = std::fs::read_to_string(path).map_err(|source| ListenerAuthError::Unreadable {
        what: "capability-token file",
        path: path.clone(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(ListenerAuthError::EmptyToken(path.clone()));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_64_hex_digits() {
        let digest = parse_digest(&"ab".repeat(32)).unwrap();
        assert_eq!(digest, [0xab; 32]);
        for bad in ["abc", &"zz".repeat(32), &"ab".repeat(33)] {
            assert!(matches!(
                parse_digest(bad),
                Err(ListenerAuthError::BadDigest(_))
            ));
        }
    }

    #[test]
    fn the_digest_form_accepts_only_its_token() {
        let token = CapabilityToken::Digest(sha256(b"right"));
        assert!(token.accepts("right").unwrap());
        assert!(!token.accepts("wrong").unwrap());
        assert!(!token.accepts("").unwrap());
    }

    #[test]
    fn the_file_is_read_on_every_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").unwrap();
        let token = CapabilityToken::File(path.clone());
        assert!(token.accepts("first").unwrap());
        std::fs::write(&path, "second").unwrap();
        assert!(!token.accepts("first").unwrap());
        assert!(token.accepts("second").unwrap());
        std::fs::write(&path, "  \n").unwrap();
        assert!(matches!(
            token.accepts("second"),
            Err(ListenerAuthError::EmptyToken(_))
        ));
    }
}
