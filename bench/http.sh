#!/usr/bin/env bash
# bench/http.sh — end-to-end HTTP throughput of a real `oja serve` (fsync on)
# on loopback, measured with wrk against the same server's /livez in the
# same run, so the ratios are meaningful on a shared, noisy machine.
#
#   bench/http.sh [rounds=3] [seconds=8] [connections=64]
#
# Prints each round and the medians of: /livez req/s, create-quote req/s,
# GET-quote req/s, and the ratios create/livez and get/livez. The access
# log is off (--access-log=false): it costs both sides the same stderr write.
# Needs wrk (Debian: apt-get install wrk). Traffic stays on 127.0.0.1 and
# the server is stopped at the end.
#
# wrk is a closed loop: each connection waits for its answer before the
# next request, so its latencies hide a server's stalls (coordinated
# omission) and its figures are ceilings, not sustainable rates. For the
# open-loop latency sweep, the partner mix and every other layer, run the
# harness: go run -C bench ./ojabench (make bench). wrk, written in C, costs
# the machine less per request than ojabench's Go client, so on 2 cores
# its req/s run higher and its create/livez ratio lower.
rounds=${1:-3}
seconds=${2:-8}
conns=${3:-64}
. "$(dirname "$0")/lib.sh"
"$work/oja" serve --demo --data "$work/data" --listen "127.0.0.1:$port" \
  --admin-listen "127.0.0.1:$((port + 1))" "${flags[@]}" 2>"$work/server.log" &
pids[server]=$!
base="http://127.0.0.1:$port"
await_ready "$base"
key=$(cat "$work/data/demo.key")
create_lua "$key" >"$work/create.lua"
quote=$(new_quote "$base" "$key")
echo "wrk.headers[\"Authorization\"] = \"Bearer $key\"" >"$work/get.lua"
: >"$work/results"
for r in $(seq "$rounds"); do
  livez=$(rps "$base/livez")
  create=$(rps -s "$work/create.lua" "$base$intent")
  get=$(rps -s "$work/get.lua" "$base/api/v1/partners/marketplace/quote/$quote")
  echo "$livez $create $get" >>"$work/results"
  awk -v r="$r" '{printf "round %d: livez %.0f/s  create %.0f/s (%.1f%%)  get %.0f/s (%.1f%%)\n", r, $1, $2, 100*$2/$1, $3, 100*$3/$1}' <<<"$livez $create $get"
done
echo "medians over $rounds rounds (${seconds}s each, $conns connections, fsync on):"
echo "  livez  $(cut -d' ' -f1 "$work/results" | median) req/s"
echo "  create $(cut -d' ' -f2 "$work/results" | median) req/s"
echo "  get    $(cut -d' ' -f3 "$work/results" | median) req/s"
echo "  create/livez $(awk '{print $2/$1}' "$work/results" | median)   get/livez $(awk '{print $3/$1}' "$work/results" | median)"
