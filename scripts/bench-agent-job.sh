#!/usr/bin/env bash
# Benchmark an agent job (`spawn_agents_on_csv`) through `keel exec` against
# `keel-mock-model --agent-job`, optionally next to the reference Codex `exec` on the same
# mock, and print a markdown table of wall time, peak RSS and whether the results CSV is whole.
#
#   CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
#   scripts/bench-agent-job.sh --keel /work/target-bench/release/keel \
#       --mock /work/target-bench/release/keel-mock-model \
#       [--codex /path/to/codex] [--rows "100 10000"] [--concurrency 64] [--runs 3]
#
# Workload: a CSV of N rows (`id,name`); the main agent makes one `spawn_agents_on_csv` call
# (instruction with a `{name}` placeholder, `id_column`, `output_csv_path`,
# `max_concurrency` = --concurrency); each worker agent makes one `report_agent_job_result`
# call and then answers; both engines run with `agents.max_threads` = --concurrency (Codex also
# with `features.enable_fanout=true`). The mock answers at once, so the figures are the
# engine's own cost per worker (spawning an agent, two model round trips, recording the row)
# times the rows, divided by the concurrency. No shell commands run.
#
# Measured for the engine process only: wall (nanosecond clock around /usr/bin/time) and peak
# RSS (GNU time's %M). A run counts only if it exits 0 and its results CSV has a header and one
# completed row per input row. Needs GNU time at /usr/bin/time and python3 (to check the CSV).
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

keel=""
mock=""
codex=""
row_counts="100"
concurrency=64
runs=3
while (($#)); do
    case "$1" in
        --keel) keel="$2"; shift 2 ;;
        --mock) mock="$2"; shift 2 ;;
        --codex) codex="$2"; shift 2 ;;
        --rows) row_counts="$2"; shift 2 ;;
        --concurrency) concurrency="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "bench-agent-job: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

die() {
    echo "bench-agent-job: $*" >&2
    exit 1
}

[[ -x "$keel" ]] || die "--keel must name the keel binary (got '${keel}')"
[[ -x "$mock" ]] || die "--mock must name the keel-mock-model binary (got '${mock}')"
[[ -z "$codex" || -x "$codex" ]] || die "--codex is not executable: $codex"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ "$concurrency" =~ ^[1-9][0-9]*$ ]] || die "--concurrency must be a positive integer"
/usr/bin/time --version 2>&1 | grep -q GNU || die "needs GNU time at /usr/bin/time (apt-get install time)"

work="$(mktemp -d -t keel-job-bench.XXXXXX)"
mock_pid=""

stop_mock() {
    if [[ -n "$mock_pid" ]]; then
        kill -TERM "$mock_pid" 2>/dev/null || true
        wait "$mock_pid" 2>/dev/null || true
        mock_pid=""
    fi
    exec 3<&- || true
}
cleanup() {
    stop_mock
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_mock JOB_JSON: a fresh mock running that job; sets mock_pid and mock_uri.
start_mock() {
    local fifo="$work/mock.fifo"
    rm -f "$fifo"
    mkfifo "$fifo"
    exec 3<>"$fifo"
    "$mock" --agent-job "$1" >"$fifo" 2>"$work/mock.err" &
    mock_pid=$!
    if ! read -r -t 10 mock_uri <&3; then
        cat "$work/mock.err" >&2
        die "the mock did not print its URI within 10 s"
    fi
}

write_config() {
    cat >"$1/config.toml" <<EOC
model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[agents]
max_threads = $concurrency

[features]
enable_fanout = true

[model_providers.mock]
name = "mock"
base_url = "$2"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
EOC
}

# check_results FILE N: the CSV has a header and N rows, all completed.
check_results() {
    python3 - "$1" "$2" <<'EOP'
import csv, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
done = sum(1 for r in rows if r.get("status") == "completed")
if len(rows) != n or done != n:
    print(f"{len(rows)} rows, {done} completed (expected {n})", file=sys.stderr)
    sys.exit(1)
EOP
}

# run_one TOOL N: sets run_wall (ms) and run_rss (KiB).
run_one() {
    local tool="$1" n="$2" home="$work/home-$1" ws="$work/ws-$1-$2"
    local t0 t1 status=0
    rm -rf "$home" "$ws"
    mkdir -p "$home" "$ws"
    python3 -c "
import sys
n = int(sys.argv[1])
with open(sys.argv[2], 'w') as f:
    f.write('id,name\n')
    for i in range(1, n + 1):
        f.write(f'id{i},name {i}\n')
" "$n" "$ws/rows.csv"
    printf '{"csv_path":"%s","instruction":"Check the row of {name}","id_column":"id","output_csv_path":"%s","max_concurrency":%d}\n' \
        "$ws/rows.csv" "$ws/results.csv" "$concurrency" >"$work/job.json"
    start_mock "$work/job.json"
    write_config "$home" "$mock_uri"
    local -a cmd
    case "$tool" in
        keel) cmd=(env KEEL_HOME="$home" "$keel" exec "run the job on rows.csv") ;;
        codex) cmd=(env CODEX_HOME="$home" OPENAI_API_KEY=x "$codex" exec --skip-git-repo-check
            -c features.enable_fanout=true -c "agents.max_threads=$concurrency" "run the job on rows.csv") ;;
    esac
    t0=$(date +%s%N)
    (cd "$ws" && /usr/bin/time -f '%M' -o "$work/time" "${cmd[@]}" </dev/null >"$work/out" 2>"$work/err") || status=$?
    t1=$(date +%s%N)
    stop_mock
    if ((status != 0)) || ! check_results "$ws/results.csv" "$n"; then
        echo "--- command: ${cmd[*]} (cwd $ws), exit $status" >&2
        echo "--- stdout" >&2; tail -n 20 "$work/out" >&2
        echo "--- stderr" >&2; tail -n 40 "$work/err" >&2
        echo "--- mock stderr" >&2; tail -n 20 "$work/mock.err" >&2
        die "$tool failed the $n-row job"
    fi
    run_wall=$(((t1 - t0) / 1000000))
    run_rss="$(tail -n 1 "$work/time")"
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

tools=(keel)
[[ -n "$codex" ]] && tools+=(codex)
echo "| rows | at once | engine | wall (median of $runs) | peak RSS (median) | results |"
echo "| ---: | ---: | --- | ---: | ---: | --- |"
for n in $row_counts; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--rows must list positive integers"
    for tool in "${tools[@]}"; do
        walls="" rsses=""
        for ((i = 0; i < runs; i++)); do
            run_one "$tool" "$n"
            walls+="$run_wall"$'\n'
            rsses+="$run_rss"$'\n'
        done
        echo "bench-agent-job: $tool, $n rows: wall ms [$(printf '%s' "$walls" | tr '\n' ' ')] peak RSS KiB [$(printf '%s' "$rsses" | tr '\n' ' ')]" >&2
        echo "| $n | $concurrency | $tool | $(printf '%s' "$walls" | median) ms | $(mib "$(printf '%s' "$rsses" | median)") MiB | $n/$n completed |"
    done
done
