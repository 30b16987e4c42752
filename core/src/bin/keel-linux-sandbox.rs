//! `keel-linux-sandbox`: confines itself to the policy on its command line, then runs the
//! command (see `keel_sandbox`). The engine starts it; users run `keel sandbox linux`.

fn main() -> std::process::ExitCode {
    keel_sandbox::run_linux_sandbox_main()
}
