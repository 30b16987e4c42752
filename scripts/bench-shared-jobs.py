#!/usr/bin/env python3
"""Fan-out on the shared store: one agent job of N rows worked by 1, 2 and 4
`keel agent-job work` processes on a throwaway PostgreSQL cluster, next to one process on a
SQLite file. Against `keel-mock-model --agent-job` (every worker: two model requests and one
result, no command), so the figures are Keel's and the store's overhead, not a model's.

    scripts/bench-shared-jobs.py --keel B/keel --mock B/keel-mock-model [--rows 10000]
        [--processes "1 2 4"] [--concurrency 16] [--pg-bin /usr/lib/postgresql/15/bin]

Prints a markdown table: wall time, rows per second, p50/p99 claim latency (from the workers'
summaries), the store's size. Runs as root by starting PostgreSQL as `nobody`.
"""
import argparse
import glob
import json
import os
import shutil
import socket
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
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"

[features]
shell_snapshot = false
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_nobody():
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)


class Postgres:
    """A throwaway cluster (initdb in a temporary directory, a free loopback port)."""

    def __init__(self, bin_dir):
        self.bin = bin_dir
        self.dir = tempfile.mkdtemp(prefix="keel-bench-pg-")
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            os.chown(self.dir, 65534, 65534)
        self.password = "bench-" + os.urandom(6).hex()
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write(self.password + "\n")
        if os.geteuid() == 0:
            os.chown(pwfile, 65534, 65534)
        data = os.path.join(self.dir, "data")
        subprocess.run([os.path.join(bin_dir, "initdb"), "-D", data, "-U", "keel",
                        "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8",
                        "--no-sync"], check=True, stdout=subprocess.DEVNULL,
                       preexec_fn=as_nobody, cwd=self.dir, env={**os.environ, "LC_ALL": "C"})
        self.port = free_port()
        # The settings of a database that must not lose commits (fsync on): the figures
        # should be what a real shared store costs.
        self.server = subprocess.Popen(
            [os.path.join(bin_dir, "postgres"), "-D", data, "-h", "127.0.0.1",
             "-p", str(self.port), "-k", self.dir, "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=as_nobody,
            cwd=self.dir, env={**os.environ, "LC_ALL": "C"}, text=True)
        for line in self.server.stderr:
            if "ready to accept connections" in line:
                break
        else:
            sys.exit("postgres did not start")

    @property
    def url(self):
        return f"postgres://keel@127.0.0.1:{self.port}/postgres"

    def psql(self, sql):
        out = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-A", "-t", "-d", self.url,
                              "-c", sql], check=True, capture_output=True, text=True,
                             env={**os.environ, "PGPASSWORD": self.password})
        return out.stdout.strip()

    def close(self):
        self.server.send_signal(3)  # SIGQUIT: immediate shutdown
        self.server.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run_job(keel, home, ws, store, env, processes, concurrency):
    base = {**os.environ, **env, "KEEL_HOME": home, "KEEL_AGENT_JOB_STORE": store}
    job = subprocess.run([keel, "agent-job", "start", "--csv", "rows.csv",
                          "--instruction", "Handle {name}"],
                         cwd=ws, env=base, check=True, capture_output=True,
                         text=True).stdout.strip()
    started = time.monotonic()
    workers = [subprocess.Popen([keel, "agent-job", "work", job, "--concurrency",
                                 str(concurrency)], cwd=ws, env=base,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
               for _ in range(processes)]
    summaries = []
    for worker in workers:
        out, _ = worker.communicate()
        if worker.returncode != 0:
            sys.exit(f"a worker failed ({worker.returncode})")
        summaries.append(json.loads(out))
    wall = time.monotonic() - started
    counts = summaries[-1]["counts"]
    if counts["completed"] != counts["total"]:
        sys.exit(f"not every row completed: {counts}")
    return job, wall, summaries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keel", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--processes", default="1 2 4")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pg-bin", default=None)
    args = parser.parse_args()
    pg_bin = args.pg_bin or sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                   key=lambda p: int(p.split("/")[-2]))[-1]

    scratch = tempfile.mkdtemp(prefix="keel-bench-jobs-")
    home, ws = os.path.join(scratch, "home"), os.path.join(scratch, "ws")
    os.makedirs(home)
    os.makedirs(ws)
    with open(os.path.join(ws, "rows.csv"), "w") as f:
        f.write("name\n")
        for i in range(args.rows):
            f.write(f"row {i}\n")
    job_args = os.path.join(scratch, "job.json")
    with open(job_args, "w") as f:
        json.dump({"csv_path": "rows.csv", "instruction": "unused"}, f)
    port = free_port()
    mock = subprocess.Popen([args.mock, "--agent-job", job_args, "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(CONFIG.format(port=port))
    pg = Postgres(pg_bin)
    print(f"\n{args.rows} rows, {args.concurrency} worker agents per process, "
          f"PostgreSQL {pg.psql('SHOW server_version')}\n")
    print("| store | processes | wall | rows/s | claim p50 | claim p99 | store size |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        runs = [("SQLite file", os.path.join(scratch, "jobs.sqlite3"), {}, 1)]
        runs += [("PostgreSQL", pg.url, {"PGPASSWORD": pg.password}, int(n))
                 for n in args.processes.split()]
        for label, store, env, processes in runs:
            job, wall, summaries = run_job(args.keel, home, ws, store, env, processes,
                                           args.concurrency)
            p50 = statistics.median(s["claim_ms"]["p50"] for s in summaries)
            p99 = max(s["claim_ms"]["p99"] for s in summaries)
            if label == "PostgreSQL":
                size = int(pg.psql("SELECT pg_total_relation_size('agent_job_items') + "
                                   "pg_total_relation_size('agent_jobs')"))
                # Each run starts on empty tables, so each size is one job's.
                pg.psql("TRUNCATE agent_job_items, agent_jobs")
            else:
                size = sum(os.path.getsize(p) for p in glob.glob(store + "*"))
            print(f"| {label} | {processes} | {wall:.1f} s | {args.rows / wall:.0f} | "
                  f"{p50:.2f} ms | {p99:.2f} ms | {size / 2**20:.1f} MiB |")
    finally:
        pg.close()
        mock.terminate()
        mock.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
