#!/usr/bin/env python3
"""What `[otel]` costs a `keel exec` run: telemetry off, on (all three signals to a local
OTLP receiver) and on with a collector that is down, next to a Keel built before telemetry
existed (`--baseline`).

Not part of `cargo test`: it builds nothing and measures the binaries it is given.

  CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
  scripts/bench-otel.py --keel /work/target-bench/release/keel \\
      --mock /work/target-bench/release/keel-mock-model \\
      --receiver /work/target-bench/release/keel-otlp-receiver \\
      [--baseline /path/to/older/keel] [--turns 11] [--runs 5] [--warmup 1]

Each run: a fresh `keel-mock-model` serving N model turns (N-1 `shell` calls of
`["echo", "step K"]`, then "done"), a fresh workspace, `keel exec "do the task"` with
`approval_policy = "never"` and `sandbox_mode = "danger-full-access"`; the run counts only if
it exits 0 and prints `done`. Variants:

- baseline: the `--baseline` binary, no `[otel]` (a Keel without the telemetry code);
- off: this Keel, no `[otel]`;
- on: this Keel, `exporter` (OTLP/HTTP protobuf), `trace_exporter` (OTLP/HTTP JSON) and
  `metrics_exporter` (OTLP/gRPC) all to one `keel-otlp-receiver`, which counts what arrived;
- down: this Keel, the same three exporters at a loopback port nothing listens on.

Wall time is a nanosecond clock around the whole process (start to exit, so it includes the
exporters' final flush); peak RSS is GNU time's %M. Rounds alternate the variants so load from
elsewhere hits all alike; medians are printed as a markdown table, per-run figures on stderr.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def script(path, turns):
    items = [
        {"items": [{"type": "shell_call", "call_id": f"call-{k}", "command": ["echo", f"step {k}"]}]}
        for k in range(1, turns)
    ]
    items.append({"items": [{"type": "message", "text": "done"}]})
    with open(path, "w") as f:
        json.dump({"model": "mock-model", "turns": items}, f)


def config(home, mock_uri, otel):
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(
            f'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
            f'sandbox_mode = "danger-full-access"\n\n[model_providers.mock]\nname = "mock"\n'
            f'base_url = "{mock_uri}"\nwire_api = "responses"\nrequest_max_retries = 0\n'
            f"stream_max_retries = 0\n"
        )
        if otel:
            f.write("\n" + otel)


def otel_section(http_base, grpc):
    return (
        "[otel]\n"
        f'exporter = {{ otlp-http = {{ endpoint = "{http_base}/v1/logs", protocol = "binary" }} }}\n'
        f'trace_exporter = {{ otlp-http = {{ endpoint = "{http_base}/v1/traces", protocol = "json" }} }}\n'
        f'metrics_exporter = {{ otlp-grpc = {{ endpoint = "{grpc}" }} }}\n'
    )


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one(keel, mock, work, name, turns, otel):
    home = os.path.join(work, f"home-{name}")
    os.makedirs(home, exist_ok=True)
    ws = tempfile.mkdtemp(dir=work)
    mock_proc = subprocess.Popen(
        [mock, "--script", os.path.join(work, f"script-{turns}.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        uri = mock_proc.stdout.readline().strip()
        config(home, uri, otel)
        env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "KEEL_LOG")}
        env["KEEL_HOME"] = home
        t0 = time.perf_counter_ns()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", keel, "exec", "do the task"],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
        )
        wall_ms = (time.perf_counter_ns() - t0) / 1e6
    finally:
        mock_proc.terminate()
        mock_proc.wait()
        shutil.rmtree(ws, ignore_errors=True)
    if done.returncode != 0 or done.stdout.strip() != "done":
        sys.exit(f"bench-otel: {name} run failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    rss_kib = int(done.stderr.strip().splitlines()[-1])
    return wall_ms, rss_kib / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keel", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--receiver", required=True)
    parser.add_argument("--baseline")
    parser.add_argument("--turns", type=int, default=11)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="keel-bench-otel.")
    receiver = subprocess.Popen([args.receiver], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        http_base = receiver.stdout.readline().strip()
        grpc = receiver.stdout.readline().strip()
        port = closed_port()
        variants = []
        if args.baseline:
            variants.append(("baseline", args.baseline, ""))
        variants += [
            ("off", args.keel, ""),
            ("on", args.keel, otel_section(http_base, grpc)),
            ("down", args.keel, otel_section(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}")),
        ]
        script(os.path.join(work, f"script-{args.turns}.json"), args.turns)
        results = {name: [] for name, _, _ in variants}
        for round_ in range(args.warmup + args.runs):
            for name, keel, otel in variants:
                wall, rss = run_one(keel, args.mock, work, name, args.turns, otel)
                kept = round_ >= args.warmup
                print(f"{name} round {round_}{'' if kept else ' (warm-up)'}: {wall:.1f} ms, {rss:.1f} MiB", file=sys.stderr)
                if kept:
                    results[name].append((wall, rss))
    finally:
        receiver.terminate()
        _, counts = receiver.communicate()
        shutil.rmtree(work, ignore_errors=True)
    print(counts.strip(), file=sys.stderr)
    off = statistics.median(w for w, _ in results["off"])
    print(f"| variant ({args.turns} model turns, {args.turns - 1} commands) | wall (median of {args.runs}) | vs off | peak RSS (median) |")
    print("| --- | ---: | ---: | ---: |")
    for name, _, _ in variants:
        wall = statistics.median(w for w, _ in results[name])
        rss = statistics.median(r for _, r in results[name])
        print(f"| {name} | {wall:.1f} ms | {100 * (wall - off) / off:+.1f}% | {rss:.1f} MiB |")


if __name__ == "__main__":
    main()
