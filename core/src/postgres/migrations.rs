//! The shared database's schema, versioned: each file under `core/migrations/postgres/` is
//! applied once, in order, and recorded in `keel_schema_migrations`. Workers starting
//! together take an advisory lock, so one of them migrates and the others wait.

use super::PostgresError;

/// The migrations, in order: (version, SQL).
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        include_str!("../../migrations/postgres/0001_agent_jobs.sql"),
    ),
    (
        2,
        include_str!("../../migrations/postgres/0002_agent_job_trace_context.sql"),
    ),
    (
        3,
        include_str!("../../migrations/postgres/0003_threads.sql"),
    ),
    (
        4,
        include_str!("../../migrations/postgres/0004_thread_notes.sql"),
    ),
];

/// The advisory lock key migrations hold (any fixed number that other programs are
/// unlikely to use: "keel" in ASCII).
const MIGRATION_LOCK: i64 = 0x6b65_656c;

/// Applies the migrations the database has not seen yet.
pub(super) async fn apply(client: &mut deadpool_postgres::Object) -> Result<(), PostgresError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS keel_schema_migrations (
             version INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await?;
    let applied: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM keel_schema_migrations",
            &[],
        )
        .await?
        .try_get(0)?;
    let newest = MIGRATIONS.last().map_or(0, |(version, _)| *version);
    if applied > newest {
        return Err(PostgresError::Server(format!(
            "the database has schema version {applied}, newer than this Keel knows ({newest}); upgrade Keel"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > applied) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO keel_schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tracing::info!(version, "applied PostgreSQL store migration");
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    #[test]
    fn every_migration_file_is_applied_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".sql"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        assert!(!files.is_empty(), "no migrations under {}", dir.display());
        for (n, name) in files.iter().enumerate() {
            let (version, sql) = MIGRATIONS.get(n).copied().unwrap_or((0, ""));
            assert_eq!(
                usize::try_from(version).ok(),
                Some(n + 1),
                "{name} is not listed as version {}",
                n + 1
            );
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert_eq!(sql, text, "version {version} is not {name}");
        }
        assert_eq!(
            MIGRATIONS.len(),
            files.len(),
            "a listed migration has no file"
        );
    }
}
