#!/usr/bin/env bash
# Benchmark `keel exec` end to end against `keel-mock-model`, optionally next to the reference
# Codex `exec`, and print a markdown table of median wall time and peak RSS.
#
# Not part of `cargo test`: it builds nothing and measures whatever binaries it is given.
#
#   CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
#   scripts/bench-exec.sh --keel /work/target-bench/release/keel \
#       --mock /work/target-bench/release/keel-mock-model \
#       [--codex /path/to/codex] [--runs 5] [--warmup 1] [--turns "1 11 51"] \
#       [--commands echo|bash-lc] [--profile-ms N | --real-home] [--keel-flag FLAG]... [--hooks noop] \
#       [--tool shell|exec_command|exec-script]
#
# Realistic mode (`--commands bash-lc --profile-ms 100`): models send their commands as
# `["bash", "-lc", "..."]`, and a developer's login profile (pyenv, nvm, conda, cargo env) costs
# 100 ms or more per login shell. `--commands bash-lc` makes every call `bash -lc "echo step K"`
# instead of the bare `echo "step K"`; `--profile-ms N` gives both tools a HOME whose
# `.bash_profile` spends N ms (a `sleep`, standing in for such init scripts) and exports a
# variable. Without it HOME is an empty directory. The measured cost of one `bash -lc true` with
# that HOME is printed with the table, so the figure says what workload it stands for.
# `--real-home` runs both tools with the caller's own HOME instead (its real login profile, e.g.
# a pyenv init). Both tools' own homes stay in the scratch dir, but the login shells run the
# real profile, which may write under HOME (e.g. `pyenv rehash`).
# `--keel-flag` passes one more argument to `keel exec` (repeatable), e.g.
# `--keel-flag -c --keel-flag features.shell_snapshot=false` to measure without snapshots.
# `--hooks noop` gives both tools a user hooks file with one no-op (`true`) `PreToolUse` and one
# no-op `PostToolUse` hook for every tool, and runs both with `--dangerously-bypass-hook-trust`
# (so no trust records are needed): the difference to a run without it is what a hook pair
# costs per tool call.
# `--tool exec_command` makes every call an `exec_command` function call (the unified-exec tool
# that both Keel and Codex offer by default) instead of a `shell` call: arguments
# `{"cmd": "echo step K", "yield_time_ms": 10000, "login": false}`, i.e. `bash -c 'echo step K'`
# (with `--commands bash-lc`: `"login": true`, i.e. `bash -lc 'echo step K'`). Codex 0.169 runs
# its hooks on this path (tool name `Bash`) but not for `shell` calls, so hook figures need it.
# `--tool exec-script` (Keel only) drives `gpt-6.2-sol` in code mode: every call is a custom
# `exec` call whose JavaScript runs `await tools.exec_command({cmd: "echo step K", login:
# false})` and returns its output with `text()`, so each call starts the embedded engine.
#
# For each script size N the harness writes a mock script of N model turns: N-1 turns that
# each make one tool call (`echo "step K"`) and a last turn that answers "done". Every run
# gets a fresh mock (it serves its queue of turns once), a config.toml pointing at it, and
# a scratch workspace; the run must exit 0, print "done" on stdout and leave the mock with
# 0 turns left and no protocol violations, otherwise the harness stops with the logs.
#
# Measured per run, for the engine process only (the mock is a separate process tree):
# - wall: nanosecond clock around `/usr/bin/time ... <tool> exec ...`, reported in ms;
# - peak RSS: GNU time's %M, i.e. ru_maxrss from wait4(2): the largest peak RSS of the
#   process or of any descendant it reaped (a maximum, not a sum over the tree).
# Per size, `--warmup` rounds are discarded, then `--runs` rounds run each tool once in turn,
# so load from elsewhere hits both alike. The home directory (KEEL_HOME / CODEX_HOME)
# persists across runs of one tool so that first-run setup lands in the warm-up.
# The table goes to stdout, per-run figures to stderr. Needs GNU time at /usr/bin/time.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

keel=""
mock=""
codex=""
runs=5
warmup=1
turn_counts="1 11 51"
commands="echo"
profile_ms=0
real_home=0
keel_flags=()
hooks=""
tool_kind="shell"
while (($#)); do
    case "$1" in
        --keel) keel="$2"; shift 2 ;;
        --mock) mock="$2"; shift 2 ;;
        --codex) codex="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --turns) turn_counts="$2"; shift 2 ;;
        --commands) commands="$2"; shift 2 ;;
        --profile-ms) profile_ms="$2"; shift 2 ;;
        --real-home) real_home=1; shift ;;
        --keel-flag) keel_flags+=("$2"); shift 2 ;;
        --hooks) hooks="$2"; shift 2 ;;
        --tool) tool_kind="$2"; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "bench-exec: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

die() {
    echo "bench-exec: $*" >&2
    exit 1
}

[[ -x "$keel" ]] || die "--keel must name the keel binary (got '${keel}')"
[[ -x "$mock" ]] || die "--mock must name the keel-mock-model binary (got '${mock}')"
[[ -z "$codex" || -x "$codex" ]] || die "--codex is not executable: $codex"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer"
[[ "$commands" == echo || "$commands" == bash-lc ]] || die "--commands must be echo or bash-lc"
[[ "$profile_ms" =~ ^[0-9]+$ ]] || die "--profile-ms must be a non-negative integer"
[[ -z "$hooks" || "$hooks" == noop ]] || die "--hooks must be noop"
[[ "$tool_kind" == shell || "$tool_kind" == exec_command || "$tool_kind" == exec-script ]] ||
    die "--tool must be shell, exec_command or exec-script"
[[ "$tool_kind" != exec-script || -z "$codex" ]] || die "--tool exec-script measures Keel only"
model="mock-model"
[[ "$tool_kind" == exec-script ]] && model="gpt-6.2-sol"
/usr/bin/time --version 2>&1 | grep -q GNU || die "needs GNU time at /usr/bin/time (apt-get install time)"

work="$(mktemp -d -t keel-bench.XXXXXX)"
mock_pid=""

stop_mock() {
    if [[ -n "$mock_pid" ]]; then
        kill -TERM "$mock_pid" 2>/dev/null || true
        wait "$mock_pid" 2>/dev/null || true
        mock_pid=""
    fi
    exec 3<&-
}

cleanup() {
    stop_mock
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# gen_script N FILE: N model turns, the first N-1 of them one tool call each.
gen_script() {
    local n="$1" file="$2" k login=false
    [[ "$commands" == bash-lc ]] && login=true
    {
        printf '{"model":"%s","turns":[\n' "$model"
        for ((k = 1; k < n; k++)); do
            if [[ "$tool_kind" == exec-script ]]; then
                printf '{"items":[{"type":"custom_tool_call","call_id":"call-%d","name":"exec","input":"const r = await tools.exec_command({cmd: \\"echo step %d\\", login: false}); text(r.output);"}]},\n' "$k" "$k"
            elif [[ "$tool_kind" == exec_command ]]; then
                printf '{"items":[{"type":"function_call","call_id":"call-%d","name":"exec_command","arguments":{"cmd":"echo step %d","yield_time_ms":10000,"login":%s}}]},\n' "$k" "$k" "$login"
            elif [[ "$commands" == bash-lc ]]; then
                printf '{"items":[{"type":"shell_call","call_id":"call-%d","command":["bash","-lc","echo step %d"]}]},\n' "$k" "$k"
            else
                printf '{"items":[{"type":"shell_call","call_id":"call-%d","command":["echo","step %d"]}]},\n' "$k" "$k"
            fi
        done
        printf '{"items":[{"type":"message","text":"done"}]}\n]}\n'
    } >"$file"
}

# make_user_home DIR: the HOME both tools run with: empty, or with a login profile that costs
# about `profile_ms`.
make_user_home() {
    local dir="$1"
    rm -rf "$dir"
    mkdir -p "$dir"
    if ((profile_ms > 0)); then
        {
            echo "# Stands in for pyenv/nvm/conda init: ${profile_ms} ms of work in every login shell."
            echo "sleep $(awk -v ms="$profile_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
            echo "export BENCH_PROFILE_LOADED=1"
        } >"$dir/.bash_profile"
    fi
}

# start_mock SCRIPT: starts a fresh mock, sets mock_pid and mock_uri.
start_mock() {
    local fifo="$work/mock.fifo"
    rm -f "$fifo"
    mkfifo "$fifo"
    # Read-write open so that `read -t` times out instead of blocking if the mock dies early.
    exec 3<>"$fifo"
    "$mock" --script "$1" >"$fifo" 2>"$work/mock.err" &
    mock_pid=$!
    if ! read -r -t 10 mock_uri <&3; then
        cat "$work/mock.err" >&2
        die "the mock did not print its URI within 10 s"
    fi
}

# check_mock: after stop_mock, the script must have been consumed with no violations.
check_mock() {
    if grep -q 'violation' "$work/mock.err" || ! grep -q ' 0 turn(s) left' "$work/mock.err"; then
        cat "$work/mock.err" >&2
        die "the mock script was not fully and cleanly consumed (see above)"
    fi
}

write_config() {
    local home="$1" uri="$2"
    cat >"$home/config.toml" <<EOF
model = "$model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "$uri"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
EOF
}

# run_one TOOL N: one measured run; sets run_wall (ms) and run_rss (KiB). It runs in the main
# shell, never in a `$(...)` subshell, so the EXIT trap always sees the mock it started.
run_one() {
    local tool="$1" n="$2" home="$work/home-$1" ws="$work/ws-$1-$2"
    local out="$work/out" err="$work/err" t0 t1 status=0
    mkdir -p "$home"
    rm -rf "$ws"
    mkdir -p "$ws"
    start_mock "$work/script-$n.json"
    write_config "$home" "$mock_uri"
    local -a hook_flags=()
    if [[ "$hooks" == noop ]]; then
        printf '%s\n' '{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"true"}]}],"PostToolUse":[{"hooks":[{"type":"command","command":"true"}]}]}}' >"$home/hooks.json"
        hook_flags=(--dangerously-bypass-hook-trust)
    fi
    local -a cmd
    case "$tool" in
        keel) cmd=(env HOME="$user_home" KEEL_HOME="$home" "$keel" exec "${hook_flags[@]}" "${keel_flags[@]}" "do the task") ;;
        codex) cmd=(env HOME="$user_home" CODEX_HOME="$home" OPENAI_API_KEY=x "$codex" exec "${hook_flags[@]}" --skip-git-repo-check "do the task") ;;
    esac
    t0=$(date +%s%N)
    (cd "$ws" && /usr/bin/time -f '%M' -o "$work/time" "${cmd[@]}" </dev/null >"$out" 2>"$err") || status=$?
    t1=$(date +%s%N)
    stop_mock
    if ((status != 0)) || ! grep -q 'done' "$out"; then
        echo "--- command: ${cmd[*]} (cwd $ws), exit $status" >&2
        echo "--- stdout" >&2; cat "$out" >&2
        echo "--- stderr" >&2; tail -n 40 "$err" >&2
        echo "--- mock stderr" >&2; tail -n 20 "$work/mock.err" >&2
        die "$tool exec failed on the $n-turn script"
    fi
    check_mock
    run_wall=$(((t1 - t0) / 1000000))
    run_rss="$(tail -n 1 "$work/time")"
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# measure N TOOL...: warm-up runs, then `runs` rounds that run each tool once in turn, so a
# burst of load from elsewhere hits every tool alike. Sets med_wall[TOOL] (ms), med_rss[TOOL]
# and max_rss[TOOL] (KiB); the raw figures go to stderr.
declare -A med_wall med_rss max_rss
measure() {
    local n="$1" i tool
    shift
    local -A walls=() rsses=()
    for ((i = 0; i < warmup; i++)); do
        for tool in "$@"; do
            run_one "$tool" "$n"
        done
    done
    for ((i = 0; i < runs; i++)); do
        for tool in "$@"; do
            run_one "$tool" "$n"
            walls[$tool]+="$run_wall"$'\n'
            rsses[$tool]+="$run_rss"$'\n'
        done
    done
    for tool in "$@"; do
        med_wall[$tool]="$(printf '%s' "${walls[$tool]}" | median)"
        med_rss[$tool]="$(printf '%s' "${rsses[$tool]}" | median)"
        max_rss[$tool]="$(printf '%s' "${rsses[$tool]}" | sort -n | tail -n 1)"
        echo "bench-exec: $tool, $n turns: wall ms [$(printf '%s' "${walls[$tool]}" | tr '\n' ' ')] peak RSS KiB [$(printf '%s' "${rsses[$tool]}" | tr '\n' ' ')]" >&2
    done
}

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

for n in $turn_counts; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--turns must list positive integers"
    gen_script "$n" "$work/script-$n.json"
done
if ((real_home)); then
    ((profile_ms == 0)) || die "--real-home and --profile-ms exclude each other"
    user_home="$HOME"
else
    user_home="$work/user-home"
    make_user_home "$user_home"
fi

# time_ms CMD...: median wall time of 5 runs of CMD, in ms (one decimal).
time_ms() {
    local i t0 t1
    for ((i = 0; i < 5; i++)); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 100000))
    done | median | awk '{ printf "%.1f", $1 / 10 }'
}
login_ms="$(time_ms env -i HOME="$user_home" PATH="$PATH" bash -lc true)"
bare_ms="$(time_ms env -i HOME="$user_home" PATH="$PATH" bash -c 'echo step')"
if ((real_home)); then
    home_note="the caller's own login profile (HOME=$HOME)"
elif ((profile_ms > 0)); then
    home_note="a login profile of ${profile_ms} ms"
else
    home_note="no profile (empty HOME)"
fi
if [[ "$tool_kind" == exec-script ]]; then
    echo "Workload: gpt-6.2-sol in code mode; each tool call is an exec script running exec_command {\"cmd\": \"echo step K\", \"login\": false}; HOME has ${home_note}."
elif [[ "$tool_kind" == exec_command && "$commands" == bash-lc ]]; then
    echo "Workload: each tool call is exec_command {\"cmd\": \"echo step K\", \"login\": true} (\`bash -lc\`); HOME has ${home_note}; one \`bash -lc true\` takes ${login_ms} ms there, \`bash -c 'echo step'\` ${bare_ms} ms."
elif [[ "$tool_kind" == exec_command ]]; then
    echo "Workload: each tool call is exec_command {\"cmd\": \"echo step K\", \"login\": false} (\`bash -c\`); HOME has ${home_note}."
elif [[ "$commands" == bash-lc ]]; then
    echo "Workload: each tool call runs [\"bash\", \"-lc\", \"echo step K\"]; HOME has ${home_note}; one \`bash -lc true\` takes ${login_ms} ms there, \`bash -c 'echo step'\` ${bare_ms} ms."
else
    echo "Workload: each tool call runs [\"echo\", \"step K\"] (no shell); HOME has ${home_note}."
fi
echo

echo "bench-exec: $runs measured run(s) after $warmup warm-up run(s) per tool and size" >&2
if [[ -n "$codex" ]]; then
    echo "| model turns | keel wall (median) | codex wall (median) | wall keel/codex | keel peak RSS (median) | codex peak RSS (median) | RSS keel/codex |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
else
    echo "| model turns | keel wall (median) | keel peak RSS (median) | keel peak RSS (max) |"
    echo "| ---: | ---: | ---: | ---: |"
fi
declare -A first_wall last_wall
first_n=""
last_n=""
for n in $turn_counts; do
    if [[ -n "$codex" ]]; then
        measure "$n" keel codex
        if [[ -z "$first_n" ]]; then
            first_n="$n"; first_wall[keel]="${med_wall[keel]}"; first_wall[codex]="${med_wall[codex]}"
        fi
        last_n="$n"; last_wall[keel]="${med_wall[keel]}"; last_wall[codex]="${med_wall[codex]}"
        echo "| $n | ${med_wall[keel]} ms | ${med_wall[codex]} ms | $(ratio "${med_wall[keel]}" "${med_wall[codex]}") | $(mib "${med_rss[keel]}") MiB | $(mib "${med_rss[codex]}") MiB | $(ratio "${med_rss[keel]}" "${med_rss[codex]}") |"
    else
        measure "$n" keel
        if [[ -z "$first_n" ]]; then
            first_n="$n"; first_wall[keel]="${med_wall[keel]}"
        fi
        last_n="$n"; last_wall[keel]="${med_wall[keel]}"
        echo "| $n | ${med_wall[keel]} ms | $(mib "${med_rss[keel]}") MiB | $(mib "${max_rss[keel]}") MiB |"
    fi
done
# The marginal cost of one more turn (one mock round trip and one tool call), from the smallest
# and largest script sizes.
if [[ -n "$first_n" && "$last_n" != "$first_n" ]]; then
    calls=$((last_n - first_n))
    per_call() { awk -v a="$1" -v b="$2" -v c="$calls" 'BEGIN { printf "%.1f", (b - a) / c }'; }
    line="Per extra turn with a tool call (${first_n} → ${last_n} turns): keel $(per_call "${first_wall[keel]}" "${last_wall[keel]}") ms"
    if [[ -n "$codex" ]]; then
        line+=", codex $(per_call "${first_wall[codex]}" "${last_wall[codex]}") ms"
    fi
    echo
    echo "${line}; the command alone (\`bash -c 'echo step'\`) takes ${bare_ms} ms."
fi
