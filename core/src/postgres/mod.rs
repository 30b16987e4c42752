//! What every PostgreSQL-backed store shares: the connection settings as libpq reads them,
//! TLS, a bounded pool, the schema's migrations and the errors they give.

mod conninfo;
mod error;
mod migrations;
mod pool;

pub(crate) use conninfo::{ConnInfo, Lookup};
pub(crate) use error::PostgresError;
pub(crate) use pool::SharedPool;
