//! The CPU floor of streaming over stdio: what the unavoidable parts of the stdio path cost on
//! this machine, measured one by one, and the best throughput they allow.
//!
//! Streaming `head -c N /dev/zero` to a stdio client needs, at the very least: the child's
//! pipe (what the raw `head | cat` run costs), a second pipe carrying the base64 text (4/3 N
//! bytes, without a `/dev/zero` to read), a base64 encode of N bytes and a decode of 4/3 N,
//! and a newline scan of 4/3 N. Summed and spread perfectly over every core, they bound the
//! throughput any implementation of the protocol reaches here.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64_simd::{Out, STANDARD};
use nix::sys::resource::{UsageWho, getrusage};
use tokio::process::Command;

/// Chunk size of the codec passes, as the server reads them.
const CHUNK_BYTES: usize = 256 * 1024;

/// User + system CPU time `who` has used so far.
fn cpu(who: UsageWho) -> anyhow::Result<Duration> {
    let usage = getrusage(who)?;
    let time = |value: nix::sys::time::TimeVal| {
        Duration::new(
            value.tv_sec().max(0) as u64,
            value.tv_usec().max(0) as u32 * 1000,
        )
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}

/// CPU time of every waited-for child so far.
fn children_cpu() -> anyhow::Result<Duration> {
    cpu(UsageWho::RUSAGE_CHILDREN)
}

/// CPU time of this process so far (every thread).
pub fn own_cpu() -> anyhow::Result<Duration> {
    cpu(UsageWho::RUSAGE_SELF)
}

/// CPU time of process `pid` and of the children it has reaped, from `/proc/<pid>/stat`.
pub fn process_cpu(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("no command name in /proc/<pid>/stat")?
        .1
        .split_whitespace()
        .collect();
    // utime, stime, cutime, cstime are fields 14–17.
    let ticks: u64 = fields[11..15]
        .iter()
        .map(|field| field.parse::<u64>())
        .sum::<Result<u64, _>>()?;
    let per_second =
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)?.context("no CLK_TCK")? as u64;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// Runs a shell pipeline; returns its wall time and the CPU time of everything it ran.
pub async fn shell(script: &str) -> anyhow::Result<(Duration, Duration)> {
    let cpu_before = children_cpu()?;
    let start = Instant::now();
    let status = Command::new("sh").args(["-c", script]).status().await?;
    let wall = start.elapsed();
    if !status.success() {
        bail!("`{script}` failed: {status}");
    }
    Ok((wall, children_cpu()? - cpu_before))
}

/// The floor's parts, in CPU time.
pub struct Floor {
    pub raw_wall: Duration,
    pub raw_cpu: Duration,
    pub second_pipe: Duration,
    pub encode: Duration,
    pub decode: Duration,
    pub scan: Duration,
}

impl Floor {
    pub fn total(&self) -> Duration {
        self.raw_cpu + self.second_pipe + self.encode + self.decode + self.scan
    }

    /// The best stdio throughput these costs allow on `cores` cores, as a share of the raw
    /// pipe's: the raw pipe keeps every core busy too, so the ratio is the ratio of work.
    pub fn best_ratio(&self, cores: usize) -> f64 {
        let best_wall = self.total().as_secs_f64() / cores as f64;
        self.raw_wall.as_secs_f64() / best_wall
    }
}

/// Measures the floor for streaming `bytes`.
pub async fn measure(bytes: u64) -> anyhow::Result<Floor> {
    let text = bytes.div_ceil(3) * 4;
    let (raw_wall, raw_cpu) =
        shell(&format!("head -c {bytes} /dev/zero | cat > /dev/null")).await?;
    let (_, piped) = shell(&format!("head -c {text} /dev/zero | cat > /dev/null")).await?;
    let (_, zeros) = shell(&format!("head -c {text} /dev/zero > /dev/null")).await?;
    let (encode, decode, scan) = tokio::task::spawn_blocking(move || codec(bytes)).await??;
    Ok(Floor {
        raw_wall,
        raw_cpu,
        second_pipe: piped.saturating_sub(zeros),
        encode,
        decode,
        scan,
    })
}

/// Times the SIMD base64 encode of `bytes`, the decode of its text and a newline scan of the
/// text, chunk by chunk on one thread (so wall time is CPU time).
fn codec(bytes: u64) -> anyhow::Result<(Duration, Duration, Duration)> {
    let chunks = bytes.div_ceil(CHUNK_BYTES as u64);
    let input: Vec<u8> = (0..CHUNK_BYTES).map(|byte| byte as u8).collect();
    let mut text = vec![0u8; STANDARD.encoded_length(CHUNK_BYTES)];
    let mut output = vec![0u8; CHUNK_BYTES];
    let start = Instant::now();
    for _ in 0..chunks {
        std::hint::black_box(
            STANDARD.encode(std::hint::black_box(&input), Out::from_slice(&mut text)),
        );
    }
    let encode = start.elapsed();
    let start = Instant::now();
    for _ in 0..chunks {
        STANDARD
            .decode(std::hint::black_box(&text), Out::from_slice(&mut output))
            .map_err(|err| anyhow::anyhow!("decode: {err}"))?;
    }
    let decode = start.elapsed();
    if output != input {
        bail!("the codec did not round-trip");
    }
    let start = Instant::now();
    for _ in 0..chunks {
        std::hint::black_box(memchr::memchr(b'\n', std::hint::black_box(&text)));
    }
    Ok((encode, decode, start.elapsed()))
}
