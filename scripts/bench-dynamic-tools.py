#!/usr/bin/env python3
"""What one call of a client's own tool (`dynamicTools`, answered over `item/tool/call`) costs
on `keel app-server`, next to a call of a built-in tool that starts no process
(`update_plan`).

Not part of `cargo test`; it builds nothing:
    CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
    scripts/bench-dynamic-tools.py --keel /work/target-bench/release/keel \
        --mock /work/target-bench/release/keel-mock-model [--calls 300] [--runs 3]

Workload: one turn in which the mock model makes --calls tool calls one after another (one
call per model response, as a model that waits for each result does), then answers. For the
dynamic workload the client answers each `item/tool/call` at once with one `inputText`; for
the built-in one the model calls `update_plan` with a one-step plan. Both talk to the same
mock over loopback HTTP, so the difference between their steps is what the round trip to the
client adds.

Reported, over every call of every run:
- step: the time between one call reaching the client and the next one doing so (the
  `item/tool/call` request, or the `turn/plan/updated` notification of `update_plan`): the
  tool call itself, the engine recording its output, the next model request and response;
- answer → completed (dynamic only): from the client writing its answer to the
  `item/completed` of that call (the answer's way back through the engine).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def script(calls, dynamic):
    turns = []
    for i in range(calls):
        if dynamic:
            item = {"type": "function_call", "call_id": f"c{i}", "name": "lookup_ticket",
                    "arguments": json.dumps({"id": f"KEEL-{i}"})}
        else:
            plan = {"plan": [{"step": f"step {i}", "status": "in_progress"}]}
            item = {"type": "function_call", "call_id": f"c{i}", "name": "update_plan",
                    "arguments": json.dumps(plan)}
        turns.append({"items": [item]})
    turns.append({"items": [{"type": "message", "text": "done"}]})
    return {"model": "mock-model", "turns": turns}


class Client:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("app-server closed its stdout")
        return json.loads(line)

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run_once(keel, mock, calls, dynamic):
    work = tempfile.mkdtemp()
    home, ws = os.path.join(work, "home"), os.path.join(work, "ws")
    os.makedirs(home)
    os.makedirs(ws)
    port = free_port()
    script_path = os.path.join(work, "script.json")
    with open(script_path, "w") as f:
        json.dump(script(calls, dynamic), f)
    mock_proc = subprocess.Popen([mock, "--script", script_path, "--bind", f"127.0.0.1:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(
            'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n[model_providers.mock]\nname = "mock"\n'
            f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\n'
            "request_max_retries = 0\nstream_max_retries = 0\n")
    # Wait for the mock to listen (bounded).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.01)
    env = dict(os.environ, KEEL_HOME=home)
    client = Client([keel, "app-server"], env)
    client.request("initialize", {"clientInfo": {"name": "bench", "version": "1"}})
    client.send({"method": "initialized"})
    params = {"cwd": ws}
    if dynamic:
        params["dynamicTools"] = [{
            "type": "function", "name": "lookup_ticket", "description": "Looks a ticket up.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}]
    thread = client.request("thread/start", params)["thread"]["id"]
    client.request("turn/start", {"threadId": thread,
                                  "input": [{"type": "text", "text": "go"}]})
    arrivals, answered, completed = [], {}, {}
    while True:
        message = client.read()
        method = message.get("method")
        now = time.perf_counter()
        if method == "turn/plan/updated":
            arrivals.append(now)
        elif method == "item/completed":
            completed.setdefault(message["params"]["item"]["id"], now)
        elif method == "item/tool/call" and "id" in message:
            arrivals.append(now)
            client.send({"id": message["id"], "result": {
                "contentItems": [{"type": "inputText", "text": "in review"}], "success": True}})
            answered[message["params"]["callId"]] = time.perf_counter()
        elif method == "turn/completed":
            break
    client.close()
    mock_proc.terminate()
    mock_proc.wait(timeout=10)
    if len(arrivals) != calls:
        raise RuntimeError(f"expected {calls} calls to reach the client, saw {len(arrivals)}")
    steps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
    back = [(completed[c] - answered[c]) * 1000 for c in answered if c in completed]
    return steps, back


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keel", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for dynamic in (False, True):
        steps, back = [], []
        for _ in range(args.runs):
            s, b = run_once(args.keel, args.mock, args.calls, dynamic)
            steps += s
            back += b
        name = "dynamic tool (item/tool/call)" if dynamic else "built-in update_plan"
        if not steps:
            sys.exit(f"{name}: no steps measured")
        print(f"{name}: {len(steps)} steps; step p50 {statistics.median(steps):.2f} ms, "
              f"p99 {percentile(steps, 0.99):.2f} ms")
        if back:
            print(f"  answer -> item/completed: p50 {statistics.median(back):.2f} ms, "
                  f"p99 {percentile(back, 0.99):.2f} ms")


if __name__ == "__main__":
    main()
