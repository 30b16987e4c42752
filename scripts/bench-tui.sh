#!/usr/bin/env bash
# The Codex 0.169 TUI (`codex --remote`) on `keel app-server` next to the same TUI on Codex's
# own `codex app-server`: time from launching the TUI to its ready prompt, and the app-server's
# peak RSS over a session of two turns (one runs `bash -lc` after an approval-free policy).
#
# Not part of `cargo test`; it builds nothing:
#   CARGO_TARGET_DIR=/work/target-bench cargo build --release -p keel -p keel-test-support
#   npm install --prefix /tmp/ref169 @openai/codex@0.169.0
#   scripts/bench-tui.sh --keel /work/target-bench/release/keel \
#       --mock /work/target-bench/release/keel-mock-model \
#       --codex "$(find /tmp/ref169 -path '*x86_64-unknown-linux-musl/bin/codex' -type f)" [--runs 5]
#
# Workload: a scratch workspace and homes; the mock model answers every request with a
# `bash -lc 'echo bench'` call followed by a short message (title turns get the same).
# Ready = the pane shows "Ask Codex to do anything". RSS = VmHWM of the server process after
# the second turn's answer is on screen.
set -euo pipefail

KEEL="" MOCK="" CODEX="" RUNS=5
while [ $# -gt 0 ]; do
    case $1 in
        --keel) KEEL=$2; shift 2 ;;
        --mock) MOCK=$2; shift 2 ;;
        --codex) CODEX=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$KEEL" ] && [ -x "$MOCK" ] && [ -x "$CODEX" ] || { echo "need --keel, --mock and --codex" >&2; exit 2; }

WORK=$(mktemp -d)
cleanup() {
    # Only the main shell cleans up (subshells inherit the trap).
    [ "$BASHPID" = "$$" ] || return 0
    tmux kill-session -t bench-tui 2>/dev/null || true
    pkill -P $$ 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
cat > "$WORK/script.json" <<'JSON'
[{"items": [{"type": "shell_call", "call_id": "c1", "command": ["bash", "-lc", "echo bench"]}]},
 {"items": [{"type": "message", "text": "{\"title\": \"bench\"}"}]}]
JSON

now_ms() { date +%s%3N; }

wait_screen() { # text timeout_s
    local deadline=$(( $(date +%s) + $2 ))
    while ! tmux capture-pane -p -t bench-tui 2>/dev/null | grep -qF "$1"; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "timeout waiting for: $1" >&2; tmux capture-pane -p -t bench-tui >&2 || true; return 1; }
        sleep 0.02
    done
}

run_one() { # kind -> prints "startup_ms rss_kib"
    local kind=$1 port mockport home codex_home ws pid start ready
    home="$WORK/$kind-home"; codex_home="$WORK/$kind-tui"; ws="$WORK/$kind-ws"
    rm -rf "$home" "$codex_home" "$ws"; mkdir -p "$home" "$codex_home" "$ws"
    echo 'disable_paste_burst = true' > "$codex_home/config.toml"
    mockport=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    "$MOCK" --script "$WORK/script.json" --repeat --bind "127.0.0.1:$mockport" >/dev/null 2>&1 &
    local mock_pid=$!
    local config="model = \"mock-model\"
model_provider = \"mock\"
approval_policy = \"never\"
sandbox_mode = \"danger-full-access\"
[model_providers.mock]
name = \"mock\"
base_url = \"http://127.0.0.1:$mockport/v1\"
wire_api = \"responses\"
request_max_retries = 0
stream_max_retries = 0"
    if [ "$kind" = keel ]; then
        echo "$config" > "$home/config.toml"
        (cd "$ws" && KEEL_HOME="$home" exec "$KEEL" app-server --listen "ws://127.0.0.1:$port") >/dev/null 2>&1 &
    else
        echo "$config" > "$home/config.toml"
        (cd "$ws" && CODEX_HOME="$home" OPENAI_API_KEY=x exec "$CODEX" app-server --listen "ws://127.0.0.1:$port") >/dev/null 2>&1 &
    fi
    pid=$!
    until python3 -c "import socket;socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; do sleep 0.02; done
    start=$(now_ms)
    tmux new-session -d -s bench-tui -x 120 -y 40 -c "$ws" -e "CODEX_HOME=$codex_home" -e OPENAI_API_KEY=x \
        "$CODEX" --remote "ws://127.0.0.1:$port"
    wait_screen "Ask Codex to do anything" 60
    ready=$(now_ms)
    tmux send-keys -t bench-tui -l "first turn"; wait_screen "› first turn" 30; tmux send-keys -t bench-tui Enter
    wait_screen "Worked for" 60
    tmux send-keys -t bench-tui -l "second turn"; wait_screen "› second turn" 30; tmux send-keys -t bench-tui Enter
    wait_screen "bench" 60
    local rss
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    tmux kill-session -t bench-tui
    # Codex's app-server drains on SIGTERM for a long while; the measurement is taken.
    kill -9 "$pid" "$mock_pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
    echo "$((ready - start)) $rss"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "| server | TUI start-up to ready prompt (median, range) | server peak RSS (median, range) |"
echo "| --- | ---: | ---: |"
for kind in ${KINDS:-keel codex}; do
    : > "$WORK/$kind.times"; : > "$WORK/$kind.rss"
    for _ in $(seq "$RUNS"); do
        run_one "$kind" > "$WORK/one"
        read -r t r < "$WORK/one"
        echo "$t" >> "$WORK/$kind.times"; echo "$r" >> "$WORK/$kind.rss"
    done
    tm=$(median < "$WORK/$kind.times"); tmin=$(sort -n "$WORK/$kind.times" | head -1); tmax=$(sort -n "$WORK/$kind.times" | tail -1)
    rm_=$(median < "$WORK/$kind.rss"); rmin=$(sort -n "$WORK/$kind.rss" | head -1); rmax=$(sort -n "$WORK/$kind.rss" | tail -1)
    echo "| $kind app-server | $tm ms ($tmin–$tmax) | $((rm_ / 1024)) MiB ($((rmin / 1024))–$((rmax / 1024))) |"
done
