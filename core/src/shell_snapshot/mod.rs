//! Login-shell snapshots: models run commands as `bash -lc "..."`, and a developer's login
//! profile (pyenv, nvm, conda, cargo) can cost from 100 ms to seconds per command. The first
//! such command captures what the profile sets up (exported variables, functions, aliases)
//! into one file; later commands run as `bash -c` sourcing that file, which costs one file
//! read. Snapshots are kept across sessions under `KEEL_HOME/shell-snapshots` (see `cache`),
//! so a profile is paid once per machine until a file it read changes; when capture fails or
//! times out the commands run as real login shells, as asked.

mod cache;
mod trace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::processes::{ProcessLayer, ProcessSpec, run_to_exit};
use cache::{FileStamp, SnapshotCache};

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

    /// The command that runs a login shell of this kind with `script`, tracing the files it
    /// sources into `trace` (its stderr goes there too).
    fn traced_login(self, shell: &str, trace: &Path, script: String) -> Vec<String> {
        let trace = shlex::try_quote(&trace.to_string_lossy())
            .map(|quoted| quoted.into_owned())
            .unwrap_or_default();
        let login = match self {
            Self::Bash => format!("exec 2>>{trace}; exec \"$0\" -lx -c \"$1\""),
            Self::Zsh => format!("exec 2>>{trace}; exec \"$0\" -o sourcetrace -l -c \"$1\""),
        };
        vec![
            shell.to_string(),
            "-c".to_string(),
            login,
            shell.to_string(),
            script,
        ]
    }

    /// The files named in a capture's trace.
    fn sourced(self, trace: &str) -> Vec<PathBuf> {
        match self {
            Self::Bash => trace::bash_sourced(trace),
            Self::Zsh => trace::zsh_sourced(trace),
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

#[derive(Debug)]
enum Captured {
    /// The file to source.
    Ready(PathBuf),
    /// Capture failed while the files stayed as they were; commands run as login shells.
    Failed,
}

/// The snapshots a conversation uses, one per shell, each with the files whose change means
/// a new capture.
#[derive(Debug)]
pub(crate) struct ShellSnapshots {
    cache: SnapshotCache,
    by_shell: tokio::sync::Mutex<HashMap<ShellKind, (Vec<FileStamp>, Captured)>>,
}

impl ShellSnapshots {
    /// Snapshots kept under `dir` (`KEEL_HOME/shell-snapshots`, created on the first capture).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            cache: SnapshotCache::new(dir),
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
        let mut by_shell = self.by_shell.lock().await;
        let fresh = by_shell
            .get(&kind)
            .is_some_and(|(files, _)| files.iter().all(FileStamp::current));
        if !fresh {
            let key = SnapshotCache::key(shell, env);
            let entry = match self.cache.load(&key) {
                Some((snapshot, files)) => (files, Captured::Ready(snapshot)),
                None => self.capture_once(kind, shell, layer, cwd, env, &key).await,
            };
            by_shell.insert(kind, entry);
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

    /// The capture of `key`, or the one another session of this process made meanwhile.
    async fn capture_once(
        &self,
        kind: ShellKind,
        shell: &str,
        layer: &ProcessLayer,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        key: &str,
    ) -> (Vec<FileStamp>, Captured) {
        let slot = self.cache.capture_slot(key);
        let mut failed = slot.lock().await;
        if let Some((snapshot, files)) = self.cache.load(key) {
            return (files, Captured::Ready(snapshot));
        }
        if let Some(files) = failed
            .as_ref()
            .filter(|files| files.iter().all(FileStamp::current))
        {
            return (files.clone(), Captured::Failed);
        }
        let entry = self.capture(kind, shell, layer, cwd, env, key).await;
        *failed = matches!(entry.1, Captured::Failed).then(|| entry.0.clone());
        entry
    }

    async fn capture(
        &self,
        kind: ShellKind,
        shell: &str,
        layer: &ProcessLayer,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        key: &str,
    ) -> (Vec<FileStamp>, Captured) {
        let started = std::time::Instant::now();
        match self.try_capture(kind, shell, layer, cwd, env, key).await {
            Ok((file, files)) => {
                tracing::info!(shell, elapsed = ?started.elapsed(), files = files.len(), "captured the login shell environment");
                (files, Captured::Ready(file))
            }
            Err(reason) => {
                tracing::warn!(
                    shell,
                    "could not capture the login shell environment ({reason}); commands run \
                     as login shells"
                );
                let home = env.get("HOME").map(PathBuf::from);
                (profile_stamps(kind, home.as_deref()), Captured::Failed)
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
        key: &str,
    ) -> Result<(PathBuf, Vec<FileStamp>), String> {
        let dir = self
            .cache
            .entry_dir(key)
            .map_err(|err| format!("{key}: {err}"))?;
        // Private from the start: the snapshot holds what the profile exports, and the trace
        // every command the profile ran.
        // Named per capture, not only per process: a capture abandoned mid-way (its session
        // dropped) may still have a dying shell writing to its files when the next begins.
        static CAPTURES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let capture = CAPTURES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}.{capture}", std::process::id());
        let partial = dir.join(format!("snapshot.{tag}.partial"));
        let trace_file = dir.join(format!("trace.{tag}.partial"));
        for file in [&partial, &trace_file] {
            SnapshotCache::private_file(file)
                .map_err(|err| format!("{}: {err}", file.display()))?;
        }
        let spec = ProcessSpec {
            argv: kind.traced_login(shell, &trace_file, kind.capture_script(&partial)),
            arg0: None,
            cwd: cwd.to_path_buf(),
            env: env.clone(),
            tty: false,
            traceparent: None,
        };
        let outcome = run_to_exit(
            layer,
            spec,
            CAPTURE_TIMEOUT,
            &CancellationToken::new(),
            |_, _| async {},
        )
        .await;
        let trace = std::fs::read_to_string(&trace_file).unwrap_or_default();
        let _ = std::fs::remove_file(&trace_file);
        let failed = |why: String| {
            let _ = std::fs::remove_file(&partial);
            why
        };
        let outcome = outcome
            .map_err(|err| failed(err.to_string()))?
            .map_err(|_| failed("interrupted".to_string()))?;
        if outcome.timed_out {
            return Err(failed(format!("the profile took over {CAPTURE_TIMEOUT:?}")));
        }
        if outcome.exit_code != 0 {
            let said = trace
                .lines()
                .rev()
                .find(|line| !line.starts_with('+') && !line.trim().is_empty())
                .unwrap_or_default();
            return Err(failed(format!(
                "the login shell exited with {}: {said}",
                outcome.exit_code
            )));
        }
        let size = std::fs::metadata(&partial)
            .map_err(|err| failed(format!("no snapshot was written: {err}")))?
            .len();
        if size == 0 {
            return Err(failed("the snapshot is empty".to_string()));
        }
        if size > MAX_SNAPSHOT_BYTES {
            return Err(failed(format!(
                "the environment is {size} bytes, over {MAX_SNAPSHOT_BYTES}"
            )));
        }
        let home = env.get("HOME").map(PathBuf::from);
        let mut files = profile_stamps(kind, home.as_deref());
        for sourced in kind.sourced(&trace) {
            if !files.iter().any(|known| known.path() == sourced) {
                files.push(FileStamp::now(sourced));
            }
        }
        let snapshot = self
            .cache
            .store(key, shell, &partial, files.clone())
            .map_err(|err| failed(err.to_string()))?;
        Ok((snapshot, files))
    }
}

/// The login files this kind of shell reads, as they are now (absent ones included).
fn profile_stamps(kind: ShellKind, home: Option<&Path>) -> Vec<FileStamp> {
    kind.profile_files()
        .iter()
        .filter_map(|file| {
            if file.starts_with('/') {
                Some(PathBuf::from(file))
            } else {
                home.map(|home| home.join(file))
            }
        })
        .map(FileStamp::now)
        .collect()
}
