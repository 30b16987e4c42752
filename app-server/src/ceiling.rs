//! The operator's ceiling on what a client may ask for (`[app_server]
//! clients_within_sandbox = true`, or `keel app-server --clients-within-sandbox`). Off by
//! default: a client is then trusted as the user, as the Codex TUI expects. On, every route
//! that could widen what runs or what is written is held to the server's own configuration:
//! a thread's or command's sandbox (no wider mode, network only if the server has it, every
//! writable root — its cwd and `$TMPDIR` included — inside the server's), configuration
//! writes that touch the sandbox or the shell environment, and `fs/*` writes.

use std::path::{Path, PathBuf};

use keel_core::Config;
use keel_core::sandbox::ResolvedPolicy;
use keel_protocol::SandboxPolicy;

use crate::error::{AppServerError, Result};

/// Configuration keys a client may not write or override under the ceiling: they widen the
/// sandbox, or set `$TMPDIR` (a writable root) and the commands' environment.
const GUARDED_KEY_PREFIXES: &[&str] = &[
    "sandbox_mode",
    "sandbox_workspace_write",
    "shell_environment_policy",
    "app_server",
    "profile",
    "profiles",
    "default_permissions",
    "permissions",
];

fn refused(method: &str, message: String) -> AppServerError {
    AppServerError::InvalidParams {
        method: method.into(),
        message: format!(
            "{message} (the server holds clients within its own sandbox: `[app_server] clients_within_sandbox`)"
        ),
    }
}

fn rank(policy: &SandboxPolicy) -> u8 {
    match policy {
        SandboxPolicy::ReadOnly => 0,
        SandboxPolicy::WorkspaceWrite { .. } => 1,
        SandboxPolicy::DangerFullAccess => 2,
    }
}

fn mode_name(policy: &SandboxPolicy) -> &'static str {
    match policy {
        SandboxPolicy::ReadOnly => "read-only",
        SandboxPolicy::WorkspaceWrite { .. } => "workspace-write",
        SandboxPolicy::DangerFullAccess => "danger-full-access",
    }
}

/// The server's `$TMPDIR`, a writable root of its own policy.
fn server_tmpdir() -> Option<PathBuf> {
    std::env::var_os("TMPDIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// `path` as the kernel sees it where it exists (a link resolved), else as given.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The roots the server's own configuration may write.
fn server_roots(server: &Config) -> Option<Vec<PathBuf>> {
    ResolvedPolicy::resolve(
        &server.sandbox_policy,
        &server.cwd,
        server_tmpdir().as_deref(),
        server.sandbox_allow_git_writes,
    )
    .map(|resolved| {
        resolved
            .writable_roots
            .iter()
            .map(|root| real(root))
            .collect()
    })
}

fn within(roots: &[PathBuf], path: &Path) -> bool {
    let path = real(path);
    roots.iter().any(|root| path.starts_with(root))
}

/// Checks that `policy`, run in `cwd` with `tmpdir`, gives no more than the server's own
/// configuration.
pub(crate) fn check_sandbox(
    server: &Config,
    method: &str,
    policy: &SandboxPolicy,
    cwd: &Path,
    tmpdir: Option<&Path>,
) -> Result<()> {
    if !server.app_server_clients_within_sandbox {
        return Ok(());
    }
    if rank(policy) > rank(&server.sandbox_policy) {
        return Err(refused(
            method,
            format!(
                "sandbox `{}` is wider than the server's `{}`",
                mode_name(policy),
                mode_name(&server.sandbox_policy)
            ),
        ));
    }
    let Some(server_roots) = server_roots(server) else {
        // The server runs with full access: nothing is wider.
        return Ok(());
    };
    let Some(resolved) = ResolvedPolicy::resolve(
        policy,
        cwd,
        tmpdir.or(server_tmpdir().as_deref()),
        server.sandbox_allow_git_writes,
    ) else {
        return Ok(());
    };
    if resolved.network
        && !matches!(
            server.sandbox_policy,
            SandboxPolicy::WorkspaceWrite {
                network_access: true,
                ..
            }
        )
    {
        return Err(refused(
            method,
            "network access is wider than the server's sandbox".into(),
        ));
    }
    if let Some(root) = resolved
        .writable_roots
        .iter()
        .find(|root| !within(&server_roots, root))
    {
        return Err(refused(
            method,
            format!(
                "{} would be writable, which the server's own sandbox does not allow",
                root.display()
            ),
        ));
    }
    Ok(())
}

/// Checks that a client may write `path` (`fs/*`): inside the server's writable roots.
pub(crate) fn check_write(server: &Config, method: &str, path: &Path) -> Result<()> {
    if !server.app_server_clients_within_sandbox {
        return Ok(());
    }
    match server_roots(server) {
        None => Ok(()),
        Some(roots) if within(&roots, path) => Ok(()),
        Some(_) => Err(refused(
            method,
            format!("{} is outside the server's writable roots", path.display()),
        )),
    }
}

/// Checks that a client may write or override the configuration key `key`.
pub(crate) fn check_config_key(server: &Config, method: &str, key: &str) -> Result<()> {
    if !server.app_server_clients_within_sandbox {
        return Ok(());
    }
    let guarded = GUARDED_KEY_PREFIXES
        .iter()
        .any(|prefix| key == *prefix || key.starts_with(&format!("{prefix}.")));
    if guarded {
        return Err(refused(
            method,
            format!("`{key}` may not be changed by a client"),
        ));
    }
    Ok(())
}
