#!/usr/bin/env python3
"""Idle RSS of each server after `initialize`: `keel app-server`, `keel mcp-server` and
`keel exec-server` over stdio (and, with --codex, Codex's app-server and mcp-server).

    scripts/bench-idle-rss.py --keel /work/target-bench/release/keel [--codex CODEX] [--runs 5]

Each run starts the server with a scratch home whose config names a model provider on an
unreachable loopback port (no model request is made), an empty HOME, sends `initialize` (and
`initialized` where the protocol has it), waits for the answer, lets the server settle for
half a second, then reads `VmRSS` and `VmHWM` from /proc. Prints the medians as a markdown table.
"""
import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
"""

APP = {"id": 1, "method": "initialize",
       "params": {"clientInfo": {"name": "bench-idle-rss", "version": "0"}}}
MCP = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                  "clientInfo": {"name": "bench-idle-rss", "version": "0"}}}
EXEC = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"clientName": "bench-idle-rss"}}


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def idle_rss(argv, home_var, hello, initialized):
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as user_home:
        with open(os.path.join(home, "config.toml"), "w") as config:
            config.write(CONFIG)
        env = dict(os.environ, HOME=user_home, OPENAI_API_KEY="x", RUST_LOG="warn")
        env[home_var] = home
        with tempfile.TemporaryFile() as stderr:
            server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=stderr, env=env)
            try:
                server.stdin.write((json.dumps(hello) + "\n").encode())
                if initialized:
                    server.stdin.write((json.dumps(initialized) + "\n").encode())
                server.stdin.flush()
                read_answer(server, stderr)
                time.sleep(0.5)
                return status_kib(server.pid, "VmRSS"), status_kib(server.pid, "VmHWM")
            finally:
                server.kill()
                server.wait()


def read_answer(server, stderr, timeout=10.0):
    """Reads stdout lines until the response to request 1, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([server.stdout], [], [], max(left, 0))
        line = server.stdout.readline() if ready else b""
        if not line:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace").strip().splitlines()[-3:]
            why = "no answer in time" if not ready else "stdout closed"
            raise RuntimeError(f"{why} to initialize; stderr: {' | '.join(tail) or '(empty)'}")
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("id") == 1 and "method" not in message:
            if "error" in message:
                raise RuntimeError(f"initialize failed: {message['error']}")
            return message


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keel", required=True)
    parser.add_argument("--codex")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases = [
        ("keel app-server", [args.keel, "app-server"], "KEEL_HOME", APP,
         {"method": "initialized"}),
        ("keel mcp-server", [args.keel, "mcp-server"], "KEEL_HOME", MCP,
         {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("keel exec-server", [args.keel, "exec-server"], "KEEL_HOME", EXEC, None),
    ]
    if args.codex:
        cases += [
            ("codex app-server", [args.codex, "app-server"], "CODEX_HOME", APP,
             {"method": "initialized"}),
            ("codex mcp-server", [args.codex, "mcp-server"], "CODEX_HOME", MCP,
             {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
    print(f"| server | idle RSS (median of {args.runs}) | peak RSS so far |")
    print("| --- | ---: | ---: |")
    for label, argv, home_var, hello, initialized in cases:
        try:
            runs = [idle_rss(argv, home_var, hello, initialized) for _ in range(args.runs)]
        except (RuntimeError, OSError) as err:
            print(f"| {label} | failed: {err} | |", flush=True)
            continue
        rss = statistics.median(r[0] for r in runs) / 1024
        hwm = statistics.median(r[1] for r in runs) / 1024
        print(f"| {label} | {rss:.1f} MiB | {hwm:.1f} MiB |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
