//! The TLS crypto provider every HTTP client in the process uses.
//!
//! Keel builds reqwest without a default provider (the default would compile aws-lc from C),
//! so `ring` is installed as the process default before the first client is built. A program
//! embedding Keel that installed its own provider first keeps it.

use std::sync::Once;

/// Installs `ring` as the process's rustls provider unless one is installed already; call it
/// before building a `reqwest::Client` outside Keel's own helpers.
pub fn install_tls_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none()
            && rustls::crypto::ring::default_provider()
                .install_default()
                .is_err()
        {
            tracing::debug!("another TLS provider was installed first; keeping it");
        }
    });
}
