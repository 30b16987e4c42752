#!/usr/bin/env python3
"""Benchmark the app-server on a huge rollout: time and peak RSS of `thread/list`,
`thread/read` (with turns) and `thread/resume` on a generated file.

Not part of `cargo test`: it measures whatever `keel` binary it is given.

    CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel
    scripts/bench-rollout.py --keel /work/target-bench/release/keel [--size-mb 1024]

    # The same against Codex's app-server, on a rollout in Codex's format: pass a rollout
    # Codex wrote (its session_meta and turn_context lines are reused) and its binary.
    scripts/bench-rollout.py --codex /path/to/codex --codex-template rollout-....jsonl

The generated rollout is written in Keel's own line format (as `keel exec` records it): each
turn is `task_started`, the user's message, a `shell` call with its `exec_command_end` event
and output, the answer and `task_complete`. Command outputs are 2 KB, except every 50th turn,
whose output is 3 MB (in the event's stdout, aggregated and formatted output and in the
function output). Every 50 turns the history is compacted (a `compacted` line with the
replacement history, and a `context_compacted` event). Turns are added until the file
reaches `--size-mb`.

For each of `thread/list`, `thread/read` with `includeTurns` and `thread/resume`, a fresh
server (`keel app-server`, stdio, a KEEL_HOME holding only that file) is started, initialized
and sent that one request. The table gives the wall time from request to response and the
server's peak RSS (`VmHWM` from /proc/PID/status, read right after the response).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

TURNS_PER_COMPACTION = 50
BIG_EVERY = 50
SMALL_OUTPUT = 2 * 1024
BIG_OUTPUT = 3 * 1024 * 1024


def line(kind, payload, ts):
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}, separators=(",", ":"))


def write_rollout(path, size_bytes, cwd):
    conv_id = str(uuid.uuid4())
    ts = "2026-11-23T00:00:00.000Z"
    turns = 0
    users = []
    with open(path, "w") as out:
        out.write(line("session_meta", {"id": conv_id, "timestamp": ts, "cwd": cwd,
                                        "model": "mock-model", "originator": "keel",
                                        "cli_version": "0.1.0"}, ts) + "\n")
        while out.tell() < size_bytes:
            turns += 1
            turn_id = f"turn-{turns}"
            call_id = f"call-{turns}"
            text = f"step {turns}: please look at file_{turns}.rs"
            size = BIG_OUTPUT if turns % BIG_EVERY == 0 else SMALL_OUTPUT
            output = (f"line {turns} " + "x" * 60 + "\n") * (size // 70)
            rows = [
                line("event_msg", {"type": "task_started", "turn_id": turn_id,
                                   "model_context_window": None}, ts),
                line("response_item", {"type": "message", "role": "user",
                                       "content": [{"type": "input_text", "text": text}]}, ts),
                line("event_msg", {"type": "user_message", "message": text, "images": []}, ts),
                line("response_item", {"type": "function_call", "name": "shell",
                                       "arguments": json.dumps({"command": ["cat", f"file_{turns}.rs"]}),
                                       "call_id": call_id}, ts),
                line("event_msg", {"type": "exec_command_end", "call_id": call_id, "turn_id": turn_id,
                                   "command": ["cat", f"file_{turns}.rs"], "cwd": cwd,
                                   "parsed_cmd": [{"type": "unknown", "cmd": f"cat file_{turns}.rs"}],
                                   "source": "agent", "stdout": output, "stderr": "",
                                   "aggregated_output": output, "exit_code": 0,
                                   "duration": {"secs": 0, "nanos": 3000000},
                                   "formatted_output": output, "status": "completed"}, ts),
                line("response_item", {"type": "function_call_output", "call_id": call_id,
                                       "output": output}, ts),
                line("event_msg", {"type": "agent_message", "message": f"done with step {turns}"}, ts),
                line("response_item", {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text", "text": f"done with step {turns}"}]}, ts),
            ]
            users.append(text)
            if turns % TURNS_PER_COMPACTION == 0:
                summary = f"Summary after {turns} steps: files 1..{turns} read; nothing failed."
                history = [{"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": t}]} for t in users[-20:]]
                history.append({"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "hand-off summary:\n" + summary}]})
                rows.append(line("compacted", {"message": summary, "replacement_history": history}, ts))
                rows.append(line("event_msg", {"type": "context_compacted",
                                               "id": f"compaction-{turns}", "turn_id": turn_id}, ts))
            rows.append(line("event_msg", {"type": "task_complete", "turn_id": turn_id,
                                           "last_agent_message": f"done with step {turns}"}, ts))
            out.write("\n".join(rows) + "\n")
        size = out.tell()
    return conv_id, turns, size


def write_codex_rollout(path, size_bytes, template):
    """The same workload in Codex 0.115's line format: its session_meta and turn_context
    lines (from a rollout it wrote) are reused; events are the ones its `exec` records."""
    with open(template) as lines:
        rows = [json.loads(row) for row in lines if row.strip()]
    meta = next(row for row in rows if row["type"] == "session_meta")
    context = next(row for row in rows if row["type"] == "turn_context")
    conv_id = str(uuid.uuid4())
    meta["payload"]["id"] = conv_id
    # `thread/list` lists interactive sessions only; `exec` ones are left out.
    meta["payload"]["source"] = "cli"
    ts = meta["timestamp"]
    turns = 0
    users = []
    with open(path, "w") as out:
        out.write(json.dumps(meta, separators=(",", ":")) + "\n")
        while out.tell() < size_bytes:
            turns += 1
            turn_id = str(uuid.uuid4())
            call_id = f"call-{turns}"
            text = f"step {turns}: please look at file_{turns}.rs"
            size = BIG_OUTPUT if turns % BIG_EVERY == 0 else SMALL_OUTPUT
            output = (f"line {turns} " + "x" * 60 + "\n") * (size // 70)
            context["payload"]["turn_id"] = turn_id
            rows = [
                line("event_msg", {"type": "task_started", "turn_id": turn_id,
                                   "model_context_window": 258400,
                                   "collaboration_mode_kind": "default"}, ts),
                json.dumps(context, separators=(",", ":")),
                line("response_item", {"type": "message", "role": "user",
                                       "content": [{"type": "input_text", "text": text}]}, ts),
                line("event_msg", {"type": "user_message", "message": text, "images": [],
                                   "local_images": [], "text_elements": []}, ts),
                line("response_item", {"type": "function_call", "name": "shell",
                                       "arguments": json.dumps({"command": ["cat", f"file_{turns}.rs"]}),
                                       "call_id": call_id}, ts),
                line("response_item", {"type": "function_call_output", "call_id": call_id,
                                       "output": output}, ts),
                line("event_msg", {"type": "agent_message", "message": f"done with step {turns}",
                                   "phase": None}, ts),
                line("response_item", {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text", "text": f"done with step {turns}"}]}, ts),
            ]
            users.append(text)
            if turns % TURNS_PER_COMPACTION == 0:
                summary = f"Summary after {turns} steps: files 1..{turns} read; nothing failed."
                history = [{"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": t}]} for t in users[-20:]]
                history.append({"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": summary}]})
                rows.append(line("compacted", {"message": summary, "replacement_history": history}, ts))
                rows.append(line("event_msg", {"type": "context_compacted"}, ts))
            rows.append(line("event_msg", {"type": "task_complete", "turn_id": turn_id,
                                           "last_agent_message": f"done with step {turns}"}, ts))
            out.write("\n".join(rows) + "\n")
        size = out.tell()
    return conv_id, turns, size


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for row in status:
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    return float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keel")
    parser.add_argument("--codex", help="a Codex binary, measured instead of keel")
    parser.add_argument("--codex-template",
                        help="a rollout Codex wrote: generate the file in Codex's format")
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="keel-rollout-bench-") as work:
        home = os.path.join(work, "home")
        day = os.path.join(home, "sessions", "2026", "11", "23")
        os.makedirs(day)
        ws = os.path.join(work, "ws")
        os.makedirs(ws)
        with open(os.path.join(home, "config.toml"), "w") as config:
            config.write('model = "mock-model"\nmodel_provider = "mock"\n'
                         '[model_providers.mock]\nname = "mock"\n'
                         'base_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n')
        started = time.time()
        probe_id = str(uuid.uuid4())
        path = os.path.join(day, f"rollout-2026-11-23T00-00-00-{probe_id}.jsonl")
        if args.codex_template:
            conv_id, turns, size = write_codex_rollout(
                path, args.size_mb * 1024 * 1024, args.codex_template)
        else:
            conv_id, turns, size = write_rollout(path, args.size_mb * 1024 * 1024, ws)
        final = os.path.join(day, f"rollout-2026-11-23T00-00-00-{conv_id}.jsonl")
        os.rename(path, final)
        print(f"generated {size / 2**20:.0f} MiB, {turns} turns, {turns // TURNS_PER_COMPACTION} "
              f"compactions in {time.time() - started:.1f} s", file=sys.stderr)

        def serve_one(method, params):
            """Starts a fresh server, initializes it, sends one request; returns the result,
            the request's wall time, the response size and the server's peak RSS."""
            env = {**os.environ, "KEEL_HOME": home, "CODEX_HOME": home, "OPENAI_API_KEY": "x"}
            if "BENCH_ARENAS" in os.environ:
                env["MALLOC_ARENA_MAX"] = os.environ["BENCH_ARENAS"]
            program = args.codex or args.keel
            server = subprocess.Popen([program, "app-server"], cwd=ws, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            next_id = [0]

            def request(method, params):
                next_id[0] += 1
                message = {"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}
                start = time.perf_counter()
                server.stdin.write((json.dumps(message) + "\n").encode())
                server.stdin.flush()
                while True:
                    raw = server.stdout.readline()
                    if not raw:
                        raise SystemExit(f"the server exited during {method}")
                    reply = json.loads(raw)
                    if reply.get("id") == next_id[0]:
                        elapsed = time.perf_counter() - start
                        if "error" in reply:
                            raise SystemExit(f"{method}: {reply['error']}")
                        return reply["result"], elapsed, len(raw)

            request("initialize", {"clientInfo": {"name": "bench", "version": "0"}})
            server.stdin.write(b'{"jsonrpc":"2.0","method":"initialized"}\n')
            server.stdin.flush()
            result, elapsed, nbytes = request(method, params)
            rss = peak_rss_mib(server.pid)
            server.stdin.close()
            server.wait(timeout=30)
            return result, elapsed, nbytes, rss

        rows = []
        result, elapsed, nbytes, rss = serve_one("thread/list", {})
        assert result["data"][0]["id"] == conv_id, result
        rows.append(("thread/list", elapsed, nbytes, rss))
        result, elapsed, nbytes, rss = serve_one(
            "thread/read", {"threadId": conv_id, "includeTurns": True})
        if len(result["thread"]["turns"]) != turns:
            print(f"note: thread/read returned {len(result['thread']['turns'])} turns of {turns}",
                  file=sys.stderr)
        rows.append(("thread/read (includeTurns)", elapsed, nbytes, rss))
        result, elapsed, nbytes, rss = serve_one("thread/resume", {"threadId": conv_id})
        rows.append(("thread/resume", elapsed, nbytes, rss))

        print(f"Rollout: {size / 2**20:.0f} MiB, {turns} turns, a compaction every "
              f"{TURNS_PER_COMPACTION} turns, a 3 MB command output every {BIG_EVERY} turns.")
        print()
        print("| request (a fresh server each) | wall | response size | server peak RSS |")
        print("| --- | ---: | ---: | ---: |")
        for method, elapsed, nbytes, rss in rows:
            print(f"| `{method}` | {elapsed * 1000:.0f} ms | {nbytes / 2**20:.1f} MiB | {rss:.1f} MiB |")


if __name__ == "__main__":
    main()
