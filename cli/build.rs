//! Decides at build time which tests needing outside programs run. Each runs when its program
//! is present or when `CI` is set (where a missing program must fail, not pass; `.ci/run`
//! installs them); elsewhere it is reported as ignored, with the reason, instead of passing
//! without running:
//! - the zsh snapshot test needs `zsh` on `PATH`;
//! - the MCP client tests need the reference MCP server `@modelcontextprotocol/server-everything`
//!   (npm), whose entry script `KEEL_MCP_EVERYTHING` names (`.ci/run` installs it under
//!   `target/npm` and sets the variable);
//! - the MCP OAuth and HTTP server tests need the official conformance suite
//!   `@modelcontextprotocol/conformance` 0.1.16, its 0.2.0-alpha.12 under the alias
//!   `conformance-alpha`, and Node 22 (npm's `node@22`), in the directory `KEEL_MCP_CONFORMANCE`
//!   names (`.ci/run` installs them under `target/npm-conformance` and sets the variable);
//! - the Codex TUI test needs Codex 0.171's binary (`KEEL_CODEX_TUI`, installed from npm by
//!   `.ci/run`) and `tmux`;
//! - the TypeScript SDK test needs `@openai/codex-sdk` (`KEEL_CODEX_SDK`, its `dist/index.js`,
//!   installed from npm by `.ci/run`) and `node`;
//! - the ACP test needs the official ACP SDK `@agentclientprotocol/sdk` (`KEEL_ACP_SDK`, its
//!   `dist/v1/stable/acp.js`, installed from npm by `.ci/run`) and `node`;
//! - the tests that run Python programs need `python3` on `PATH`;
//! - the MCP keyring login test needs a throwaway desktop keyring: `dbus-daemon`,
//!   `gnome-keyring-daemon` and `gdbus` on `PATH` (Debian: dbus-daemon, gnome-keyring,
//!   libglib2.0-bin);
//! - the shared agent-job store tests need PostgreSQL's server binaries
//!   (`/usr/lib/postgresql/<version>/bin`, or `KEEL_POSTGRES_BIN`);
//! - the remote-environment tests that give an exec-server a workspace of its own need mount
//!   namespaces (`unshare --mount`, i.e. root);
//! - the remote-environment test across a network link needs network namespaces (`unshare
//!   --net`, i.e. root, and `ip` from iproute2).
//!
//! A release build of `keel` for x86_64 Linux (where Rust links with its own `lld`) lays out
//! the functions listed in `link-order.txt` side by side (`--symbol-ordering-file`): the code a
//! run executes then sits in a few contiguous megabytes instead of pulling most of the binary
//! into memory (docs/benchmarks.md; `scripts/link-order.py` regenerates the list;
//! `KEEL_LINK_ORDER=0` turns it off, e.g. for another linker).
//!
//! It also packs the `keel` binary's relative relocations (`-z pack-relative-relocs`, DT_RELR)
//! when `KEEL_PACK_RELOCATIONS=1` is set for a Linux glibc build: about 1.5 MB smaller and
//! 1 MiB less resident (docs/benchmarks.md), but the binary then needs glibc 2.36 or later
//! and GNU ld 2.38 or later, so it is a choice for whoever builds, not the default.

/// Whether the compiler building this links x86_64 Linux with its own lld by default (1.90+).
fn rustc_links_with_lld() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(output) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(release) = text.lines().find_map(|line| line.strip_prefix("release: ")) else {
        return false;
    };
    let mut parts = release
        .split(['.', '-'])
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(keel_zsh)");
    println!("cargo::rustc-check-cfg=cfg(keel_mcp_everything)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=KEEL_MCP_EVERYTHING");
    println!("cargo::rustc-check-cfg=cfg(keel_mcp_conformance)");
    println!("cargo::rerun-if-env-changed=KEEL_MCP_CONFORMANCE");
    println!("cargo::rustc-check-cfg=cfg(keel_codex_tui)");
    println!("cargo::rerun-if-env-changed=KEEL_CODEX_TUI");
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let has_zsh = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("zsh").is_file()));
    if has_zsh || in_ci {
        println!("cargo::rustc-cfg=keel_zsh");
    }
    let has_everything = std::env::var_os("KEEL_MCP_EVERYTHING").is_some_and(|v| !v.is_empty());
    if has_everything || in_ci {
        println!("cargo::rustc-cfg=keel_mcp_everything");
    }
    let has_conformance = std::env::var_os("KEEL_MCP_CONFORMANCE").is_some_and(|v| !v.is_empty());
    if has_conformance || in_ci {
        println!("cargo::rustc-cfg=keel_mcp_conformance");
    }
    let has_tui = std::env::var_os("KEEL_CODEX_TUI").is_some_and(|v| !v.is_empty());
    if has_tui || in_ci {
        println!("cargo::rustc-cfg=keel_codex_tui");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_codex_sdk)");
    println!("cargo::rerun-if-env-changed=KEEL_CODEX_SDK");
    let has_sdk = std::env::var_os("KEEL_CODEX_SDK").is_some_and(|v| !v.is_empty());
    if has_sdk || in_ci {
        println!("cargo::rustc-cfg=keel_codex_sdk");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_acp_sdk)");
    println!("cargo::rerun-if-env-changed=KEEL_ACP_SDK");
    let has_acp_sdk = std::env::var_os("KEEL_ACP_SDK").is_some_and(|v| !v.is_empty());
    if has_acp_sdk || in_ci {
        println!("cargo::rustc-cfg=keel_acp_sdk");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_python3)");
    let on_path = |program: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
    };
    if on_path("python3") || in_ci {
        println!("cargo::rustc-cfg=keel_python3");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_keyring)");
    let has_keyring = ["dbus-daemon", "gnome-keyring-daemon", "gdbus"]
        .iter()
        .all(|program| on_path(program));
    if has_keyring || in_ci {
        println!("cargo::rustc-cfg=keel_keyring");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_postgres)");
    println!("cargo::rerun-if-env-changed=KEEL_POSTGRES_BIN");
    let has_postgres = match std::env::var_os("KEEL_POSTGRES_BIN") {
        Some(dir) => std::path::Path::new(&dir).join("initdb").is_file(),
        None => std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|version| version.path().join("bin/initdb").is_file())
        }),
    };
    if has_postgres || in_ci {
        println!("cargo::rustc-cfg=keel_postgres");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_haproxy)");
    if std::path::Path::new("/usr/sbin/haproxy").is_file() || on_path("haproxy") || in_ci {
        println!("cargo::rustc-cfg=keel_haproxy");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_mount_namespaces)");
    let mount_namespaces = std::process::Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if mount_namespaces || in_ci {
        println!("cargo::rustc-cfg=keel_mount_namespaces");
    }
    println!("cargo::rustc-check-cfg=cfg(keel_network_namespaces)");
    let network_namespaces = on_path("ip")
        && std::process::Command::new("unshare")
            .args(["--net", "true"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    if network_namespaces || in_ci {
        println!("cargo::rustc-cfg=keel_network_namespaces");
    }
    println!("cargo::rerun-if-env-changed=KEEL_LINK_ORDER");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo::rerun-if-changed=link-order.txt");
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link-order.txt");
    if std::env::var("PROFILE").is_ok_and(|p| p == "release")
        && std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu")
        && !std::env::var("KEEL_LINK_ORDER").is_ok_and(|v| v == "0")
        // A linker chosen by hand may not take the option (GNU ld does not), and Rust links
        // with its own lld by default only from 1.90 on.
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !std::env::var("CARGO_ENCODED_RUSTFLAGS")
            .is_ok_and(|flags| flags.contains("linker") || flags.contains("fuse-ld"))
        && rustc_links_with_lld()
        && order.is_file()
    {
        println!(
            "cargo::rustc-link-arg-bin=keel=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // Names the file lists that this build does not define are skipped quietly.
        println!("cargo::rustc-link-arg-bin=keel=-Wl,--no-warn-symbol-ordering");
    }
    println!("cargo::rerun-if-env-changed=KEEL_PACK_RELOCATIONS");
    let target_is = |key: &str, value: &str| std::env::var(key).is_ok_and(|v| v == value);
    if std::env::var("KEEL_PACK_RELOCATIONS").is_ok_and(|v| v == "1")
        && target_is("CARGO_CFG_TARGET_OS", "linux")
        && target_is("CARGO_CFG_TARGET_ENV", "gnu")
    {
        println!("cargo::rustc-link-arg-bin=keel=-Wl,-z,pack-relative-relocs");
    }
}
