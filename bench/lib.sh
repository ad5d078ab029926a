# shellcheck shell=bash
# bench/lib.sh — what bench's load scripts share. Each one sources it
# first, after reading its arguments:
#
#   . "$(dirname "$0")/lib.sh"
#
# It stops unless wrk is installed, moves to the repository's root, makes
# $work (removed at exit, after every process in the array $pids is
# killed), builds $work/oja, picks a base $port in 20000–39999 (the
# scripts take the ports above it), and sets $flags, the server flags every
# load runs with: no open-quote or key-share bound, no access log, fsync
# on, JSON logs. $body is the create every load sends (1,000 NGN to USDT).
set -euo pipefail
command -v wrk >/dev/null || { echo "$0 needs wrk (apt-get install wrk)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
declare -A pids
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/oja" ./cmd/oja
port=$((20000 + RANDOM % 20000))
flags=(--max-open-quotes 0 --max-key-share 1 --access-log=false --sync=true --log-format json)
body='{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}'
intent=/api/v1/partners/marketplace/intent

# ready URL: URL/readyz answers 200.
ready() { curl -fs "$1/readyz" >/dev/null 2>&1; }

# await_ready URL [tries=100]: waits, 0.1 s a try, until URL is ready.
await_ready() {
  for _ in $(seq "${2:-100}"); do ready "$1" && return 0; sleep 0.1; done
  echo "$1 not ready after ${2:-100} tries" >&2
  return 1
}

# create_lua KEY: a wrk script that sends $body as a create with KEY.
create_lua() {
  cat <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $1"
wrk.body = '$body'
LUA
}

# new_quote BASE KEY: creates one quote and prints its id.
new_quote() {
  curl -fs -X POST "$1$intent" -H "Authorization: Bearer $2" -H 'Content-Type: application/json' -d "$body" |
    sed -E 's/.*"quoteId":"([^"]+)".*/\1/'
}

# rps ARGS…: wrk's requests per second over $seconds on $conns connections.
rps() { wrk -t2 -c"$conns" -d"${seconds}s" "$@" | awk '/Requests\/sec/ {print $2}'; }

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
