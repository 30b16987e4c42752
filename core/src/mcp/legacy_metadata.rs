//! Authorization-server metadata of a 2025-03-26 MCP server, whose authorization server is the
//! MCP server's own origin: such a server serves the metadata at
//! `ORIGIN/.well-known/oauth-authorization-server` yet may name an issuer on another path of
//! that origin (`ORIGIN/oauth`). rmcp refuses the mismatch, as RFC 8414 §3.3 asks of
//! metadata found through an issuer; here it was found through the server the user
//! configured, and the issuer is on that same origin, so Keel accepts it, and only then.

use rmcp::transport::auth::AuthorizationMetadata;

/// The metadata at the MCP server's origin, when its issuer is on that origin; `None`
/// otherwise (nothing to accept, or another origin, which stays refused).
pub(crate) async fn same_origin_metadata(server_url: &str) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(server_url).ok()?;
    let origin = server.origin();
    let document = server
        .join("/.well-known/oauth-authorization-server")
        .ok()?;
    let response = crate::client::http_client()
        .get(document)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let metadata: AuthorizationMetadata = response.json().await.ok()?;
    let issuer = reqwest::Url::parse(metadata.issuer.as_deref()?).ok()?;
    if issuer.origin() != origin {
        tracing::warn!(%issuer, "authorization server metadata names another origin; refused");
        return None;
    }
    tracing::info!(%issuer, "accepting a 2025-03-26 server's same-origin issuer");
    Some(metadata)
}

#[cfg(test)]
mod tests {
    use super::same_origin_metadata;

    /// Serves one metadata document naming `issuer` (`{origin}` replaced by the server's own)
    /// and returns the MCP URL on that origin.
    async fn serving(issuer: &'static str) -> Result<String, Box<dyn std::error::Error>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let origin = format!("http://{}", listener.local_addr()?);
        let document = serde_json::json!({
            "issuer": issuer.replace("{origin}", &origin),
            "authorization_endpoint": format!("{origin}/oauth/authorize"),
            "token_endpoint": format!("{origin}/oauth/token"),
            "response_types_supported": ["code"],
        });
        let app = axum::Router::new().route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let document = document.clone();
                async move { axum::Json(document) }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(format!("{origin}/mcp"))
    }

    #[tokio::test]
    async fn only_an_issuer_on_the_servers_own_origin_is_accepted()
    -> Result<(), Box<dyn std::error::Error>> {
        crate::tls::install_tls_provider();
        let same = serving("{origin}/oauth").await?;
        assert!(same_origin_metadata(&same).await.is_some());
        let other = serving("https://evil.example.com").await?;
        assert!(same_origin_metadata(&other).await.is_none());
        Ok(())
    }
}
