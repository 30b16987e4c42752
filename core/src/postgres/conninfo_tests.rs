use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn resolve(
    store: &str,
    env: &[(&str, &str)],
    home: Option<&Path>,
) -> Result<ConnInfo, PostgresError> {
    let vars: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let read = move |name: &str| vars.get(name).cloned();
    let lookup = Lookup {
        env: &read,
        home: home.map(Path::to_path_buf),
    };
    ConnInfo::resolve(store, &lookup)
}

#[test]
fn a_url_gives_every_part_and_is_shown_without_its_password() {
    let info = resolve(
        "postgres://jobs%40team:s%3Acret@db.example:6543/agent_jobs?sslmode=require",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(info.get("user"), Some("jobs@team"));
    assert_eq!(info.get("password"), Some("s:cret"));
    assert_eq!(info.get("host"), Some("db.example"));
    assert_eq!(info.get("port"), Some("6543"));
    assert_eq!(info.get("dbname"), Some("agent_jobs"));
    assert_eq!(
        info.display(),
        "postgres://jobs@team@db.example:6543/agent_jobs"
    );
    assert!(!info.display().contains("cret"));
}

#[test]
fn a_password_never_shows_in_a_message_even_when_malformed() {
    let err = resolve("postgres://u:s3cr%ZZet@h/db", &[], None).unwrap_err();
    assert!(!err.to_string().contains("s3cr"), "{err}");
    assert!(err.to_string().contains("password"), "{err}");
    // An unescaped `/` or `@` stays in the password instead of spilling into host or path.
    let info = resolve("postgres://u:pa/ss@wd@db.example:5433/jobs", &[], None).unwrap();
    assert_eq!(info.get("password"), Some("pa/ss@wd"));
    assert_eq!(info.get("host"), Some("db.example"));
    assert_eq!(info.get("port"), Some("5433"));
    assert_eq!(info.get("dbname"), Some("jobs"));
}

#[test]
fn key_value_strings_follow_libpq_quoting() {
    let info = resolve(
        r"host=127.0.0.1 port = 5433 dbname='my jobs' user=o\'brien",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(info.get("dbname"), Some("my jobs"));
    assert_eq!(info.get("user"), Some("o'brien"));
    assert_eq!(info.get("port"), Some("5433"));
    let err = resolve("host=x dbname='open", &[], None).unwrap_err();
    assert!(err.to_string().contains("no closing quote"), "{err}");
    let err = resolve("host=x colour=blue", &[], None).unwrap_err();
    assert!(err.to_string().contains("`colour`"), "{err}");
}

#[test]
fn the_environment_fills_what_the_string_leaves_out() {
    let info = resolve(
        "postgres://db.example/jobs",
        &[
            ("PGUSER", "worker"),
            ("PGPASSWORD", "from-env"),
            ("PGHOST", "ignored"),
            ("PGPORT", "7000"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(info.get("host"), Some("db.example"));
    assert_eq!(info.get("port"), Some("7000"));
    assert_eq!(info.get("user"), Some("worker"));
    assert_eq!(info.get("password"), Some("from-env"));
}

#[test]
fn the_password_file_answers_the_first_matching_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgpass");
    std::fs::write(
        &file,
        "# comment\nother:5432:*:worker:wrong\ndb.example:*:jobs:worker:pa\\:ss\n*:*:*:*:fallback\n",
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env = [("PGPASSFILE", file.to_str().unwrap())];
    let info = resolve("postgres://worker@db.example/jobs", &env, None).unwrap();
    assert_eq!(info.get("password"), Some("pa:ss"));
    let info = resolve("postgres://someone@elsewhere/jobs", &env, None).unwrap();
    assert_eq!(info.get("password"), Some("fallback"));

    // A file others can read is not used, as in libpq.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let info = resolve("postgres://worker@db.example/jobs", &env, None).unwrap();
    assert_eq!(info.get("password"), None);
}

#[test]
fn a_service_gives_defaults_that_the_string_overrides() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".pg_service.conf"),
        "[other]\nhost=wrong\n\n[jobs]\n# the shared store\nhost = db.internal\nport=6000\nuser=svc\ndbname=agent_jobs\n",
    )
    .unwrap();
    let info = resolve("service=jobs port=6001", &[], Some(dir.path())).unwrap();
    assert_eq!(info.get("host"), Some("db.internal"));
    assert_eq!(info.get("port"), Some("6001"));
    assert_eq!(info.get("user"), Some("svc"));
    assert_eq!(info.get("dbname"), Some("agent_jobs"));
    let info = resolve("postgres://?service=jobs", &[], Some(dir.path())).unwrap();
    assert_eq!(info.get("host"), Some("db.internal"));
    let info = resolve("", &[("PGSERVICE", "jobs")], Some(dir.path())).unwrap();
    assert_eq!(info.get("user"), Some("svc"));
    let err = resolve("service=missing", &[], Some(dir.path())).unwrap_err();
    assert!(err.to_string().contains("service `missing`"), "{err}");
}

#[test]
fn ssl_modes_map_to_what_the_driver_enforces() {
    use tokio_postgres::config::SslMode;
    let mode = |m: &str| {
        resolve(&format!("host=h user=u sslmode={m}"), &[], None)
            .unwrap()
            .ssl_mode()
    };
    assert_eq!(mode("disable").unwrap(), SslMode::Disable);
    assert_eq!(mode("prefer").unwrap(), SslMode::Prefer);
    assert_eq!(mode("verify-full").unwrap(), SslMode::Require);
    assert!(mode("sometimes").is_err());
}
