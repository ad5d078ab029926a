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
set -euo pipefail
fill=${1:-20}
seconds=${2:-20}
every=${3:-20000}
conns=${4:-16}
command -v wrk >/dev/null || { echo "bench/snapshot-p99.sh needs wrk (apt-get install wrk)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/oja" ./cmd/oja
body='{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}'
run() { # $1 = --snapshot-every value
  local data="$work/data-$1" port=$((20000 + RANDOM % 20000))
  "$work/oja" serve --demo --data "$data" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
    --max-open-quotes 0 --max-key-share 1 --access-log=false --sync=true --log-format json \
    --snapshot-every "$1" 2>"$work/server-$1.log" &
  pid=$!
  local base="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -fs "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  cat >"$work/create.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $(cat "$data/demo.key")"
wrk.body = '$body'
LUA
  wrk -t2 -c64 -d"${fill}s" -s "$work/create.lua" "$base/api/v1/partners/marketplace/intent" >/dev/null
  echo "== --snapshot-every $1"
  wrk -t2 -c"$conns" -d"${seconds}s" --latency -s "$work/create.lua" "$base/api/v1/partners/marketplace/intent" |
    grep -E '^\s+(50|75|90|99)%|Requests/sec'
  curl -fs -H "Authorization: Bearer $(cat "$data/admin.token")" "http://127.0.0.1:$((port + 1))/metrics" |
    grep -E '^oja_(snapshots_saved_total|snapshot_last_(bytes|duration_seconds)|wal_last_seq) |^oja_wal_commit_duration_seconds_bucket\{le="(0.01|0.1|0.5)"|^oja_wal_commit_duration_seconds_count' || true
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
run 0
run "$every"
