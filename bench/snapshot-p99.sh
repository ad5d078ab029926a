#!/usr/bin/env bash
# bench/snapshot-p99.sh — what saving snapshots while serving costs the
# request path: the same load against two real `oja serve` (fsync on), one
# with --snapshot-every 0 (no snapshots) and one saving a snapshot every
# $every events, each first filled with the same number of quotes so that a
# snapshot has real weight. Prints wrk's latency percentiles of create-quote
# for both, and the snapshots the second one saved meanwhile.
#
#   bench/snapshot-p99.sh [fill-seconds=20] [seconds=20] [every=20000] [connections=16]
#
# Needs wrk (Debian: apt-get install wrk). wrk is a closed loop, so its
# percentiles understate stalls (coordinated omission) on both sides alike:
# read the two side by side, not as absolute figures. Traffic stays on
# 127.0.0.1; the servers are stopped at the end.
fill=${1:-20}
seconds=${2:-20}
every=${3:-20000}
conns=${4:-16}
. "$(dirname "$0")/lib.sh"
run() { # $1 = --snapshot-every value; $2 = the server's port
  local data="$work/data-$1" port=$2
  "$work/oja" serve --demo --data "$data" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
    "${flags[@]}" --snapshot-every "$1" 2>"$work/server-$1.log" &
  pids[server]=$!
  local base="http://127.0.0.1:$port"
  await_ready "$base"
  create_lua "$(cat "$data/demo.key")" >"$work/create.lua"
  wrk -t2 -c64 -d"${fill}s" -s "$work/create.lua" "$base$intent" >/dev/null
  echo "== --snapshot-every $1"
  wrk -t2 -c"$conns" -d"${seconds}s" --latency -s "$work/create.lua" "$base$intent" |
    grep -E '^\s+(50|75|90|99)%|Requests/sec'
  curl -fs -H "Authorization: Bearer $(cat "$data/admin.token")" "http://127.0.0.1:$((port + 1))/metrics" |
    grep -E '^oja_(snapshots_saved_total|snapshot_last_(bytes|duration_seconds)|wal_last_seq) |^oja_wal_commit_duration_seconds_bucket\{le="(0.01|0.1|0.5)"|^oja_wal_commit_duration_seconds_count' || true
  kill "${pids[server]}"; wait "${pids[server]}" 2>/dev/null || true; unset 'pids[server]'
}
run 0 "$port"
run "$every" "$((port + 2))"
