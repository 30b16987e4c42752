//! The one error type of the config module: every variant carries what a user needs to fix it
//! (the file or `-c` override, the key, and what was expected).

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A `Result` whose error is [`ConfigError`].
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Where a bad configuration value came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigOrigin {
    /// The `config.toml` file at this path.
    File(PathBuf),
    /// A `-c key=value` override, with its key path and parsed value.
    CliOverride {
        /// The dotted key path as given on the command line.
        key: String,
        /// The value after TOML (or raw string) parsing.
        value: toml::Value,
    },
}

impl fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::CliOverride { key, value } => write!(f, "-c {key}={value}"),
        }
    }
}

/// Everything that can go wrong finding, reading, parsing or resolving configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `KEEL_HOME` is unset and the user's home directory is unknown.
    #[error(
        "cannot locate the Keel home directory: KEEL_HOME is not set and the home directory is unknown"
    )]
    NoHomeDir,

    /// The process's current directory is needed but cannot be read.
    #[error("cannot determine the current directory: {0}")]
    CurrentDir(#[source] io::Error),

    /// `config.toml` exists but cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },

    /// `config.toml` is not valid TOML.
    #[error("{}: TOML syntax error at line {line}, column {column}: {message}", path.display())]
    Syntax {
        /// The file with the syntax error.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column (in characters) of the error.
        column: usize,
        /// What the parser expected or found.
        message: String,
    },

    /// A key holds a value of the wrong type or an unknown enum variant.
    #[error("{origin}: {key}: {message}")]
    InvalidValue {
        /// The file or override the value came from.
        origin: ConfigOrigin,
        /// The dotted key path, e.g. `model_providers.mock.request_max_retries`.
        key: String,
        /// What was found and what was expected.
        message: String,
    },

    /// A `-c` argument is not of the form `key.path=value`.
    #[error("invalid -c override `{raw}`: {reason}")]
    InvalidOverride {
        /// The argument as given.
        raw: String,
        /// Why it was rejected.
        reason: String,
    },

    /// The selected `model_provider` is neither built in nor defined in the file.
    #[error(
        "model_provider `{id}` is not defined (known providers: {}); define it under [model_providers.{id}] in {}",
        known.join(", "),
        path.display()
    )]
    UnknownProvider {
        /// The provider id that was asked for.
        id: String,
        /// The ids that are available, sorted.
        known: Vec<String>,
        /// The config file where it could be defined.
        path: PathBuf,
    },

    /// The selected profile has no `[profiles.<name>]` table.
    #[error(
        "config profile `{name}` not found in {} ({})",
        path.display(),
        describe_profiles(known)
    )]
    UnknownProfile {
        /// The profile that was asked for.
        name: String,
        /// The profiles that are defined, sorted.
        known: Vec<String>,
        /// The config file that was searched.
        path: PathBuf,
    },

    /// A provider's `env_key` variable is unset or empty when its API key is needed.
    #[error(
        "missing API key for model provider `{provider}`: set the environment variable `{var}`{}",
        describe_instructions(instructions.as_deref())
    )]
    MissingEnvVar {
        /// The provider's display name.
        provider: String,
        /// The environment variable that should hold the key.
        var: String,
        /// The provider's `env_key_instructions`, if any.
        instructions: Option<String>,
    },
}

fn describe_profiles(known: &[String]) -> String {
    if known.is_empty() {
        "no profiles are defined".to_string()
    } else {
        format!("defined profiles: {}", known.join(", "))
    }
}

fn describe_instructions(instructions: Option<&str>) -> String {
    match instructions {
        Some(text) if !text.trim().is_empty() => format!(". {}", text.trim()),
        _ => String::new(),
    }
}
