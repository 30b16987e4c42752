//! Login-shell snapshots: models run commands as `bash -lc "..."`, and a developer's login
//! profile (pyenv, nvm, conda, cargo) can cost from 100 ms to seconds per command. The first
//! such command of a conversation captures what the profile sets up (exported variables,
//! functions, aliases) into one file; later commands run as `bash -c` sourcing that file,
//! which costs one file read. The capture is redone when a profile file changes, and when it
//! fails or times out the commands run as real login shells, as asked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::processes::{ProcessLayer, ProcessSpec, run_to_exit};

/// Longest a capture may take; a slower profile is run per command instead.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest snapshot kept; a larger environment is run per command instead.
const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024;

/// Shells Keel knows how to snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ShellKind {
    Bash,
    Zsh,
}

impl ShellKind {
    fn of(program: &str) -> Option<Self> {
        match Path::new(program).file_name()?.to_str()? {
            "bash" => Some(Self::Bash),
            "zsh" => Some(Self::Zsh),
            _ => None,
        }
    }

    /// The files a login shell of this kind reads, relative to `$HOME` unless absolute.
    fn profile_files(self) -> &'static [&'static str] {
        match self {
            Self::Bash => &[
                "/etc/profile",
                "/etc/bash.bashrc",
                ".bash_profile",
                ".bash_login",
                ".profile",
                ".bashrc",
            ],
            Self::Zsh => &[
                "/etc/zshenv",
                "/etc/zsh/zshenv",
                "/etc/zprofile",
                "/etc/zsh/zprofile",
                ".zshenv",
                ".zprofile",
                ".zshrc",
                ".zlogin",
            ],
        }
    }

    /// A script that writes the definitions to `file`, after the profile ran. The variables
    /// a shell sets for itself are left out so the replaying shell keeps its own.
    fn capture_script(self, file: &Path) -> String {
        let target = shlex::try_quote(&file.to_string_lossy())
            .map(|quoted| quoted.into_owned())
            .unwrap_or_default();
        match self {
            Self::Bash => format!(
                "unset PWD OLDPWD SHLVL; {{ echo 'shopt -s expand_aliases'; export -p; \
                 declare -f; alias -p; }} > {target}"
            ),
            Self::Zsh => {
                format!("unset PWD OLDPWD SHLVL; {{ export -p; typeset -f; alias -L; }} > {target}")
            }
        }
    }
}

/// The profile files' sizes and modification times: a change means a new capture.
type Fingerprint = Vec<Option<(u64, SystemTime)>>;

#[derive(Debug)]
enum Captured {
    /// The file to source.
    Ready(PathBuf),
    /// Capture failed for this fingerprint; commands run as login shells.
    Failed,
}

/// The snapshots of one conversation, one per shell; their files are removed with it.
#[derive(Debug)]
pub(crate) struct ShellSnapshots {
    dir: PathBuf,
    by_shell: tokio::sync::Mutex<HashMap<ShellKind, (Fingerprint, Captured)>>,
}

impl ShellSnapshots {
    /// Snapshots kept under `dir` (created on the first capture).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            by_shell: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// For `[bash|zsh, "-lc", script]`, the same command as a non-login shell sourcing the
    /// captured login environment; `None` leaves the command as it is.
    pub(crate) async fn rewrite(
        &self,
        argv: &[String],
        layer: &ProcessLayer,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Option<Vec<String>> {
        let [shell, flag, script] = argv else {
            return None;
        };
        if flag != "-lc" {
            return None;
        }
        let kind = ShellKind::of(shell)?;
        let home = env.get("HOME").map(PathBuf::from);
        let fingerprint = fingerprint(kind, home.as_deref());
        let mut by_shell = self.by_shell.lock().await;
        let fresh = by_shell
            .get(&kind)
            .is_some_and(|(known, _)| *known == fingerprint);
        if !fresh {
            let captured = self.capture(kind, shell, layer, cwd, env).await;
            by_shell.insert(kind, (fingerprint, captured));
        }
        match by_shell.get(&kind) {
            Some((_, Captured::Ready(file))) => {
                let source = shlex::try_quote(&file.to_string_lossy()).ok()?.into_owned();
                Some(match kind {
                    // bash reads a `-c` script a command at a time, so aliases the first
                    // line defines apply to the script's own lines.
                    ShellKind::Bash => vec![
                        shell.clone(),
                        "-c".to_string(),
                        format!(". {source}\n{script}"),
                    ],
                    // zsh parses the whole `-c` string up front; the script is parsed after
                    // the snapshot is sourced (as `$1`) so its aliases apply.
                    ShellKind::Zsh => vec![
                        shell.clone(),
                        "-c".to_string(),
                        format!(". {source}; eval \"$1\""),
                        shell.clone(),
                        script.clone(),
                    ],
                })
            }
            _ => None,
        }
    }

    async fn capture(
        &self,
        kind: ShellKind,
        shell: &str,
        layer: &ProcessLayer,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Captured {
        let started = std::time::Instant::now();
        match self.try_capture(kind, shell, layer, cwd, env).await {
            Ok(file) => {
                tracing::info!(shell, elapsed = ?started.elapsed(), "captured the login shell environment");
                Captured::Ready(file)
            }
            Err(reason) => {
                tracing::warn!(
                    shell,
                    "could not capture the login shell environment ({reason}); commands run \
                     as login shells"
                );
                Captured::Failed
            }
        }
    }

    async fn try_capture(
        &self,
        kind: ShellKind,
        shell: &str,
        layer: &ProcessLayer,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<PathBuf, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|err| format!("{}: {err}", self.dir.display()))?;
        let name = match kind {
            ShellKind::Bash => "bash",
            ShellKind::Zsh => "zsh",
        };
        let file = self.dir.join(format!("{name}.sh"));
        let partial = self.dir.join(format!("{name}.sh.partial"));
        let _ = std::fs::remove_file(&partial);
        let spec = ProcessSpec {
            argv: vec![
                shell.to_string(),
                "-lc".to_string(),
                kind.capture_script(&partial),
            ],
            arg0: None,
            cwd: cwd.to_path_buf(),
            env: env.clone(),
            tty: false,
        };
        let outcome = run_to_exit(
            layer,
            spec,
            CAPTURE_TIMEOUT,
            &CancellationToken::new(),
            |_, _| async {},
        )
        .await
        .map_err(|err| err.to_string())?
        .map_err(|_| "interrupted".to_string())?;
        if outcome.timed_out {
            return Err(format!("the profile took over {CAPTURE_TIMEOUT:?}"));
        }
        if outcome.exit_code != 0 {
            return Err(format!(
                "the login shell exited with {}: {}",
                outcome.exit_code,
                outcome.stderr.trim()
            ));
        }
        let size = std::fs::metadata(&partial)
            .map_err(|err| format!("no snapshot was written: {err}"))?
            .len();
        if size > MAX_SNAPSHOT_BYTES {
            let _ = std::fs::remove_file(&partial);
            return Err(format!(
                "the environment is {size} bytes, over {MAX_SNAPSHOT_BYTES}"
            ));
        }
        std::fs::rename(&partial, &file).map_err(|err| err.to_string())?;
        Ok(file)
    }
}

impl Drop for ShellSnapshots {
    fn drop(&mut self) {
        if self.dir.exists()
            && let Err(err) = std::fs::remove_dir_all(&self.dir)
        {
            tracing::debug!(dir = %self.dir.display(), %err, "could not remove shell snapshots");
        }
    }
}

fn fingerprint(kind: ShellKind, home: Option<&Path>) -> Fingerprint {
    kind.profile_files()
        .iter()
        .map(|file| {
            let path = if file.starts_with('/') {
                PathBuf::from(file)
            } else {
                home?.join(file)
            };
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}
