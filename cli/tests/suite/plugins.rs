//! `keel plugin`: a marketplace in a local directory and one in a git repository, a plugin
//! installed from it bringing its skill, MCP server and hook into `keel exec` (the hook only
//! once trusted), disabled in `config.toml`, and removed; broken manifests refused naming the
//! file and the field. Through the real binary against the mock model.

use std::path::{Path, PathBuf};

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::{Value, json};

use super::exec::{keel, keel_exec};

/// `keel plugin ARGS`; its stdout, or an error with both streams.
async fn plugin(home: &Path, args: &[&str]) -> anyhow::Result<String> {
    let mut full = vec!["plugin"];
    full.extend_from_slice(args);
    let out = keel(home, home, &full, &[], None).await?;
    anyhow::ensure!(
        out.code == Some(0),
        "keel plugin {args:?} failed ({:?}):\n{}\n{}",
        out.code,
        out.stdout,
        out.stderr
    );
    Ok(out.stdout)
}

/// `keel plugin ARGS` that must fail; its stderr and exit code.
async fn plugin_refused(home: &Path, args: &[&str]) -> anyhow::Result<(String, Option<i32>)> {
    let mut full = vec!["plugin"];
    full.extend_from_slice(args);
    let out = keel(home, home, &full, &[], None).await?;
    anyhow::ensure!(
        out.code != Some(0),
        "keel plugin {args:?} succeeded: {}",
        out.stdout
    );
    Ok((out.stderr, out.code))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// A marketplace `mk1` (Codex's manifest location) listing plugin `alpha`: a skill, an MCP
/// server (Keel's own, `keel mcp-server`) and a `UserPromptSubmit` hook that records the
/// plugin variables it sees in `marker`.
fn marketplace(dir: &Path, marker: &Path) -> anyhow::Result<()> {
    write(
        &dir.join(".agents/plugins/marketplace.json"),
        &json!({"name": "mk1", "owner": {"name": "someone"}, "plugins": [
            {"name": "alpha", "source": "./plugins/alpha", "category": "dev"},
        ]})
        .to_string(),
    )?;
    let plugin = dir.join("plugins/alpha");
    write(
        &plugin.join(".claude-plugin/plugin.json"),
        &json!({"name": "alpha", "version": "1.0.0", "description": "Alpha tools"}).to_string(),
    )?;
    write(
        &plugin.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets people warmly.\n---\nSay hello.\n",
    )?;
    write(
        &plugin.join(".mcp.json"),
        &json!({"mcpServers": {"alpha-mcp": {
            "command": env!("CARGO_BIN_EXE_keel"), "args": ["mcp-server"]
        }}})
        .to_string(),
    )?;
    write(
        &plugin.join("hooks/hooks.json"),
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
        "command": format!(
            "echo \"${{CLAUDE_PLUGIN_ROOT}} $CLAUDE_PLUGIN_DATA\" > {}",
            marker.display()
        )}]}]}})
        .to_string(),
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_from_a_local_marketplace_brings_its_skill_mcp_server_and_hook()
-> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("first")]),
        Turn::new([assistant_message("second")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let market = tempfile::tempdir()?;
    let marker = ws.path().join("hook-saw");
    marketplace(market.path(), &marker)?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let home = home.path();
    let market_dir = market.path().display().to_string();
    // A link in the plugin to a file outside it: copied as a link, never followed, so the
    // install does not pull the outside file's content into the Keel home.
    let outside = tempfile::tempdir()?;
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside")?;
    std::os::unix::fs::symlink(&secret, market.path().join("plugins/alpha/linked"))?;

    let added = plugin(home, &["marketplace", "add", &market_dir]).await?;
    assert!(
        added.starts_with(&format!("Added marketplace `mk1` from {market_dir}.")),
        "{added}"
    );
    let again = plugin(home, &["marketplace", "add", &market_dir]).await?;
    assert!(again.contains("is already added"), "{again}");
    let listed = plugin(home, &["list"]).await?;
    assert!(listed.contains("alpha@mk1  not installed"), "{listed}");

    let installed = plugin(home, &["add", "alpha@mk1"]).await?;
    let root: PathBuf = home.join("plugins/cache/mk1/alpha/1.0.0");
    assert!(
        installed.contains(&format!("Installed plugin root: {}", root.display())),
        "{installed}"
    );
    assert!(root.join("skills/greet/SKILL.md").is_file());
    assert!(
        std::fs::symlink_metadata(root.join("linked"))?
            .file_type()
            .is_symlink(),
        "a link is copied as a link"
    );
    let config = std::fs::read_to_string(home.join("config.toml"))?;
    assert!(
        config.contains("[plugins.\"alpha@mk1\"]") && config.contains("[marketplaces.mk1]"),
        "{config}"
    );
    let json_list: Value = serde_json::from_str(&plugin(home, &["list", "--json"]).await?)?;
    assert_eq!(json_list["installed"][0]["pluginId"], "alpha@mk1");
    assert_eq!(json_list["installed"][0]["version"], "1.0.0");
    assert_eq!(json_list["installed"][0]["enabled"], true);

    // A session: the skill is offered under the plugin's name, the MCP server's tools too;
    // the hook is held back, untrusted, and said so.
    let out = keel_exec(home, ws.path(), &["hello"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    let first = requests.first().expect("a model request");
    let body = first.body.to_string();
    assert!(
        body.contains("- alpha:greet: Greets people warmly."),
        "{body}"
    );
    assert!(
        body.contains("This tool is part of plugin `alpha`."),
        "the model is told which plugin a tool comes with: {body}"
    );
    assert!(
        first
            .tool_names()
            .iter()
            .any(|name| name.starts_with("mcp__alpha-mcp__")),
        "{:?}",
        first.tool_names()
    );
    assert!(
        out.stderr.contains("is not trusted")
            && out
                .stderr
                .contains("alpha@mk1:hooks/hooks.json:user_prompt_submit:0:0"),
        "{}",
        out.stderr
    );
    assert!(!marker.exists(), "an untrusted plugin hook ran");

    // Trusted as a client records it: it runs, told where the plugin lives.
    let hooks = super::hooks::trust_all(home, ws.path()).await?;
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["source"], "plugin");
    assert_eq!(hooks[0]["pluginId"], "alpha@mk1");
    let out = keel_exec(home, ws.path(), &["again"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let saw = std::fs::read_to_string(&marker)?;
    assert_eq!(
        saw.trim(),
        format!(
            "{} {}",
            root.display(),
            home.join("plugins/data/alpha-mk1").display()
        )
    );

    // Turned off in config.toml: listed so; removed: gone with its copy.
    let config = std::fs::read_to_string(home.join("config.toml"))?;
    std::fs::write(
        home.join("config.toml"),
        config.replace(
            "[plugins.\"alpha@mk1\"]\nenabled = true",
            "[plugins.\"alpha@mk1\"]\nenabled = false",
        ),
    )?;
    let listed = plugin(home, &["list"]).await?;
    assert!(
        listed.contains("alpha@mk1  installed, disabled  1.0.0"),
        "{listed}"
    );
    let removed = plugin(home, &["remove", "alpha", "--marketplace", "mk1"]).await?;
    assert_eq!(removed, "Removed plugin `alpha` from marketplace `mk1`.\n");
    assert!(!root.exists());
    assert!(!std::fs::read_to_string(home.join("config.toml"))?.contains("alpha@mk1\"]"));
    let gone = plugin(home, &["marketplace", "remove", "mk1"]).await?;
    assert!(gone.contains("Removed marketplace `mk1`."), "{gone}");
    assert_eq!(
        plugin(home, &["marketplace", "list"]).await?,
        "No plugin marketplaces in scope.\n"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_manifests_and_bad_names_are_refused_naming_the_file_and_field() -> anyhow::Result<()>
{
    let home = tempfile::tempdir()?;
    let home = home.path();
    let dirs = tempfile::tempdir()?;

    let empty = dirs.path().join("empty");
    std::fs::create_dir_all(&empty)?;
    let (stderr, code) =
        plugin_refused(home, &["marketplace", "add", &empty.display().to_string()]).await?;
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("marketplace root does not contain a supported manifest"),
        "{stderr}"
    );

    let nameless = dirs.path().join("nameless");
    let manifest = nameless.join(".claude-plugin/marketplace.json");
    write(&manifest, r#"{"plugins": []}"#)?;
    let (stderr, _) = plugin_refused(
        home,
        &["marketplace", "add", &nameless.display().to_string()],
    )
    .await?;
    assert!(
        stderr.contains(&format!(
            "invalid marketplace file `{}`",
            manifest.display()
        )) && stderr.contains("missing field `name`"),
        "{stderr}"
    );

    let mismatched = dirs.path().join("mismatched");
    write(
        &mismatched.join(".agents/plugins/marketplace.json"),
        r#"{"name": "mk2", "plugins": [{"name": "beta", "source": {"source": "local", "path": "./beta"}},
            {"name": "remote", "source": {"source": "url", "url": "https://example.com/r.git"}}]}"#,
    )?;
    let plugin_manifest = mismatched.join("beta/.codex-plugin/plugin.json");
    write(&plugin_manifest, r#"{"name": "other", "version": 7}"#)?;
    plugin(
        home,
        &["marketplace", "add", &mismatched.display().to_string()],
    )
    .await?;
    let (stderr, _) = plugin_refused(home, &["add", "beta@mk2"]).await?;
    assert!(
        stderr.contains(&format!(
            "invalid plugin manifest `{}`",
            plugin_manifest.display()
        )) && stderr.contains("name: `other` does not match"),
        "{stderr}"
    );
    let (stderr, _) = plugin_refused(home, &["add", "remote@mk2"]).await?;
    assert!(stderr.contains("comes from a url source"), "{stderr}");
    assert!(!home.join("plugins/cache/mk2").join("remote").exists());

    let (stderr, code) = plugin_refused(home, &["add", "beta"]).await?;
    assert_eq!(code, Some(2), "a usage error");
    assert!(
        stderr.contains("plugin requires --marketplace unless passed as <plugin>@<marketplace>"),
        "{stderr}"
    );
    let (stderr, _) = plugin_refused(home, &["add", "nope@mk2"]).await?;
    assert!(
        stderr.contains("plugin `nope` was not found in marketplace `mk2`"),
        "{stderr}"
    );
    let (stderr, _) =
        plugin_refused(home, &["marketplace", "add", "file:///tmp/somewhere"]).await?;
    assert!(
        stderr.contains("invalid marketplace source format"),
        "{stderr}"
    );
    let (stderr, _) = plugin_refused(
        home,
        &[
            "marketplace",
            "add",
            &mismatched.display().to_string(),
            "--ref",
            "main",
        ],
    )
    .await?;
    assert!(
        stderr.contains("--ref is only supported for git marketplace sources"),
        "{stderr}"
    );
    Ok(())
}

/// Runs `git ARGS` in `dir`.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "git {args:?} failed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_marketplace_is_cloned_upgraded_and_removed() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let home = home.path();
    let dirs = tempfile::tempdir()?;
    let repo = dirs.path().join("repo");
    let marker = dirs.path().join("unused");
    marketplace(&repo, &marker)?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-q", "-m", "first"])?;
    // An https URL, redirected to the local repository (no network), as git users do.
    let gitconfig = dirs.path().join("gitconfig");
    std::fs::write(
        &gitconfig,
        format!(
            "[url \"{}\"]\n\tinsteadOf = https://git.example.test/mk.git\n",
            repo.display()
        ),
    )?;
    let env = [("GIT_CONFIG_GLOBAL", gitconfig.to_str().unwrap_or_default())];
    let run = |args: &'static [&'static str]| {
        let mut full = vec!["plugin"];
        full.extend_from_slice(args);
        async move { keel(home, home, &full, &env, None).await }
    };
    let added = run(&["marketplace", "add", "https://git.example.test/mk.git"]).await?;
    assert_eq!(added.code, Some(0), "{}", added.stderr);
    let clone = home.join(".tmp/marketplaces/mk1");
    assert!(
        added
            .stdout
            .contains(&format!("Installed marketplace root: {}", clone.display())),
        "{}",
        added.stdout
    );
    assert!(clone.join(".agents/plugins/marketplace.json").is_file());
    let config = std::fs::read_to_string(home.join("config.toml"))?;
    assert!(
        config.contains("source_type = \"git\"")
            && config.contains("source = \"https://git.example.test/mk.git\""),
        "{config}"
    );
    let installed = run(&["add", "alpha@mk1"]).await?;
    assert_eq!(installed.code, Some(0), "{}", installed.stderr);

    // A new commit upstream: the upgrade moves the clone and refreshes the installed plugin.
    write(
        &repo.join("plugins/alpha/.claude-plugin/plugin.json"),
        &json!({"name": "alpha", "version": "2.0.0"}).to_string(),
    )?;
    git(&repo, &["commit", "-q", "-am", "second"])?;
    let upgraded = run(&["marketplace", "upgrade", "--json"]).await?;
    assert_eq!(upgraded.code, Some(0), "{}", upgraded.stderr);
    let upgraded: Value = serde_json::from_str(&upgraded.stdout)?;
    assert_eq!(upgraded["selectedMarketplaces"], json!(["mk1"]));
    assert_eq!(
        upgraded["upgradedRoots"],
        json!([clone.display().to_string()])
    );
    assert!(home.join("plugins/cache/mk1/alpha/2.0.0").is_dir());
    assert!(!home.join("plugins/cache/mk1/alpha/1.0.0").exists());

    let removed = run(&["marketplace", "remove", "mk1", "--json"]).await?;
    assert_eq!(removed.code, Some(0), "{}", removed.stderr);
    assert!(!clone.exists(), "the clone goes with the marketplace");
    // Installed plugins stay until removed (Codex's behaviour).
    assert!(home.join("plugins/cache/mk1/alpha/2.0.0").is_dir());
    Ok(())
}
