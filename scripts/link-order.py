#!/usr/bin/env python3
"""Regenerates `cli/link-order.txt`: the functions of the `keel` binary that a `keel exec` run
and the servers' start-up (and an editor's first `keel acp` session) execute, for the linker to
place side by side.

    CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
    scripts/link-order.py --keel /work/target-bench/release/keel \
        --mock /work/target-bench/release/keel-mock-model [--out cli/link-order.txt]

Why: most of `keel`'s resident memory is its code, and the kernel maps code around every page
a run touches (fault-around), so functions scattered over the binary bring most of it in. With
the executed functions laid out together (`cli/build.rs` passes the file to the linker as
`--symbol-ordering-file` for release builds), a run touches a few contiguous megabytes.

How: each workload runs under `valgrind --tool=callgrind`, which records every function that
executed; their symbol names, in order of first execution (the `keel exec` run first, then the
app-server, MCP server and exec-server start-ups), are kept when the binary defines them.

Workloads: `keel exec` through three model turns (a `shell` call, an `exec_command` call, the
answer) against `keel-mock-model`; each server over stdio through `initialize` and half a
second idle; `keel acp` through `initialize` and `session/new`. Names carry hashes that stay stable across edits to a function's body; after a
dependency upgrade, names that no longer exist are skipped by the linker (the file only
loses effect) until the file is regenerated.
"""
import argparse
import json
import os
import re
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
base_url = "{uri}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""

SCRIPT = {"model": "mock-model", "turns": [
    {"items": [{"type": "shell_call", "call_id": "c1", "command": ["echo", "step 1"]}]},
    {"items": [{"type": "function_call", "call_id": "c2", "name": "exec_command",
                "arguments": {"cmd": "echo step 2", "yield_time_ms": 10000, "login": False}}]},
    {"items": [{"type": "message", "text": "done"}]},
]}

HELLOS = {
    "app-server": [{"id": 1, "method": "initialize",
                    "params": {"clientInfo": {"name": "link-order", "version": "0"}}},
                   {"method": "initialized"}],
    "mcp-server": [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "link-order", "version": "0"}}},
                   {"jsonrpc": "2.0", "method": "notifications/initialized"}],
    "exec-server": [{"id": 1, "method": "initialize", "params": {"clientName": "link-order"}},
                    {"method": "initialized", "params": {}}],
    # An editor's start: the handshake, then a session (`{cwd}` is the workload's directory).
    "acp": [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": 1, "clientCapabilities": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new",
             "params": {"cwd": "{cwd}", "mcpServers": []}}],
}


def callgrind(argv, out, **kwargs):
    """Runs argv under callgrind, writing its profile to `out`."""
    command = ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no",
               "--compress-pos=no", f"--callgrind-out-file={out}"] + argv
    return subprocess.Popen(command, **kwargs)


def executed(profile):
    """Function names of a callgrind profile, in order of first appearance."""
    seen, names = set(), []
    with open(profile, errors="replace") as lines:
        for line in lines:
            match = re.match(r"^c?fn=(?:\(\d+\) )?(.+)$", line.rstrip("\n"))
            if match and match[1] not in seen:
                seen.add(match[1])
                names.append(match[1])
    return names


def defined(binary):
    """The function symbols the binary defines."""
    nm = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True,
                        text=True).stdout
    return {line.split()[2] for line in nm.splitlines()
            if len(line.split()) == 3 and line.split()[1] in "tTwW"}


def run_exec(keel, mock, work):
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump(SCRIPT, f)
    server = subprocess.Popen([mock, "--script", script], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        uri = server.stdout.readline().strip()
        home, ws = os.path.join(work, "home-exec"), os.path.join(work, "ws")
        os.makedirs(home), os.makedirs(ws)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(CONFIG.format(uri=uri))
        env = dict(os.environ, KEEL_HOME=home, HOME=work, OPENAI_API_KEY="x")
        profile = os.path.join(work, "exec.callgrind")
        run = callgrind([keel, "exec", "run the steps"], profile, cwd=ws, env=env,
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
        out, err = run.communicate(timeout=600)
        if run.returncode != 0 or b"done" not in out:
            sys.exit(f"keel exec failed under callgrind:\n{err.decode()[-2000:]}")
        return profile
    finally:
        server.kill()
        server.wait()


def run_server(keel, name, work):
    home = os.path.join(work, f"home-{name}")
    os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(CONFIG.format(uri="http://127.0.0.1:9/v1"))
    env = dict(os.environ, KEEL_HOME=home, HOME=work, OPENAI_API_KEY="x")
    profile = os.path.join(work, f"{name}.callgrind")
    server = callgrind([keel, name], profile, env=env, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first, *rest = HELLOS[name]
    server.stdin.write((json.dumps(first) + "\n").encode())
    server.stdin.flush()
    if not server.stdout.readline():
        sys.exit(f"keel {name} did not answer initialize under callgrind")
    for message in rest:
        text = json.dumps(message).replace('"{cwd}"', json.dumps(work))
        server.stdin.write((text + "\n").encode())
        server.stdin.flush()
        # A request is answered before the next message goes out.
        if "id" in message and not server.stdout.readline():
            sys.exit(f"keel {name} did not answer {message['method']} under callgrind")
    time.sleep(0.5)  # idle, as the idle-RSS benchmark measures it
    server.stdin.close()
    server.wait(timeout=120)
    return profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keel", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--out", default="cli/link-order.txt")
    args = parser.parse_args()
    keel, mock = os.path.abspath(args.keel), os.path.abspath(args.mock)
    ours = defined(keel)
    with tempfile.TemporaryDirectory() as work:
        profiles = [run_exec(keel, mock, work)]
        profiles += [run_server(keel, name, work) for name in HELLOS]
        order, seen = [], set()
        for profile in profiles:
            for name in executed(profile):
                if name in ours and name not in seen:
                    seen.add(name)
                    order.append(name)
    with open(args.out, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions of {len(ours)} written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
