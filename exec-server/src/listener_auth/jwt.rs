//! Signed bearer tokens: HS256 JWTs minted elsewhere with a secret the server shares.

use std::path::PathBuf;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::ListenerAuthError;

/// The shortest shared secret accepted: an HMAC-SHA256 key shorter than its output is weak.
pub(crate) const MIN_SECRET_BYTES: usize = 32;

/// How a JWT is checked: its signature against the shared secret, then its claims.
#[derive(Debug, Clone)]
pub(crate) struct SignedBearer {
    /// Read again on every handshake, so a rotated secret takes effect without a restart.
    pub(crate) secret_file: PathBuf,
    /// The `iss` the token must carry, when set.
    pub(crate) issuer: Option<String>,
    /// An `aud` the token must carry, when set.
    pub(crate) audience: Option<String>,
    /// Tolerance for `exp` and `nbf`, for clocks that disagree.
    pub(crate) max_clock_skew: Duration,
}

/// Why a presented JWT was refused; the text is what the client reads in the 401 body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JwtRefusal {
    /// Malformed, wrongly signed, another algorithm, or no `exp` claim.
    #[error("invalid bearer token (an HS256 JWT with an `exp` claim is expected)")]
    Invalid,
    /// `exp` is in the past (beyond the allowed skew).
    #[error("the bearer token has expired")]
    Expired,
    /// `nbf` is in the future (beyond the allowed skew).
    #[error("the bearer token is not valid yet")]
    NotYetValid,
    /// `iss` differs from `--ws-issuer`.
    #[error("the bearer token's issuer is not accepted")]
    WrongIssuer,
    /// `aud` does not name `--ws-audience`.
    #[error("the bearer token's audience is not accepted")]
    WrongAudience,
}

impl SignedBearer {
    /// Checks that the secret can be used now, so that a typo fails at start-up.
    pub(crate) fn validate(&self) -> Result<(), ListenerAuthError> {
        self.secret().map(|_| ())
    }

    /// Checks `token`; `Ok(Err(_))` is a refusal, `Err(_)` means the secret is unusable.
    pub(crate) fn check(&self, token: &str) -> Result<Result<(), JwtRefusal>, ListenerAuthError> {
        let secret = self.secret()?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = self.max_clock_skew.as_secs();
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        if self.issuer.is_some() {
            required.push("iss");
        }
        if self.audience.is_some() {
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        match &self.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        let key = DecodingKey::from_secret(&secret);
        let outcome =
            jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation).map(|_| ());
        Ok(outcome.map_err(|err| match err.kind() {
            ErrorKind::ExpiredSignature => JwtRefusal::Expired,
            ErrorKind::ImmatureSignature => JwtRefusal::NotYetValid,
            ErrorKind::InvalidIssuer => JwtRefusal::WrongIssuer,
            ErrorKind::InvalidAudience => JwtRefusal::WrongAudience,
            ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => JwtRefusal::WrongIssuer,
            ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => JwtRefusal::WrongAudience,
            _ => JwtRefusal::Invalid,
        }))
    }

    fn secret(&self) -> Result<Vec<u8>, ListenerAuthError> {
        let bytes =
            std::fs::read(&self.secret_file).map_err(|source| ListenerAuthError::Unreadable {
                what: "shared-secret file",
                path: self.secret_file.clone(),
                source,
            })?;
        // A trailing newline from an editor or `echo` is not part of the secret.
        let trimmed = bytes.trim_ascii_end();
        if trimmed.len() < MIN_SECRET_BYTES {
            return Err(ListenerAuthError::ShortSecret {
                path: self.secret_file.clone(),
                len: trimmed.len(),
                min: MIN_SECRET_BYTES,
            });
        }
        Ok(trimmed.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn bearer(dir: &tempfile::TempDir) -> SignedBearer {
        let secret_file = dir.path().join("secret");
        std::fs::write(&secret_file, SECRET).unwrap();
        SignedBearer {
            secret_file,
            issuer: Some("issuer".into()),
            audience: Some("keel".into()),
            max_clock_skew: Duration::from_secs(30),
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn mint(claims: serde_json::Value, secret: &[u8]) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    #[test]
    fn claims_are_checked_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let bearer = bearer(&dir);
        let exp = now() + 300;
        let cases = [
            (json!({"iss": "issuer", "aud": "keel", "exp": exp}), Ok(())),
            (
                json!({"iss": "issuer", "aud": ["other", "keel"], "exp": exp}),
                Ok(()),
            ),
            // Within the allowed clock skew.
            (
                json!({"iss": "issuer", "aud": "keel", "exp": now() - 10}),
                Ok(()),
            ),
            (
                json!({"iss": "issuer", "aud": "keel", "exp": now() - 300}),
                Err(JwtRefusal::Expired),
            ),
            (
                json!({"iss": "issuer", "aud": "keel", "exp": exp, "nbf": now() + 200}),
                Err(JwtRefusal::NotYetValid),
            ),
            (
                json!({"iss": "other", "aud": "keel", "exp": exp}),
                Err(JwtRefusal::WrongIssuer),
            ),
            (
                json!({"aud": "keel", "exp": exp}),
                Err(JwtRefusal::WrongIssuer),
            ),
            (
                json!({"iss": "issuer", "aud": "other", "exp": exp}),
                Err(JwtRefusal::WrongAudience),
            ),
            (
                json!({"iss": "issuer", "exp": exp}),
                Err(JwtRefusal::WrongAudience),
            ),
            (
                json!({"iss": "issuer", "aud": "keel"}),
                Err(JwtRefusal::Invalid),
            ),
        ];
        for (claims, expected) in cases {
            let token = mint(claims.clone(), SECRET);
            assert_eq!(bearer.check(&token).unwrap(), expected, "{claims}");
        }
    }

    #[test]
    fn a_token_signed_with_another_secret_or_unsigned_is_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let bearer = bearer(&dir);
        let claims = json!({"iss": "issuer", "aud": "keel", "exp": now() + 300});
        let forged = mint(claims, b"another-secret-another-secret-!!");
        assert_eq!(bearer.check(&forged).unwrap(), Err(JwtRefusal::Invalid));
        // `alg: none` with the signature stripped.
        let header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
        let payload = forged.split('.').nth(1).unwrap();
        let unsigned = format!("{header}.{payload}.");
        assert_eq!(bearer.check(&unsigned).unwrap(), Err(JwtRefusal::Invalid));
        assert_eq!(bearer.check("not a jwt").unwrap(), Err(JwtRefusal::Invalid));
    }

    #[test]
    fn a_short_secret_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bearer = bearer(&dir);
        std::fs::write(&bearer.secret_file, "short\n").unwrap();
        assert!(matches!(
            bearer.validate(),
            Err(ListenerAuthError::ShortSecret { len: 5, .. })
        ));
    }
}
