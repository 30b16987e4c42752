//! What keeping threads in PostgreSQL costs next to rollout files, and what a balancer in
//! front of an app-server costs (results in docs/benchmarks.md, section "Shared threads").
//! Overhead on one machine, not scale: everything (client, server, database, balancer, mock
//! model) runs on loopback here. Not part of `cargo test`.
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p keel-app-server --bench shared_threads -- \
//!     --keel /work/target-bench/release/keel [--threads 100000] [--runs 20] [--warmup 2]
//! ```
//!
//! Workload: N recorded threads, each a short session (session meta, `task_started`, a user
//! message, an agent message, `task_complete`), about 270 a day; one in 1000 mentions a rare
//! word. The same lines go to both stores:
//!
//! - **files**: N rollout files under a fresh Keel home's `sessions/YYYY/MM/DD/`, the day
//!   directories dated an hour back (as a home's are, today's aside); the server's first
//!   `thread/list` builds the SQLite index ("cold", reported on its own);
//! - **PostgreSQL**: a throwaway cluster; one `keel app-server --thread-store` start creates
//!   the schema and is stopped, the rows are inserted by SQL (`generate_series`), the tables
//!   analysed, and the server started again.
//!
//! Against each, one `keel app-server --listen ws://127.0.0.1:0` (token auth) and one
//! websocket client; each run times `thread/list` (first page of 25, the default filter),
//! `thread/search` for the rare word (first page), `thread/read` of one thread with its
//! turns, and a new thread's turn (`thread/start`, then `turn/start` until `turn/completed`,
//! the mock model answering one message). Then the server's `VmRSS`. Last, HAProxy goes in
//! front of the PostgreSQL store's server and `thread/list` and the turn are timed through it
//! and directly, alternating. Prints each run on stderr and markdown tables of medians (with
//! min–max) on stdout.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use keel_test_support::{
    Haproxy, JsonLinesProcess, MockModelServer, PostgresCluster, ProcessBuilder, Script, Turn,
    assistant_message, write_config,
};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// How long any one answer or notification may take.
const WAIT: Duration = Duration::from_secs(120);
/// How long the first listing may take (it builds the file store's index).
const COLD_WAIT: Duration = Duration::from_secs(1800);
/// The servers' capability token.
const TOKEN: &str = "shared-threads-bench-token";
/// The word one thread in 1000 mentions.
const RARE: &str = "marmalade";
/// Threads recorded per day.
const PER_DAY: usize = 270;
/// Thread `n`'s id is this and `n` on 12 digits.
const ID_PREFIX: &str = "5eed0000-0000-7000-8000-";
/// Every thread's agent message.
const ANSWER: &str = "Built and deployed; the service answers on port 8080.";

/// A recorded thread's lines; `@STAMP`, `@ID`, `@N` and `@QUESTION` are filled in per
/// thread (by Rust for the files, by SQL for PostgreSQL), `@ANSWER` is [`ANSWER`].
const LINES: [&str; 5] = [
    r#"{"timestamp":"@STAMP","type":"session_meta","payload":{"id":"@ID","timestamp":"@STAMP","cwd":"/work/project","model":"gpt-5","originator":"keel","cli_version":"0.1.0","source":"vscode","model_provider":"openai"}}"#,
    r#"{"timestamp":"@STAMP","type":"event_msg","payload":{"type":"task_started","turn_id":"t@N","model_context_window":null}}"#,
    r#"{"timestamp":"@STAMP","type":"event_msg","payload":{"type":"user_message","message":"@QUESTION","images":[]}}"#,
    r#"{"timestamp":"@STAMP","type":"event_msg","payload":{"type":"agent_message","message":"@ANSWER"}}"#,
    r#"{"timestamp":"@STAMP","type":"event_msg","payload":{"type":"task_complete","turn_id":"t@N","last_agent_message":null}}"#,
];

struct Args {
    keel: PathBuf,
    threads: usize,
    runs: usize,
    warmup: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut parsed = Args {
        keel: PathBuf::from("target/release/keel"),
        threads: 100_000,
        runs: 20,
        warmup: 2,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(arg) = raw.next() {
        match arg.as_str() {
            "--keel" => parsed.keel = raw.next().context("--keel needs a path")?.into(),
            "--threads" => {
                parsed.threads = raw.next().context("--threads needs a number")?.parse()?;
            }
            "--runs" => parsed.runs = raw.next().context("--runs needs a number")?.parse()?,
            "--warmup" => parsed.warmup = raw.next().context("--warmup needs a number")?.parse()?,
            // `cargo bench` passes `--bench`.
            "--bench" => {}
            other => bail!("unknown argument {other}"),
        }
    }
    if parsed.runs == 0 || parsed.threads < 1000 {
        bail!("--runs must be at least 1 and --threads at least 1000");
    }
    parsed.keel = std::path::absolute(&parsed.keel)?;
    Ok(parsed)
}

/// Thread `n`'s id.
fn thread_id(n: usize) -> String {
    format!("{ID_PREFIX}{n:012}")
}

/// Thread `n`'s first message.
fn question(n: usize) -> String {
    let rare = if n.is_multiple_of(1000) {
        format!(" with {RARE}")
    } else {
        String::new()
    };
    format!("question {n}: deploy the service{rare}")
}

/// When thread `n` was recorded: [`PER_DAY`] a day from 2024-01-01, five minutes apart.
fn recorded_at(n: usize) -> anyhow::Result<chrono::NaiveDateTime> {
    let start = chrono::NaiveDate::from_ymd_opt(2024, 1, 1)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .context("the first day")?;
    let days = i64::try_from(n / PER_DAY)?;
    let minutes = i64::try_from((n % PER_DAY) * 5)?;
    Ok(start + chrono::Duration::days(days) + chrono::Duration::minutes(minutes))
}

// ---------------------------------------------------------------------------------------
// Seeding

/// Writes `count` rollout files under `home/sessions/`, then dates the day directories an
/// hour back.
fn write_rollouts(home: &Path, count: usize) -> anyhow::Result<()> {
    use std::io::Write;
    let sessions = home.join("sessions");
    for n in 0..count {
        let at = recorded_at(n)?;
        let id = thread_id(n);
        let stamp = at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let question = question(n);
        let mut text = String::new();
        for line in LINES {
            text.push_str(
                &line
                    .replace("@STAMP", &stamp)
                    .replace("@ID", &id)
                    .replace("@QUESTION", &question)
                    .replace("@ANSWER", ANSWER)
                    .replace("@N", &n.to_string()),
            );
            text.push('\n');
        }
        let dir = sessions.join(at.format("%Y/%m/%d").to_string());
        if n % PER_DAY == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let name = format!("rollout-{}-{id}.jsonl", at.format("%Y-%m-%dT%H-%M-%S"));
        std::fs::File::create(dir.join(name))?.write_all(text.as_bytes())?;
    }
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    let mut stack = vec![sessions];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            }
        }
        std::fs::File::open(&dir)?.set_modified(past)?;
    }
    Ok(())
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

/// `template` as an SQL expression over the `seed` table's columns.
fn sql_line(template: &str) -> String {
    let text = template
        .replace("@STAMP", "' || stamp || '")
        .replace("@ID", "' || id || '")
        .replace("@QUESTION", "' || question || '")
        .replace("@ANSWER", ANSWER)
        .replace("@N", "' || n || '");
    format!("'{text}'")
}

/// Inserts `count` threads and their items, as [`write_rollouts`] writes them.
fn seed_postgres(cluster: &PostgresCluster, count: usize) -> anyhow::Result<()> {
    let last = count - 1;
    let items: Vec<String> = LINES
        .iter()
        .enumerate()
        .map(|(seq, template)| {
            let message = match seq {
                2 => "question".to_string(),
                3 => format!("'{ANSWER}'"),
                _ => "NULL".to_string(),
            };
            format!(
                "SELECT id, {seq}, {}, {message} FROM seed",
                sql_line(template)
            )
        })
        .collect();
    let sql = format!(
        "CREATE TEMP TABLE seed AS
         SELECT n, id, ts, to_char(ts, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS stamp,
             'question ' || n || ': deploy the service'
                 || CASE WHEN n % 1000 = 0 THEN ' with {RARE}' ELSE '' END AS question
         FROM (SELECT n, '{ID_PREFIX}' || lpad(n::text, 12, '0') AS id,
                   timestamp '2024-01-01' + (n / {PER_DAY}) * interval '1 day'
                       + (n % {PER_DAY}) * interval '5 minutes' AS ts
               FROM generate_series(0, {last}) AS n) AS numbered;
         INSERT INTO keel_threads (id, list_key, created_at, updated_at, cwd, model,
             model_provider, source_json, source_kind, preview, has_turns, item_count)
         SELECT id, 'rollout-' || to_char(ts, 'YYYY-MM-DD\"T\"HH24-MI-SS') || '-' || id || '.jsonl',
             stamp, stamp, '/work/project', 'gpt-5', 'openai', '\"vscode\"', 'vscode', question,
             true, 5
         FROM seed;
         INSERT INTO keel_thread_items (thread_id, seq, line, message) {};",
        items.join(" UNION ALL ")
    );
    cluster.psql(&sql)?;
    cluster.psql("VACUUM ANALYZE keel_threads")?;
    cluster.psql("VACUUM ANALYZE keel_thread_items")?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Servers and clients

/// One `keel app-server` on a websocket with token auth.
struct Server {
    process: JsonLinesProcess,
    address: String,
}

async fn start_server(
    keel: &Path,
    home: &Path,
    workspace: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<Server> {
    let token = home.join("ws-token");
    std::fs::write(&token, TOKEN)?;
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let mut builder = ProcessBuilder::new(keel)
        .arg("app-server")
        .args(["--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token.as_os_str())
        .args(extra.iter().copied())
        .home_path(home)
        .home_var("KEEL_HOME")
        .cwd(workspace)
        .env_remove("RUST_LOG")
        .timeout(WAIT);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    let mut process = builder.spawn()?;
    let address = process.websocket_address().await?;
    Ok(Server { process, address })
}

impl Server {
    /// `VmRSS`, in KiB.
    fn rss_kib(&self) -> anyhow::Result<u64> {
        let pid = self.process.pid().context("the server exited")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS")
    }

    /// Stops the server as a service manager would, and waits for it.
    async fn stop(mut self) -> anyhow::Result<()> {
        self.process.signal(nix::sys::signal::Signal::SIGTERM)?;
        self.process.wait().await?;
        Ok(())
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A websocket client, initialized.
struct Client {
    socket: Socket,
    next_id: u64,
}

impl Client {
    async fn connect(address: &str) -> anyhow::Result<Self> {
        let mut request = format!("ws://{address}/").into_client_request()?;
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse()?);
        let (socket, _) = tokio_tungstenite::connect_async(request).await?;
        let mut client = Self { socket, next_id: 0 };
        client
            .call(
                "initialize",
                json!({"clientInfo": {"name": "shared-threads-bench", "version": "1"}}),
            )
            .await?;
        client
            .socket
            .send(Message::Text(
                json!({"method": "initialized"}).to_string().into(),
            ))
            .await?;
        Ok(client)
    }

    /// Sends a request and returns its result.
    async fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.call_within(method, params, WAIT).await
    }

    async fn call_within(
        &mut self,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"id": id, "method": method, "params": params});
        self.socket
            .send(Message::Text(request.to_string().into()))
            .await?;
        let mut answer = self.until(wait, |message| message["id"] == id).await?;
        if answer.get("error").is_some() {
            bail!("{method} failed: {answer}");
        }
        Ok(answer["result"].take())
    }

    /// Reads until a message `done` accepts.
    async fn until(
        &mut self,
        wait: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .context("no answer in time")?
                .context("the connection closed")??;
            if let Message::Text(text) = frame {
                let message: Value = serde_json::from_str(text.as_str())?;
                if done(&message) {
                    return Ok(message);
                }
            }
        }
    }

    /// Times `thread/list`, first page of 25.
    async fn list(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let page = self.call("thread/list", json!({"limit": 25})).await?;
        let elapsed = started.elapsed();
        let shown = page["data"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(shown == 25, "thread/list showed {shown} threads: {page}");
        Ok(elapsed)
    }

    /// Times `thread/search` for the rare word, first page (`expected` threads).
    async fn search(&mut self, expected: usize) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let page = self
            .call("thread/search", json!({"searchTerm": RARE}))
            .await?;
        let elapsed = started.elapsed();
        let found = page["data"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(found == expected, "thread/search found {found}: {page}");
        Ok(elapsed)
    }

    /// Times `thread/read` of thread `id` with its turns.
    async fn read(&mut self, id: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let read = self
            .call("thread/read", json!({"threadId": id, "includeTurns": true}))
            .await?;
        let elapsed = started.elapsed();
        let turns = read["thread"]["turns"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(turns == 1, "thread/read showed {turns} turns: {read}");
        Ok(elapsed)
    }

    /// Times a new thread's first turn: `thread/start` answered, and from `thread/start`
    /// to `turn/completed`.
    async fn turn(&mut self, workspace: &Path) -> anyhow::Result<(Duration, Duration)> {
        let started = Instant::now();
        let thread = self.call("thread/start", json!({"cwd": workspace})).await?;
        let answered = started.elapsed();
        let thread_id = thread["thread"]["id"]
            .as_str()
            .with_context(|| format!("no thread id: {thread}"))?
            .to_string();
        self.call(
            "turn/start",
            json!({"threadId": thread_id,
                   "input": [{"type": "text", "text": "deploy the service"}]}),
        )
        .await?;
        let completed = self
            .until(WAIT, |message| {
                message["method"] == "turn/completed" && message["params"]["threadId"] == thread_id
            })
            .await?;
        let elapsed = started.elapsed();
        anyhow::ensure!(
            completed["params"]["turn"]["status"] == "completed",
            "the turn did not complete: {completed}"
        );
        Ok((answered, elapsed))
    }
}

// ---------------------------------------------------------------------------------------
// Figures

/// Medians and ranges of one series.
#[derive(Default)]
struct Series(Vec<Duration>);

impl Series {
    fn push(&mut self, value: Duration) {
        self.0.push(value);
    }

    fn median(&self) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }

    /// "median (min–max)".
    fn shown(&self) -> String {
        let min = self.0.iter().min().copied().unwrap_or_default();
        let max = self.0.iter().max().copied().unwrap_or_default();
        format!(
            "{} ms ({}–{})",
            number(self.median()),
            number(min),
            number(max)
        )
    }
}

/// Milliseconds, to three significant figures or so.
fn number(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

fn ms(duration: Duration) -> String {
    if duration >= Duration::from_secs(1) {
        format!("{:.2} s", duration.as_secs_f64())
    } else {
        format!("{} ms", number(duration))
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// What one store measured.
struct StoreFigures {
    seeded: Duration,
    first_list: Duration,
    list: Series,
    search: Series,
    read: Series,
    start: Series,
    turn: Series,
    /// `VmRSS` right after start, and after the runs, in KiB.
    rss_kib: (u64, u64),
    stored: String,
}

/// The runs of part 1 against one server.
async fn measure_store(
    label: &str,
    server: &Server,
    args: &Args,
    workspace: &Path,
) -> anyhow::Result<(Duration, [Series; 5])> {
    let mut client = Client::connect(&server.address).await?;
    let started = Instant::now();
    let page = client
        .call_within("thread/list", json!({"limit": 25}), COLD_WAIT)
        .await?;
    let first_list = started.elapsed();
    anyhow::ensure!(
        page["data"].as_array().map_or(0, Vec::len) == 25,
        "the first listing: {page}"
    );
    eprintln!("{label}: first thread/list {}", ms(first_list));
    let middle = thread_id(args.threads / 2);
    let mut series: [Series; 5] = Default::default();
    for run in 0..args.warmup + args.runs {
        let list = client.list().await?;
        let search = client.search(args.threads.div_ceil(1000).min(25)).await?;
        let read = client.read(&middle).await?;
        let (start, turn) = client.turn(workspace).await?;
        eprintln!(
            "{label} run {run}: list {}, search {}, read {}, thread/start {}, turn {}",
            ms(list),
            ms(search),
            ms(read),
            ms(start),
            ms(turn)
        );
        if run >= args.warmup {
            for (series, value) in series.iter_mut().zip([list, search, read, start, turn]) {
                series.push(value);
            }
        }
    }
    Ok((first_list, series))
}

fn figures(
    seeded: Duration,
    measured: (Duration, [Series; 5]),
    rss_kib: (u64, u64),
    stored: String,
) -> StoreFigures {
    let (first_list, [list, search, read, start, turn]) = measured;
    StoreFigures {
        seeded,
        first_list,
        list,
        search,
        read,
        start,
        turn,
        rss_kib,
        stored,
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    anyhow::ensure!(
        args.keel.is_file(),
        "no keel binary at {} (build it, or pass --keel)",
        args.keel.display()
    );
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message(
            "Deployed; it answers on port 8080.",
        )])]))
        .repeat(true)
        .start()
        .await?;
    let workspace = tempfile::tempdir()?;

    // Files: rollouts under a fresh home; the first listing builds the index.
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        std::iter::empty::<(&str, toml::Value)>(),
    )?;
    let started = Instant::now();
    tokio::task::block_in_place(|| write_rollouts(home.path(), args.threads))?;
    let written = started.elapsed();
    eprintln!(
        "files: {} rollouts written in {}",
        args.threads,
        ms(written)
    );
    let server = start_server(&args.keel, home.path(), workspace.path(), &[], &[]).await?;
    let rss_started = server.rss_kib()?;
    let measured = measure_store("files", &server, &args, workspace.path()).await?;
    let rss = server.rss_kib()?;
    server.stop().await?;
    let rollouts = bytes_under(&home.path().join("sessions"))?;
    let index: u64 = [
        "thread-index.sqlite",
        "thread-index.sqlite-wal",
        "thread-index.sqlite-shm",
    ]
    .iter()
    .filter_map(|name| std::fs::metadata(home.path().join(name)).ok())
    .map(|meta| meta.len())
    .sum();
    let files = figures(
        written,
        measured,
        (rss_started, rss),
        format!("{} rollouts + {} index", mib(rollouts), mib(index)),
    );
    drop(home);

    // PostgreSQL: the schema from a first start, the rows by SQL, then the measured server.
    let cluster = PostgresCluster::start()?.context(
        "PostgreSQL is not installed (Debian's postgresql package, or set KEEL_POSTGRES_BIN)",
    )?;
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        std::iter::empty::<(&str, toml::Value)>(),
    )?;
    let store = cluster.url();
    let store_args = [
        "--thread-store",
        store.as_str(),
        "--server-name",
        "bench",
        "--thread-lease-seconds",
        "30",
    ];
    let env = [("PGPASSWORD", cluster.password())];
    start_server(&args.keel, home.path(), workspace.path(), &store_args, &env)
        .await?
        .stop()
        .await?;
    let started = Instant::now();
    tokio::task::block_in_place(|| seed_postgres(&cluster, args.threads))?;
    let seeded = started.elapsed();
    eprintln!(
        "PostgreSQL: {} threads inserted in {}",
        args.threads,
        ms(seeded)
    );
    let server = start_server(&args.keel, home.path(), workspace.path(), &store_args, &env).await?;
    let rss_started = server.rss_kib()?;
    let measured = measure_store("PostgreSQL", &server, &args, workspace.path()).await?;
    let rss = server.rss_kib()?;
    let size: u64 = tokio::task::block_in_place(|| {
        cluster.psql(
            "SELECT pg_total_relation_size('keel_threads')
                  + pg_total_relation_size('keel_thread_items')
                  + pg_total_relation_size('keel_thread_notes')",
        )
    })?
    .parse()?;
    let postgres = figures(
        seeded,
        measured,
        (rss_started, rss),
        format!("{} tables and indexes", mib(size)),
    );

    // The balancer: the same server, through HAProxy and directly, alternating.
    let balancer = Haproxy::start(std::slice::from_ref(&server.address)).await?;
    let mut clients = [
        Client::connect(&server.address).await?,
        Client::connect(balancer.address()).await?,
    ];
    let middle = thread_id(args.threads / 2);
    // [direct, through the balancer] × [list, read, turn].
    let mut paths: [[Series; 3]; 2] = Default::default();
    for run in 0..args.warmup + args.runs {
        // Who goes first alternates, so neither always meets a warmer server.
        let order: [usize; 2] = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut measured = [[Duration::ZERO; 3]; 2];
        for which in order {
            let client = &mut clients[which];
            let list = client.list().await?;
            let read = client.read(&middle).await?;
            let (_, turn) = client.turn(workspace.path()).await?;
            measured[which] = [list, read, turn];
        }
        eprintln!(
            "balancer run {run}: list {} / {}, read {} / {}, turn {} / {} (direct / through)",
            ms(measured[0][0]),
            ms(measured[1][0]),
            ms(measured[0][1]),
            ms(measured[1][1]),
            ms(measured[0][2]),
            ms(measured[1][2])
        );
        if run >= args.warmup {
            for (path, values) in paths.iter_mut().zip(measured) {
                for (series, value) in path.iter_mut().zip(values) {
                    series.push(value);
                }
            }
        }
    }
    drop(clients);
    drop(balancer);
    server.stop().await?;

    print_tables(&args, &files, &postgres, &paths);
    Ok(())
}

fn print_tables(
    args: &Args,
    files: &StoreFigures,
    postgres: &StoreFigures,
    paths: &[[Series; 3]; 2],
) {
    let threads = args.threads;
    println!(
        "| {threads} threads; median (min–max) of {} runs | files (SQLite index) | PostgreSQL |",
        args.runs
    );
    println!("| --- | ---: | ---: |");
    println!(
        "| seeding (files written / rows inserted and analysed) | {} | {} |",
        ms(files.seeded),
        ms(postgres.seeded)
    );
    println!(
        "| first `thread/list` after start (files: builds the index) | {} | {} |",
        ms(files.first_list),
        ms(postgres.first_list)
    );
    let rows: [(&str, &Series, &Series); 5] = [
        ("`thread/list`, page of 25", &files.list, &postgres.list),
        (
            "`thread/search` rare word, page of 25",
            &files.search,
            &postgres.search,
        ),
        (
            "`thread/read` one thread with its turns",
            &files.read,
            &postgres.read,
        ),
        ("`thread/start` answered", &files.start, &postgres.start),
        (
            "`thread/start` + `turn/start` → `turn/completed`",
            &files.turn,
            &postgres.turn,
        ),
    ];
    for (what, file, pg) in rows {
        println!("| {what} | {} | {} |", file.shown(), pg.shown());
    }
    println!(
        "| app-server RSS after start / after the runs | {} / {} | {} / {} |",
        mib(files.rss_kib.0 * 1024),
        mib(files.rss_kib.1 * 1024),
        mib(postgres.rss_kib.0 * 1024),
        mib(postgres.rss_kib.1 * 1024)
    );
    println!("| stored | {} | {} |", files.stored, postgres.stored);
    println!();
    println!(
        "| PostgreSQL store; median (min–max) of {} runs | direct | through HAProxy | difference of medians |",
        args.runs
    );
    println!("| --- | ---: | ---: | ---: |");
    let [direct, through] = paths;
    for (n, what) in [
        "`thread/list`, page of 25",
        "`thread/read` one thread with its turns",
        "`thread/start` + `turn/start` → `turn/completed`",
    ]
    .into_iter()
    .enumerate()
    {
        let difference = through[n].median().as_secs_f64() - direct[n].median().as_secs_f64();
        println!(
            "| {what} | {} | {} | {:+.2} ms |",
            direct[n].shown(),
            through[n].shown(),
            difference * 1000.0
        );
    }
}
