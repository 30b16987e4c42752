#!/usr/bin/env python3
"""Two provider-side figures for issue 32: what a session re-sends to the model on each wire
(with and without compaction), and what Keel's client adds to the time to first token.

Not part of `cargo test`; it builds nothing (python3 standard library, curl for `ttft`):
    CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
    scripts/bench-providers.py tokens --keel /work/target-bench/release/keel \
        --mock /work/target-bench/release/keel-mock-model [--turns 20]
    scripts/bench-providers.py ttft --keel /work/target-bench/release/keel \
        --mock /work/target-bench/release/keel-mock-model [--reps 30] [--delay-ms 100] \
        [--batch 10]

tokens: `keel exec` against the mock, once per wire (`wire_api = "responses"` and `"chat"`),
each time without and with automatic compaction. The mock script is --turns model turns that
each make one `shell` call, `bash -lc "seq -f '...' 1 40"`, which prints 40 lines, 2000 bytes
(like an agent reading files while it explores a repository), then a final answer. The mock
records every request (`--capture`, whose `content-length` header is the size Keel sent).
Input tokens are estimated as bytes / 4, which is also what the mock reports as usage.
Cacheable: each request is laid out the way providers render a prompt (tools, then
instructions, then the conversation: Responses `tools` + `instructions` + `input`, Chat
`tools` + `messages`), and the longest common prefix with any earlier request of the session
is what a prompt cache could serve. With compaction, `model_auto_compact_token_limit` is set
between the sizes of requests 10 and 11 of the run without it, so the history is compacted
once, after the 11th model turn; the summary request is served a ~1 KB summary.

ttft: the mock serves one streamed answer whose first `response.output_text.delta` comes
--delay-ms after the frames before it (a scripted `stall` right before that frame; 0: no
pause, the whole answer at once). Pauses under ~40 ms are refused: the mock does not set
TCP_NODELAY, so on a kept-alive connection (Keel's pool, not curl's fresh one) the frame after
a short pause waits ~40 ms for a delayed ACK, which would measure the kernel, not the client.
(a) curl: `curl -sN` POSTs the body Keel sends to the mock's /v1/responses; time to first
delta = curl's own `%{time_starttransfer}` (first response byte) + the gap a reader of curl's
stdout sees between the first line and the first delta line. (b) Keel: `keel app-server` over
stdio; per repetition a new thread, then the time from writing `turn/start` to reading the
first `item/agentMessage/delta`. Both minus the delay; the difference of the two is Keel's
overhead. Repetitions alternate between the two clients; every --batch repetitions the mock
and the app-server are started afresh (one warm-up of each client each time), because the
mock's CPU per request grows with the number of requests it has recorded.
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

LINES_PER_CALL = 40


def compact_json(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(home, port, wire, compact_limit=None):
    text = (
        'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
    )
    if compact_limit is not None:
        text += f"model_auto_compact_token_limit = {compact_limit}\n"
    text += (
        '\n[model_providers.mock]\nname = "mock"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "{wire}"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(text)


class Mock:
    """A keel-mock-model process on a free port, with its stderr kept for the checks."""

    def __init__(self, binary, script, work, capture=None, repeat=False):
        self.port = free_port()
        self.script_path = os.path.join(work, "script.json")
        with open(self.script_path, "w") as f:
            json.dump(script, f)
        self.err_path = os.path.join(work, "mock.err")
        argv = [binary, "--script", self.script_path, "--bind", f"127.0.0.1:{self.port}"]
        if capture:
            argv += ["--capture", capture]
        if repeat:
            argv.append("--repeat")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    sys.exit(f"the mock did not start:\n{self.stop()}")
                time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.err.close()
        with open(self.err_path) as f:
            return f.read()


# --- tokens -------------------------------------------------------------------------------

SUMMARY = (
    "Summary of the work so far. The user asked to explore the repository. I listed and read "
    "the source files one by one with seq-based listings of src/lib.rs; each listing printed "
    "forty numbered lines naming fn parse(s) -> Result. Nothing has been changed yet. Files "
    "read so far: the first eleven steps of the listing, all with the same structure and no "
    "errors (exit code 0 every time). Next: continue reading the remaining steps, then "
    "report what parse does and where it is called. Open questions: none so far. "
) * 2


def shell_turn(k):
    command = f"seq -f 'step {k:02d} line %02g: src/lib.rs fn parse(s) -> Result' 1 {LINES_PER_CALL}"
    return {"items": [{"type": "shell_call", "call_id": f"call-{k}",
                       "command": ["bash", "-lc", command]}]}


def session_script(turns, summary_after=None):
    out = []
    for k in range(1, turns + 1):
        out.append(shell_turn(k))
        if summary_after == k:
            out.append({"items": [{"type": "message", "text": SUMMARY}]})
    out.append({"items": [{"type": "message", "text": "done"}]})
    return {"model": "mock-model", "turns": out}


def run_session(keel, mock_bin, wire, turns, compact_limit=None, summary_after=None):
    work = tempfile.mkdtemp(prefix="keel-bench-providers.")
    try:
        home, ws, user_home = (os.path.join(work, d) for d in ("home", "ws", "user-home"))
        for d in (home, ws, user_home):
            os.makedirs(d)
        capture = os.path.join(work, "capture.jsonl")
        mock = Mock(mock_bin, session_script(turns, summary_after), work, capture=capture)
        write_config(home, mock.port, wire, compact_limit)
        env = dict(os.environ, HOME=user_home, KEEL_HOME=home)
        proc = subprocess.run([keel, "exec", "explore this repository"], cwd=ws, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)
        mock_err = mock.stop()
        if (proc.returncode != 0 or "done" not in proc.stdout or "violation" in mock_err
                or " 0 turn(s) left" not in mock_err):
            sys.exit(f"keel exec ({wire}, compact_limit={compact_limit}) failed: exit "
                     f"{proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
                     f"{proc.stderr[-3000:]}\n--- mock\n{mock_err[-2000:]}")
        with open(capture) as f:
            requests = [json.loads(line) for line in f]
        return [r for r in requests if r["endpoint"] in ("responses", "chat_completions")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prompt_order(request, tools=True):
    """The request as providers render it: tools, instructions, then the conversation."""
    body = request["body"]
    if request["endpoint"] == "chat_completions":
        parts = [body["messages"]]
    else:
        parts = [body.get("instructions", ""), body["input"]]
    if tools:
        parts.insert(0, body.get("tools", []))
    return "".join(compact_json(p) for p in parts).encode()


def common_prefix(a, b):
    n = min(len(a), len(b))
    lo = 0
    # Compare in blocks first, then bytes.
    step = 4096
    while lo + step <= n and a[lo:lo + step] == b[lo:lo + step]:
        lo += step
    while lo < n and a[lo] == b[lo]:
        lo += 1
    return lo


def analyse(requests):
    rows = []
    earlier = []
    for request in requests:
        size = int(dict(request["headers"])["content-length"])
        reserialised = len(compact_json(request["body"]).encode())
        if reserialised != size:
            sys.exit(f"request {request['index']}: content-length {size} but the captured body "
                     f"re-serialises to {reserialised} bytes")
        laid_out = prompt_order(request)
        cached = max((common_prefix(prev, laid_out) for prev, _ in earlier), default=0)
        # What the same request would share if its tools were those of the earlier ones.
        conversation = prompt_order(request, tools=False)
        tools_len = len(compact_json(requests[0]["body"].get("tools", [])).encode())
        same_tools = max((tools_len + common_prefix(prev, conversation)
                          for _, prev in earlier), default=0)
        earlier.append((laid_out, conversation))
        body = request["body"]
        summary = not body.get("tools")
        rows.append({"bytes": size, "cached": cached, "summary": summary,
                     "same_tools": same_tools, "tools_len": tools_len})
    return rows


def tok(nbytes):
    return (nbytes + 3) // 4


def report_tokens(name, rows, turns):
    total = sum(r["bytes"] for r in rows)
    cached = sum(r["cached"] for r in rows)
    print(f"\n{name}: {len(rows)} model requests, {tok(total)} input tokens in all "
          f"({total} bytes), cacheable {tok(cached)} ({100 * cached / total:.1f}%), "
          f"uncached {tok(total - cached)}")
    normal = [r for r in rows if not r["summary"]]
    summaries = [r for r in rows if r["summary"]]
    picks = sorted({1, 5, 10, 15, turns, turns + 1} & set(range(1, len(normal) + 1)))
    for k in picks:
        r = normal[k - 1]
        print(f"  request {k:2d}: {tok(r['bytes']):6d} tokens, cacheable {tok(r['cached']):6d}")
    for r in summaries:
        after = rows.index(r)
        with_tools = r["bytes"] + r["tools_len"] - 2
        print(f"  summary request: {tok(r['bytes']):6d} tokens, cacheable {tok(r['cached']):6d}"
              f" (after turn {after}; it offers no tools. With the session's tools it would be "
              f"{tok(with_tools)} tokens, cacheable {tok(r['same_tools'])})")
        r = normal[after]
        print(f"  request {after + 1} (first after compaction): {tok(r['bytes']):6d} tokens, "
              f"cacheable {tok(r['cached']):6d}")
    return {"total": total, "cached": cached}


def tokens(args):
    turns = args.turns
    figures = {}
    for wire in ("responses", "chat"):
        plain = analyse(run_session(args.keel, args.mock, wire, turns))
        if len(plain) != turns + 1:
            sys.exit(f"{wire}: expected {turns + 1} requests, saw {len(plain)}")
        figures[(wire, "off")] = report_tokens(f"{wire}, no compaction", plain, turns)
        # Reported usage = ceil(bytes/4) input + the call's output; compact once, after the
        # 11th model turn: a limit between the totals of requests 10 and 11.
        tokens_10, tokens_11 = tok(plain[9]["bytes"]), tok(plain[10]["bytes"])
        limit = (tokens_10 + tokens_11) // 2 + 20
        compacted = analyse(run_session(args.keel, args.mock, wire, turns,
                                        compact_limit=limit, summary_after=11))
        summaries = [i for i, r in enumerate(compacted) if r["summary"]]
        if summaries != [11] or len(compacted) != turns + 2:
            sys.exit(f"{wire}: expected one summary request as request 12 of {turns + 2}, "
                     f"saw {summaries} of {len(compacted)}")
        figures[(wire, "on")] = report_tokens(
            f"{wire}, model_auto_compact_token_limit = {limit}", compacted, turns)
    print()
    for wire in ("responses", "chat"):
        off, on = figures[(wire, "off")], figures[(wire, "on")]
        print(f"{wire}: compaction saves {tok(off['total'] - on['total'])} input tokens "
              f"({100 * (off['total'] - on['total']) / off['total']:.1f}%); uncached "
              f"{tok(off['total'] - off['cached'])} -> {tok(on['total'] - on['cached'])}")


# --- ttft ---------------------------------------------------------------------------------

class AppServer:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.out = self.proc.stdout
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())

    def read(self):
        line = self.out.readline()
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


def keel_first_delta(server, ws):
    """Seconds from writing turn/start to reading the first agent message delta."""
    thread = server.request("thread/start", {"cwd": ws})["thread"]["id"]
    rid = server.next_id
    server.next_id += 1
    t0 = time.perf_counter()
    server.send({"id": rid, "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": "say hello"}]}})
    first = None
    while True:
        message = server.read()
        method = message.get("method")
        if method == "item/agentMessage/delta" and first is None:
            first = time.perf_counter() - t0
        elif method == "turn/completed":
            if message["params"]["turn"].get("status") != "completed":
                raise RuntimeError(f"turn did not complete: {message}")
            break
    if first is None:
        raise RuntimeError("no item/agentMessage/delta")
    server.request("thread/unsubscribe", {"threadId": thread})
    return first


def curl_first_delta(url, body_path):
    """(curl's time to first delta, seconds from spawning curl to reading the delta line)."""
    argv = ["curl", "-sN", "-X", "POST", "-H", "content-type: application/json",
            "-H", "accept: text/event-stream", "--data-binary", f"@{body_path}",
            "-w", "\nTIMING %{time_connect} %{time_starttransfer}\n", url]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, bufsize=0)
    first_line = first_delta = None
    timing = None
    for line in proc.stdout:
        now = time.perf_counter()
        if first_line is None:
            first_line = now
        if first_delta is None and line.startswith(b"event: response.output_text.delta"):
            first_delta = now
        if line.startswith(b"TIMING "):
            timing = [float(x) for x in line.split()[1:]]
    proc.wait()
    if proc.returncode != 0 or first_delta is None or timing is None:
        raise RuntimeError(f"curl failed (exit {proc.returncode})")
    starttransfer = timing[1]
    return starttransfer + (first_delta - first_line), first_delta - t0


def ttft(args):
    if shutil.which("curl") is None:
        sys.exit("ttft needs curl")
    if 0 < args.delay_ms < 50:
        # The mock does not set TCP_NODELAY: after a pause, the next frame waits for the ACK
        # of the previous ones, which a kept-alive connection (Keel's pool) delays by ~40 ms.
        sys.exit("--delay-ms must be 0 (no pause) or at least 50 (see the comment here)")
    delay = args.delay_ms / 1000
    # Frames: 0 response.created, 1 output_item.added, 2 content_part.added, 3 the first
    # output_text.delta: the stall is right before it.
    turn = {"items": [{"type": "message", "text": "Hello! How can I help you today?"}]}
    if args.delay_ms > 0:
        turn["fault"] = {"type": "stall", "after_events": 3, "duration_ms": args.delay_ms}
    keel, curl, curl_wall = [], [], []
    body_size = 0
    while len(keel) < args.reps:
        # A fresh mock (and app-server) every --batch repetitions: keel-mock-model copies every
        # request it has recorded each time it logs one, so its CPU per request grows with the
        # requests it has served (about 2 ms at 25, 10 ms at 250, with these 16 KB bodies).
        work = tempfile.mkdtemp(prefix="keel-bench-ttft.")
        try:
            home, ws = os.path.join(work, "home"), os.path.join(work, "ws")
            os.makedirs(home)
            os.makedirs(ws)
            capture = os.path.join(work, "capture.jsonl")
            mock = Mock(args.mock, {"model": "mock-model", "turns": [turn]}, work,
                        capture=capture, repeat=True)
            write_config(home, mock.port, "responses")
            server = AppServer([args.keel, "app-server"], dict(os.environ, KEEL_HOME=home))
            server.request("initialize", {"clientInfo": {"name": "bench", "version": "1"}})
            server.send({"method": "initialized"})
            keel_first_delta(server, ws)  # warm-up; its request is the body curl sends
            with open(capture) as f:
                first = next(json.loads(line) for line in f if '"responses"' in line)
            body_path = os.path.join(work, "body.json")
            with open(body_path, "w") as f:
                f.write(compact_json(first["body"]))
            body_size = os.path.getsize(body_path)
            url = f"http://127.0.0.1:{mock.port}/v1/responses"
            curl_first_delta(url, body_path)  # warm-up
            for _ in range(min(args.batch, args.reps - len(keel))):
                c, w = curl_first_delta(url, body_path)
                curl.append(c - delay)
                curl_wall.append(w - delay)
                keel.append(keel_first_delta(server, ws) - delay)
            server.close()
            mock_err = mock.stop()
            if "violation" in mock_err:
                sys.exit(f"the mock saw protocol violations:\n{mock_err[-2000:]}")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def ms(values, q):
        return percentile(values, q) * 1000

    print(f"request body {body_size} bytes; delay before the first delta {args.delay_ms} ms; "
          f"{args.reps} repetitions of each client, fresh processes every {args.batch}")
    print("| client, time to first delta − delay | p50 | p90 |")
    print("| --- | ---: | ---: |")
    print(f"| curl: time_starttransfer + gap to the delta line | {ms(curl, .5):.2f} ms | "
          f"{ms(curl, .9):.2f} ms |")
    print(f"| curl: wall time from spawning it to reading the delta line | "
          f"{ms(curl_wall, .5):.2f} ms | {ms(curl_wall, .9):.2f} ms |")
    print(f"| keel app-server: turn/start written → first item/agentMessage/delta read | "
          f"{ms(keel, .5):.2f} ms | {ms(keel, .9):.2f} ms |")
    diffs = [k - c for k, c in zip(keel, curl)]
    print(f"Keel − curl: p50 {ms(keel, .5) - ms(curl, .5):.2f} ms, p90 "
          f"{ms(keel, .9) - ms(curl, .9):.2f} ms; median of the paired differences "
          f"{statistics.median(diffs) * 1000:.2f} ms")
    for name, values in (("keel", keel), ("curl", curl)):
        print(f"raw {name} ms:", " ".join(f"{v * 1000:.1f}" for v in values), file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("tokens", "ttft"):
        p = sub.add_parser(name)
        p.add_argument("--keel", required=True)
        p.add_argument("--mock", required=True)
        if name == "tokens":
            p.add_argument("--turns", type=int, default=20)
        else:
            p.add_argument("--reps", type=int, default=30)
            p.add_argument("--delay-ms", type=int, default=100)
            p.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    {"tokens": tokens, "ttft": ttft}[args.mode](args)


if __name__ == "__main__":
    main()
