//! A bounded pool of connections to one database, its schema brought up to date on connect.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{ConnInfo, PostgresError, migrations};

/// Connections one process keeps open to one database.
const POOL_SIZE: usize = 8;

/// TLS as the model's HTTPS has it: rustls, certificates checked against the system's roots.
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, PostgresError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let tls_error = |err: rustls::Error| PostgresError::BadConnInfo(format!("TLS setup: {err}"));
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_platform_verifier()
        .map_err(tls_error)?
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Pooled connections to one database whose schema is Keel's newest.
#[derive(Clone)]
pub(crate) struct SharedPool {
    pool: Pool,
    /// The database as shown in messages (no password).
    shown: String,
    /// The bound on getting a connection.
    timeout: Duration,
    /// How the database is reached, for connections kept outside the pool.
    info: ConnInfo,
}

impl SharedPool {
    /// Connects to the database `info` names and applies the migrations it has not seen.
    pub(crate) async fn connect(info: &ConnInfo) -> Result<Self, PostgresError> {
        let shown = info.display();
        let config = info.to_config()?;
        let manager = Manager::from_config(
            config,
            tls()?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        // Every step of getting a connection is bounded: a server that accepts and never
        // answers (or a TLS or authentication step that stalls) ends in an error naming the
        // timeout, as `psql` does, instead of a wait without end.
        let timeout = info.connect_timeout()?;
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(timeout))
            .wait_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|err| PostgresError::BadConnInfo(err.to_string()))?;
        let shared = Self {
            pool,
            shown,
            timeout,
            info: info.clone(),
        };
        let mut client = shared.client().await?;
        migrations::apply(&mut client)
            .await
            .map_err(|err| shared.named(err))?;
        Ok(shared)
    }

    /// The database as shown in messages (no password).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Listens on `channel` on a connection of its own (outside the pool), handing each
    /// notification's payload to `deliver`, until the connection fails (the error says why);
    /// `ready` is called once the server has confirmed the `LISTEN`.
    pub(crate) async fn listen(
        &self,
        channel: &str,
        ready: impl FnOnce(),
        mut deliver: impl FnMut(String),
    ) -> Result<(), PostgresError> {
        use futures::StreamExt;
        let mut config = self.info.to_config()?;
        // Idle for hours between changes: keepalives notice a connection that died silently
        // (a NAT's timeout, a host gone), so listening starts again instead of hearing nothing.
        config
            .keepalives(true)
            .keepalives_idle(std::time::Duration::from_secs(30))
            .keepalives_interval(std::time::Duration::from_secs(10))
            .keepalives_retries(3);
        let (client, mut connection) = tokio::time::timeout(self.timeout, config.connect(tls()?))
            .await
            .map_err(|_| PostgresError::Named {
                store: self.shown.clone(),
                cause: format!("no connection within {}s", self.timeout.as_secs()),
            })?
            .map_err(|err| self.named(err.into()))?;
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx)).boxed();
        // The connection is driven while LISTEN runs: its answer arrives through it.
        let statement = format!("LISTEN {channel}");
        {
            let listening = client.batch_execute(&statement);
            tokio::pin!(listening);
            loop {
                tokio::select! {
                    done = &mut listening => {
                        done.map_err(|err| self.named(err.into()))?;
                        break;
                    }
                    message = messages.next() => match message {
                        Some(Ok(_)) => {}
                        Some(Err(err)) => return Err(self.named(err.into())),
                        None => return Err(self.named(PostgresError::Server("the connection closed".into()))),
                    },
                }
            }
        }
        ready();
        while let Some(message) = messages.next().await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(note)) => {
                    deliver(note.payload().to_string());
                }
                Ok(_) => {}
                Err(err) => return Err(self.named(err.into())),
            }
        }
        drop(client);
        Err(self.named(PostgresError::Server("the connection closed".into())))
    }

    /// A failure with the database named.
    pub(crate) fn named(&self, err: PostgresError) -> PostgresError {
        match err {
            PostgresError::Server(cause) => PostgresError::Named {
                store: self.shown.clone(),
                cause,
            },
            other => other,
        }
    }

    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, PostgresError> {
        self.pool.get().await.map_err(|err| {
            let cause = match err {
                // The server's own words (a wrong password, a missing database) say most.
                deadpool_postgres::PoolError::Backend(err) => PostgresError::from(err).to_string(),
                deadpool_postgres::PoolError::Timeout(_) => format!(
                    "no connection within {}s (connect_timeout: TCP, TLS, startup and \
                     authentication together)",
                    self.timeout.as_secs()
                ),
                other => other.to_string(),
            };
            PostgresError::Named {
                store: self.shown.clone(),
                cause,
            }
        })
    }

    /// Runs one statement, returning the rows.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|err| self.named(err.into()))?;
        client
            .query(&statement, params)
            .await
            .map_err(|err| self.named(err.into()))
    }

    /// Runs one statement, returning the rows it changed.
    pub(crate) async fn execute(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, PostgresError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|err| self.named(err.into()))?;
        client
            .execute(&statement, params)
            .await
            .map_err(|err| self.named(err.into()))
    }
}
