//! Programs some tests need beyond the Rust toolchain: a test without one is skipped, saying
//! so on stderr, except under `CI`, where `.ci/run` provides them and the test must run.

use std::process::Stdio;

/// Whether `python3` runs here; under `CI` its absence is an error.
pub(crate) fn python3() -> anyhow::Result<bool> {
    available("python3", &["--version"])
}

fn available(program: &str, args: &[&str]) -> anyhow::Result<bool> {
    let found = std::process::Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    match (found, std::env::var_os("CI").is_some()) {
        (true, _) => Ok(true),
        (false, true) => anyhow::bail!("{program} is missing, and CI must run this test"),
        (false, false) => {
            eprintln!("skipped: {program} is not installed");
            Ok(false)
        }
    }
}
