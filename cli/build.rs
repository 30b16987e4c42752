//! Decides at build time whether the zsh snapshot test runs: it does when `zsh` is on `PATH`
//! or when `CI` is set (where a missing zsh must fail, not pass; `.ci/run` installs it);
//! elsewhere it is reported as ignored, with the reason, instead of passing without running.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(keel_zsh)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let has_zsh = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("zsh").is_file()));
    if has_zsh || in_ci {
        println!("cargo::rustc-cfg=keel_zsh");
    }
}
