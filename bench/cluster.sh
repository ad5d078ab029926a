#!/usr/bin/env bash
# bench/cluster.sh — a three-node cluster (oja serve --cluster, fsync on)
# against a single node, on loopback, in the same run; then failover times.
#
#   bench/cluster.sh [rounds=3] [seconds=8] [connections=64] [kills=20]
#
# Each round measures, with wrk, create-quote and then get-quote req/s on
# the single node, through the cluster's leader, and through a follower
# (forwarded to the leader; a read on the leader waits for a heartbeat
# round that confirms its leadership). Then it SIGKILLs the leader `kills`
# times; each time it measures the time until a create through a survivor
# is answered 200 (a new leader elected, its actors started from its
# replica), restarts the killed node and waits for it to be ready.
# Prints medians, ratios, the replication lag sampled during the leader's
# create load, the failover p50/p99, and what the new leaders' starts and
# their replicas' rebuilds cost (from the nodes' logs).
# All three nodes, the single node and wrk share this machine's cores, so
# the cluster's figure is a floor for three machines. Needs wrk and curl.
# Traffic stays on 127.0.0.1; every process is stopped at the end.
# Nodes talk over mutual TLS (oja cluster certs); CLUSTER_INSECURE=1 runs
# them with --cluster-insecure instead (plain TCP), to measure what TLS
# costs. RAFT_TIMEOUT (below) sets --raft-timeout.
rounds=${1:-3}
seconds=${2:-8}
conns=${3:-64}
kills=${4:-20}
. "$(dirname "$0")/lib.sh"
export OJA_ADMIN_TOKEN=oja_admin_bench_cluster

# The single node.
"$work/oja" serve --demo --data "$work/single" --listen "127.0.0.1:$port" \
  --admin-listen "127.0.0.1:$((port + 1))" "${flags[@]}" 2>"$work/single.log" &
pids[single]=$!
single="http://127.0.0.1:$port"

# The cluster: n1..n3 on the next ports.
nodes="" 
for i in 1 2 3; do
  b=$((port + 10 * i))
  nodes+="${nodes:+,}{\"id\":\"n$i\",\"raft\":\"127.0.0.1:$b\",\"public\":\"127.0.0.1:$((b + 1))\",\"admin\":\"127.0.0.1:$((b + 2))\"}"
done
echo "{\"nodes\":[$nodes]}" >"$work/cluster.json"
"$work/oja" cluster certs --cluster "$work/cluster.json" --out "$work/certs" >/dev/null
nodeflags=(--cluster-tls "$work/certs")
[ "${CLUSTER_INSECURE:-}" = 1 ] && nodeflags=(--cluster-insecure)
# RAFT_TIMEOUT=1s runs the nodes with --raft-timeout 1s (Raft's own
# default) instead of the LAN default (300ms), to compare failover.
[ -n "${RAFT_TIMEOUT:-}" ] && nodeflags+=(--raft-timeout "$RAFT_TIMEOUT")
public() { echo "http://127.0.0.1:$((port + 10 * $1 + 1))"; }
admin() { echo "http://127.0.0.1:$((port + 10 * $1 + 2))"; }
start() {
  "$work/oja" serve --cluster "$work/cluster.json" --node "n$1" "${nodeflags[@]}" --data "$work/n$1" --demo "${flags[@]}" 2>>"$work/n$1.log" &
  pids[n$1]=$!
}
for i in 1 2 3; do start "$i"; done
for _ in $(seq 200); do
  ready "$single" && ready "$(public 1)" && ready "$(public 2)" && ready "$(public 3)" && break
  sleep 0.1
done
leader() { # the leader's number, as node 1..3 sees it
  for i in 1 2 3; do
    l=$(curl -fs -H "Authorization: Bearer $OJA_ADMIN_TOKEN" "$(admin "$i")/admin/v1/cluster" 2>/dev/null | sed -nE 's/.*"leader":"n([0-9])".*/\1/p')
    [ -n "$l" ] && { echo "$l"; return; }
  done
}
for _ in $(seq 100); do [ -n "$(leader)" ] && break; sleep 0.1; done
lead=$(leader)
for _ in $(seq 100); do [ -s "$work/n$lead/demo.key" ] && break; sleep 0.1; done
skey=$(cat "$work/single/demo.key")
ckey=$(cat "$work/n$lead/demo.key")
create_lua "$skey" >"$work/single.lua"
create_lua "$ckey" >"$work/cluster.lua"
squote=$(new_quote "$single" "$skey")
cquote=$(new_quote "$(public "$lead")" "$ckey")
echo "wrk.headers[\"Authorization\"] = \"Bearer $skey\"" >"$work/sget.lua"
echo "wrk.headers[\"Authorization\"] = \"Bearer $ckey\"" >"$work/cget.lua"
quote=/api/v1/partners/marketplace/quote
follower=$(( lead % 3 + 1 ))
# sample_lag prints, every 200 ms, how many Raft entries the furthest
# follower's replica is behind the leader's (applied indexes, as the
# leader's cluster status reports them).
sample_lag() {
  while sleep 0.2; do
    curl -fs -H "Authorization: Bearer $OJA_ADMIN_TOKEN" "$(admin "$lead")/admin/v1/cluster" 2>/dev/null |
      grep -o '"appliedIndex":[0-9]*' | cut -d: -f2 | sort -n | awk '{a[NR]=$1} END {if (NR == 3) print a[3] - a[1]}'
  done
}
: >"$work/lag"
: >"$work/results"
for r in $(seq "$rounds"); do
  s=$(rps -s "$work/single.lua" "$single$intent")
  sample_lag >>"$work/lag" &
  lagpid=$!
  l=$(rps -s "$work/cluster.lua" "$(public "$lead")$intent")
  kill "$lagpid" 2>/dev/null || true
  wait "$lagpid" 2>/dev/null || true
  f=$(rps -s "$work/cluster.lua" "$(public "$follower")$intent")
  gs=$(rps -s "$work/sget.lua" "$single$quote/$squote")
  gl=$(rps -s "$work/cget.lua" "$(public "$lead")$quote/$cquote")
  gf=$(rps -s "$work/cget.lua" "$(public "$follower")$quote/$cquote")
  echo "$s $l $f $gs $gl $gf" >>"$work/results"
  awk -v r="$r" '{printf "round %d: create: single %.0f/s  leader %.0f/s (%.2f)  follower %.0f/s (%.2f) | get: single %.0f/s  leader %.0f/s (%.2f)  follower %.0f/s (%.2f)\n", r, $1, $2, $2/$1, $3, $3/$1, $4, $5, $5/$4, $6, $6/$4}' <<<"$s $l $f $gs $gl $gf"
done
echo "create-quote medians over $rounds rounds (${seconds}s each, $conns connections, fsync on):"
echo "  single $(cut -d' ' -f1 "$work/results" | median) req/s"
echo "  leader $(cut -d' ' -f2 "$work/results" | median) req/s   ratio $(awk '{print $2/$1}' "$work/results" | median)"
echo "  follower $(cut -d' ' -f3 "$work/results" | median) req/s   ratio $(awk '{print $3/$1}' "$work/results" | median)"
sort -n "$work/lag" | awk '{a[NR]=$1} END { if (NR) printf "replication lag under the leader create load: %d samples, median %d entries, max %d entries\n", NR, a[int((NR+1)/2)], a[NR] }'
echo "get-quote medians:"
echo "  single $(cut -d' ' -f4 "$work/results" | median) req/s"
echo "  leader $(cut -d' ' -f5 "$work/results" | median) req/s   ratio $(awk '{print $5/$4}' "$work/results" | median)"
echo "  follower $(cut -d' ' -f6 "$work/results" | median) req/s   ratio $(awk '{print $6/$4}' "$work/results" | median)"

# Failover: kill the leader, time until a create through a survivor is 200.
kill "${pids[single]}"
[ "$kills" -gt 0 ] || exit 0
: >"$work/failover"
for k in $(seq "$kills"); do
  lead=$(leader)
  survivor=$(( lead % 3 + 1 ))
  t0=$(date +%s%N)
  kill -9 "${pids[n$lead]}"
  wait "${pids[n$lead]}" 2>/dev/null || true
  until [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$(public "$survivor")$intent" -H "Authorization: Bearer $ckey" \
      -H 'Content-Type: application/json' -H "Idempotency-Key: failover-$k" -d "$body")" = 200 ]; do
    sleep 0.02
  done
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 )) >>"$work/failover"
  echo "kill $k: n$lead killed; writes acknowledged again after $(( (t1 - t0) / 1000000 )) ms"
  start "$lead"
  for _ in $(seq 200); do ready "$(public "$lead")" && break; sleep 0.05; done
done
sort -n "$work/failover" | awk '{a[NR]=$1} END {
  p50 = a[int((NR + 1) / 2)]; i99 = int(NR * 0.99 + 0.999); if (i99 > NR) i99 = NR
  printf "failover over %d kills: p50 %d ms, p99 %d ms, max %d ms\n", NR, p50, a[i99], a[NR] }'
# What each new leader's start cost (its "leading: serving writes" log
# line): the barrier, the lend of its replica's state (waiting for an
# earlier lend's rebuild, if one still ran), the actors' start (with the
# webhook dispatcher), and all of it; the first start of the cluster is
# left out.
cat "$work"/n[123].log | grep -h '"leading: serving writes"' | tail -n +2 | awk '
  function ms(v) { if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 } if (v ~ /µs$/) { sub(/µs$/, "", v); return v / 1000 }
                   if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 } return v + 0 }
  function field(name,   m) { if (match($0, "\"" name "\":\"[^\"]+\"")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:"/, "", m); sub(/"$/, "", m); return ms(m) } return -1 }
  { n++; b[n] = field("barrier_duration"); c[n] = field("lend_duration"); a[n] = field("actors_duration"); s[n] = field("start_duration")
    if (match($0, /"quotes":[0-9]+/)) q = substr($0, RSTART + 9, RLENGTH - 9) }
  function median(x,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
    return x[int((n + 1) / 2)] }
  END { if (n) printf "new leaders'"'"' start over %d failovers (%s quotes at the last): median barrier %.0f ms, lend of the replica %.0f ms, actors %.0f ms, all %.0f ms\n",
        n, q, median(b), median(c), median(a), median(s) }'
# What each lend cost after the start: the replica rebuilt beside the new
# leader's actors (its "replica rebuilt beside the actors" line), while
# the webhook events and partner events of new records waited.
cat "$work"/n[123].log | grep -h '"replica rebuilt beside the actors"' | awk '
  function ms(v) { if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 } if (v ~ /µs$/) { sub(/µs$/, "", v); return v / 1000 }
                   if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 } return v + 0 }
  { if (match($0, /"rebuild_duration":"[^"]+"/)) { v = substr($0, RSTART + 20, RLENGTH - 21); n++; r[n] = ms(v) } }
  END { if (n) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
        printf "replica rebuilds after a lend: %d, median %.0f ms, max %.0f ms\n", n, r[int((n + 1) / 2)], r[n] } }'
