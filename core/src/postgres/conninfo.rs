//! A PostgreSQL connection as libpq would make it: a URL or `key=value` string, completed by
//! a service file (`service=`), the `PG*` environment variables and the password file, so a
//! password never has to appear on a command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::PostgresError;

/// The connection settings Keel reads, by libpq name.
const KNOWN: [&str; 8] = [
    "host",
    "port",
    "user",
    "dbname",
    "password",
    "sslmode",
    "connect_timeout",
    "application_name",
];

/// Where libpq's conventions are looked up: the environment and the home directory.
pub(crate) struct Lookup<'a> {
    /// Reads an environment variable.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The user's home directory (`~/.pgpass`, `~/.pg_service.conf`).
    pub home: Option<PathBuf>,
}

impl Lookup<'_> {
    /// The process's environment and home.
    pub(crate) fn process() -> Lookup<'static> {
        Lookup {
            env: &|name| std::env::var(name).ok().filter(|v| !v.is_empty()),
            home: dirs::home_dir(),
        }
    }
}

/// The settings of one connection, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnInfo {
    settings: BTreeMap<String, String>,
}

fn bad(what: impl Into<String>) -> PostgresError {
    PostgresError::BadConnInfo(what.into())
}

/// Splits `key=value` pairs with libpq's quoting (`'...'`, `\'`, `\\`).
fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, PostgresError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(bad(format!("`{key}` has no `=value`")));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(bad(format!("the value of `{key}` has no closing quote"))),
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// Decodes `%XX` escapes; a problem names `what` (never the text: it may be a password).
fn percent_decode(text: &str, what: &str) -> Result<String, PostgresError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("bad %-escape in the URL's {what}")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(format!("the URL's {what} is not UTF-8 once decoded")))
}

/// Splits a `postgres://` or `postgresql://` URL into settings.
fn parse_url(url: &str) -> Result<Vec<(String, String)>, PostgresError> {
    let rest = url
        .strip_prefix("postgresql://")
        .or_else(|| url.strip_prefix("postgres://"))
        .ok_or_else(|| bad("a store URL starts with postgres:// or postgresql://"))?;
    // The user part ends at the last `@`, so a password with an unescaped `/`, `?` or `@`
    // stays in it (and out of the host, path and messages).
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => (Some(userinfo), rest),
        None => (None, rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut pairs = Vec::new();
    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user, Some(password)),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            pairs.push(("user".to_string(), percent_decode(user, "user")?));
        }
        if let Some(password) = password {
            pairs.push((
                "password".to_string(),
                percent_decode(password, "password")?,
            ));
        }
    }
    if !hostport.is_empty() {
        let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 host in the URL has no closing `]`"))?;
            (host, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (hostport, None),
            }
        };
        if !host.is_empty() {
            pairs.push(("host".to_string(), percent_decode(host, "host")?));
        }
        if let Some(port) = port.filter(|p| !p.is_empty()) {
            pairs.push(("port".to_string(), port.to_string()));
        }
    }
    if !path.is_empty() {
        pairs.push(("dbname".to_string(), percent_decode(path, "database name")?));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((
            percent_decode(key, "query")?,
            percent_decode(value, "query")?,
        ));
    }
    Ok(pairs)
}

/// The settings of service `name` in the first service file that has it.
fn service_settings(
    name: &str,
    lookup: &Lookup<'_>,
) -> Result<Vec<(String, String)>, PostgresError> {
    let mut files = Vec::new();
    if let Some(file) = (lookup.env)("PGSERVICEFILE") {
        files.push(PathBuf::from(file));
    } else if let Some(home) = &lookup.home {
        files.push(home.join(".pg_service.conf"));
    }
    if let Some(dir) = (lookup.env)("PGSYSCONFDIR") {
        files.push(Path::new(&dir).join("pg_service.conf"));
    } else {
        files.push(PathBuf::from("/etc/postgresql-common/pg_service.conf"));
    }
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let mut in_section = false;
        let mut found = false;
        let mut settings = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                in_section = section.trim() == name;
                found |= in_section;
                continue;
            }
            if in_section {
                let (key, value) = line.split_once('=').ok_or_else(|| {
                    bad(format!(
                        "{}: `{line}` in service `{name}` is not key=value",
                        file.display()
                    ))
                })?;
                settings.push((key.trim().to_string(), value.trim().to_string()));
            }
        }
        if found {
            return Ok(settings);
        }
    }
    Err(bad(format!(
        "service `{name}` is in none of {}",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// One field of a password-file line, with `\:` and `\\` unescaped; `*` matches anything.
fn passfile_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(field), Some(next)) = (fields.last_mut(), chars.next()) {
                    field.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

/// The password for `host:port:dbname:user` in the password file, as libpq finds it: the
/// first matching line; a file others can read is ignored, with a warning.
fn passfile_password(
    file: &Path,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %file.display(),
                "the password file is readable by others (chmod 0600 it); not using it"
            );
            return None;
        }
    }
    // A socket directory counts as `localhost`, as in libpq.
    let host = if host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
        .map(passfile_fields)
        .find(|fields| {
            fields.len() == 5
                && [host, port, dbname, user]
                    .iter()
                    .zip(fields.iter())
                    .all(|(want, have)| have == "*" || have == want)
        })
        .and_then(|fields| fields.into_iter().nth(4))
}

impl ConnInfo {
    /// Resolves `store` (a URL or `key=value` string) with libpq's conventions: its own
    /// settings first, then its service's, then `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`,
    /// `PGPASSWORD`, `PGSSLMODE`, `PGSERVICE`, `PGAPPNAME`; a missing password is looked up
    /// in `PGPASSFILE` (default `~/.pgpass`).
    pub(crate) fn resolve(store: &str, lookup: &Lookup<'_>) -> Result<Self, PostgresError> {
        let given = if store.starts_with("postgres://") || store.starts_with("postgresql://") {
            parse_url(store)?
        } else {
            parse_pairs(store)?
        };
        let mut settings = BTreeMap::new();
        let mut service = None;
        for (key, value) in given {
            match key.as_str() {
                "service" => service = Some(value),
                "passfile" => {
                    settings.insert(key, value);
                }
                known if KNOWN.contains(&known) => {
                    settings.insert(key, value);
                }
                other => {
                    return Err(bad(format!(
                        "`{other}` is not a connection setting Keel reads (it reads {}, service and passfile)",
                        KNOWN.join(", ")
                    )));
                }
            }
        }
        if let Some(name) = service.or_else(|| (lookup.env)("PGSERVICE")) {
            for (key, value) in service_settings(&name, lookup)? {
                settings.entry(key).or_insert(value);
            }
        }
        for (key, var) in [
            ("host", "PGHOST"),
            ("port", "PGPORT"),
            ("user", "PGUSER"),
            ("dbname", "PGDATABASE"),
            ("password", "PGPASSWORD"),
            ("sslmode", "PGSSLMODE"),
            ("application_name", "PGAPPNAME"),
            ("connect_timeout", "PGCONNECT_TIMEOUT"),
        ] {
            if let Some(value) = (lookup.env)(var) {
                settings.entry(key.to_string()).or_insert(value);
            }
        }
        let default_host = if Path::new("/var/run/postgresql").is_dir() {
            "/var/run/postgresql"
        } else {
            "localhost"
        };
        settings
            .entry("host".to_string())
            .or_insert_with(|| default_host.to_string());
        settings
            .entry("port".to_string())
            .or_insert_with(|| "5432".to_string());
        if !settings.contains_key("user") {
            let user = (lookup.env)("USER")
                .or_else(|| (lookup.env)("LOGNAME"))
                .ok_or_else(|| bad("no database user: give user= or set PGUSER"))?;
            settings.insert("user".to_string(), user);
        }
        if !settings.contains_key("dbname") {
            let user = settings.get("user").cloned().unwrap_or_default();
            settings.insert("dbname".to_string(), user);
        }
        if !settings.contains_key("password") {
            let file = settings
                .remove("passfile")
                .map(PathBuf::from)
                .or_else(|| (lookup.env)("PGPASSFILE").map(PathBuf::from))
                .or_else(|| lookup.home.as_ref().map(|home| home.join(".pgpass")));
            let field = |key: &str| settings.get(key).map(String::as_str).unwrap_or_default();
            if let Some(password) = file.and_then(|file| {
                passfile_password(
                    &file,
                    field("host"),
                    field("port"),
                    field("dbname"),
                    field("user"),
                )
            }) {
                settings.insert("password".to_string(), password);
            }
        }
        settings.remove("passfile");
        Ok(Self { settings })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// The store as it may be shown: `postgres://user@host:port/dbname`, never the password.
    pub(crate) fn display(&self) -> String {
        let host = self.get("host").unwrap_or_default();
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        format!(
            "postgres://{}@{host}:{}/{}",
            self.get("user").unwrap_or_default(),
            self.get("port").unwrap_or_default(),
            self.get("dbname").unwrap_or_default()
        )
    }

    /// Whether the server must talk TLS (`sslmode` require, verify-ca or verify-full),
    /// may (`prefer`, the default, and `allow`), or must not (`disable`).
    pub(crate) fn ssl_mode(&self) -> Result<tokio_postgres::config::SslMode, PostgresError> {
        use tokio_postgres::config::SslMode;
        match self.get("sslmode").unwrap_or("prefer") {
            "disable" => Ok(SslMode::Disable),
            "allow" | "prefer" => Ok(SslMode::Prefer),
            "require" | "verify-ca" | "verify-full" => Ok(SslMode::Require),
            other => Err(bad(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ))),
        }
    }

    /// How long getting a connection may take, all steps together: `connect_timeout` (or
    /// `PGCONNECT_TIMEOUT`) in whole seconds, at least 2 as in libpq, else
    /// [`DEFAULT_CONNECT_TIMEOUT`].
    pub(crate) fn connect_timeout(&self) -> Result<std::time::Duration, PostgresError> {
        let Some(timeout) = self.get("connect_timeout") else {
            return Ok(DEFAULT_CONNECT_TIMEOUT);
        };
        let secs: u64 = timeout
            .parse()
            .map_err(|_| bad(format!("connect_timeout `{timeout}` is not whole seconds")))?;
        // libpq: 0 means wait without end; Keel keeps its default bound instead.
        Ok(if secs == 0 {
            DEFAULT_CONNECT_TIMEOUT
        } else {
            std::time::Duration::from_secs(secs.max(2))
        })
    }

    /// The driver's configuration.
    pub(crate) fn to_config(&self) -> Result<tokio_postgres::Config, PostgresError> {
        let mut config = tokio_postgres::Config::new();
        if let Some(host) = self.get("host") {
            for host in host.split(',') {
                config.host(host);
            }
        }
        if let Some(port) = self.get("port") {
            let port: u16 = port
                .parse()
                .map_err(|_| bad(format!("port `{port}` is not a port number")))?;
            config.port(port);
        }
        if let Some(user) = self.get("user") {
            config.user(user);
        }
        if let Some(dbname) = self.get("dbname") {
            config.dbname(dbname);
        }
        if let Some(password) = self.get("password") {
            config.password(password);
        }
        config.connect_timeout(self.connect_timeout()?);
        config.application_name(self.get("application_name").unwrap_or("keel-agent-job"));
        config.ssl_mode(self.ssl_mode()?);
        Ok(config)
    }
}

/// The bound on getting a connection when neither `connect_timeout` nor `PGCONNECT_TIMEOUT`
/// says otherwise.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

#[cfg(test)]
#[path = "conninfo_tests.rs"]
mod tests;
