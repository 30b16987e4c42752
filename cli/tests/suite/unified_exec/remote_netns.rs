//! A remote environment across a network link: the exec-server runs in a network namespace
//! this test creates (joined to the test's own by a veth pair), listening on that namespace's
//! address with a token, behind a TLS terminator of its own and with a workspace (a tmpfs) of
//! its own. A turn's patch and command cross the link over `wss://` and run there, under the
//! sandbox; a wrong token is turned away before anything runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use keel_test_support::{ProcessBuilder, Turn, apply_patch_call, exec_command_call};
use serde_json::json;

use super::run_with_config;
use crate::suite::listener_netns::ip;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A network namespace at `ip` (10.232.N.1/24), reached from the test's namespace through a
/// veth pair; deleted on drop.
struct RemoteHost {
    ns: String,
    ip: String,
    /// The interface inside the namespace (its name shows where a command ran).
    inner: String,
}

impl RemoteHost {
    fn create() -> Result<Self, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let subnet = (std::process::id() as usize + n) % 250;
        let host = Self {
            ns: format!("keel-env-{tag}"),
            ip: format!("10.232.{subnet}.1"),
            inner: format!("ke{tag}"),
        };
        let outer = format!("kh{tag}");
        ip(&["netns", "add", &host.ns])?;
        ip(&[
            "link",
            "add",
            &outer,
            "type",
            "veth",
            "peer",
            "name",
            &host.inner,
        ])?;
        ip(&["link", "set", &host.inner, "netns", &host.ns])?;
        let outer_cidr = format!("10.232.{subnet}.2/24");
        ip(&["addr", "add", &outer_cidr, "dev", &outer])?;
        ip(&["link", "set", &outer, "up"])?;
        let inner_cidr = format!("{}/24", host.ip);
        ip(&[
            "-n",
            &host.ns,
            "addr",
            "add",
            &inner_cidr,
            "dev",
            &host.inner,
        ])?;
        ip(&["-n", &host.ns, "link", "set", &host.inner, "up"])?;
        ip(&["-n", &host.ns, "link", "set", "lo", "up"])?;
        Ok(host)
    }

    /// `program ARGS` inside the namespace.
    fn process(&self, program: &str, args: &[&str]) -> ProcessBuilder {
        ProcessBuilder::new("ip")
            .args(["netns", "exec", &self.ns, program])
            .args(args.iter().copied())
    }
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth end inside it, and with it the pair.
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(keel_network_namespaces, keel_python3)),
    ignore = "needs network namespaces (ip netns, as root; .ci/run runs as root) and python3"
)]
async fn a_turn_runs_on_an_exec_server_across_a_network_link_over_tls() -> anyhow::Result<()> {
    let host = RemoteHost::create().map_err(anyhow::Error::msg)?;
    let ws = tempfile::tempdir()?;
    let secrets = tempfile::tempdir()?;
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "network-env-token")?;
    let certified = rcgen::generate_simple_self_signed(vec![host.ip.clone()])?;
    let (cert, key) = (
        secrets.path().join("cert.pem"),
        secrets.path().join("key.pem"),
    );
    std::fs::write(&cert, certified.cert.pem())?;
    std::fs::write(&key, certified.key_pair.serialize_pem())?;

    // The server: on the namespace's address (so it must ask for a token), in a mount
    // namespace whose workspace is a tmpfs the engine's host does not see.
    let script = format!(
        "mount -t tmpfs keel-remote-root '{ws}' && exec '{keel}' exec-server --listen \
         ws://{ip}:0 --ws-auth capability-token --ws-token-file '{token}'",
        ws = ws.path().display(),
        keel = env!("CARGO_BIN_EXE_keel"),
        ip = host.ip,
        token = token_file.display(),
    );
    let mut server = host
        .process(
            "unshare",
            &["--mount", "--propagation", "private", "sh", "-c", &script],
        )
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let backend = server.websocket_address().await?;
    let (backend_host, backend_port) = backend
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("no port in {backend}"))?;
    let proxy_script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "tls_proxy.py",
    ]
    .iter()
    .collect();
    let (cert_path, key_path) = (cert.to_string_lossy(), key.to_string_lossy());
    let mut proxy = host
        .process(
            "python3",
            &[
                &proxy_script.to_string_lossy(),
                &cert_path,
                &key_path,
                &host.ip,
                backend_host,
                backend_port,
            ],
        )
        .spawn()?;
    let listening = proxy
        .wait_for_stderr_line("the terminator's address", |line| {
            line.contains("listening on tls://")
        })
        .await?;
    let port = listening.trim().rsplit(':').next().unwrap_or_default();
    let url = format!("wss://{}:{port}", host.ip);

    let add = "*** Begin Patch\n*** Add File: hello.txt\n+across the link\n*** End Patch\n";
    let config = [
        ("exec_server_url", toml::Value::from(url)),
        ("exec_server_auth_token_env", "KEEL_TEST_EXEC_TOKEN".into()),
        ("sandbox_mode", "workspace-write".into()),
    ];
    let trust = cert.to_string_lossy().into_owned();
    let run = run_with_config(
        ws.path(),
        vec![
            Turn::new([apply_patch_call("p1", add)]),
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": "cat hello.txt && ls /sys/class/net", "login": false}),
            )]),
        ],
        &[
            ("KEEL_TEST_EXEC_TOKEN", "network-env-token"),
            ("SSL_CERT_FILE", &trust),
        ],
        &config,
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let patched = run.output("p1");
    assert!(!patched.contains("failed"), "{patched}");
    let shown = run.output("c1");
    assert!(shown.contains("across the link"), "{shown}");
    // The command saw the namespace's interface: it ran on the other side of the link.
    assert!(shown.contains(&host.inner), "{shown}");
    assert!(!ws.path().join("hello.txt").exists());
    server
        .wait_for_stderr_line("the command ran on the server", |line| {
            line.contains("started") && line.contains("cat hello.txt")
        })
        .await?;

    // A wrong token is turned away by the server before anything runs.
    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c2",
            json!({"cmd": "echo must-not-run", "login": false}),
        )])],
        &[
            ("KEEL_TEST_EXEC_TOKEN", "wrong-token"),
            ("SSL_CERT_FILE", &trust),
        ],
        &config,
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let refused = run.output("c2");
    assert!(
        refused.contains("could not reach the exec-server"),
        "{refused}"
    );
    assert!(refused.contains("401"), "{refused}");
    assert!(!refused.contains("must-not-run\n"), "{refused}");
    Ok(())
}
