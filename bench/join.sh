#!/usr/bin/env bash
# bench/join.sh — how long a new member takes to join a loaded cluster.
#
#   bench/join.sh [seconds=20] [connections=64]
#
# Starts a three-node cluster (oja serve --cluster, mutual TLS, fsync on),
# creates quotes through the leader with wrk for `seconds`, then starts n4
# on an empty data dir with --join and adds it (oja admin cluster add n4
# RAFT). Prints the quotes in the state, and the time from the add until
# n4's replica has applied the leader's index at the add (it received the
# leader's snapshot and the log after it), and until n4 is ready.
# Everything runs on this machine over 127.0.0.1 and stops at the end.
# Needs wrk and curl.
seconds=${1:-20}
conns=${2:-64}
. "$(dirname "$0")/lib.sh"
export OJA_ADMIN_TOKEN=oja_admin_bench_join
nodes=""
for i in 1 2 3 4; do
  b=$((port + 10 * i))
  nodes+="${nodes:+,}{\"id\":\"n$i\",\"raft\":\"127.0.0.1:$b\",\"public\":\"127.0.0.1:$((b + 1))\",\"admin\":\"127.0.0.1:$((b + 2))\"}"
done
# n4 is in the file only for its addresses and certificate: the cluster
# bootstraps from the first three.
echo "{\"nodes\":[$nodes]}" >"$work/all.json"
"$work/oja" cluster certs --cluster "$work/all.json" --out "$work/certs" >/dev/null
sed -E 's/,\{"id":"n4"[^}]*\}//' "$work/all.json" >"$work/cluster.json"
raft() { echo "127.0.0.1:$((port + 10 * $1))"; }
public() { echo "http://127.0.0.1:$((port + 10 * $1 + 1))"; }
admin() { echo "http://127.0.0.1:$((port + 10 * $1 + 2))"; }
for i in 1 2 3; do
  "$work/oja" serve --cluster "$work/cluster.json" --node "n$i" --cluster-tls "$work/certs" --data "$work/n$i" --demo "${flags[@]}" 2>>"$work/n$i.log" &
  pids[n$i]=$!
done
for _ in $(seq 300); do ready "$(public 1)" && ready "$(public 2)" && ready "$(public 3)" && break; sleep 0.1; done
status() { curl -fs -H "Authorization: Bearer $OJA_ADMIN_TOKEN" "$(admin "$1")/admin/v1/cluster" 2>/dev/null; }
leader() { for i in 1 2 3; do l=$(status "$i" | sed -nE 's/.*"leader":"n([0-9])".*/\1/p'); [ -n "$l" ] && { echo "$l"; return; }; done; }
for _ in $(seq 100); do [ -n "$(leader)" ] && break; sleep 0.1; done
lead=$(leader)
for _ in $(seq 100); do [ -s "$work/n$lead/demo.key" ] && break; sleep 0.1; done
key=$(cat "$work/n$lead/demo.key")
create_lua "$key" >"$work/create.lua"
wrk -t2 -c"$conns" -d"${seconds}s" -s "$work/create.lua" "$(public "$lead")$intent" >"$work/wrk.txt"
quotes=$(curl -fs -H "Authorization: Bearer $OJA_ADMIN_TOKEN" "$(admin "$lead")/metrics" | awk '/^oja_quotes\{/ {s += $2} END {print s}')
applied() { curl -fs -H "Authorization: Bearer $OJA_ADMIN_TOKEN" "$(admin "$1")/admin/v1/cluster/node" 2>/dev/null | sed -nE 's/.*"appliedIndex":([0-9]+).*/\1/p'; }
target=$(applied "$lead")
"$work/oja" serve --cluster "$work/all.json" --node n4 --cluster-tls "$work/certs" --data "$work/n4" --join "${flags[@]}" 2>>"$work/n4.log" &
pids[n4]=$!
for _ in $(seq 100); do curl -fs "$(admin 4)/livez" >/dev/null 2>&1 && break; sleep 0.1; done
t0=$(date +%s%N)
"$work/oja" admin --addr "$(admin "$lead")" cluster add n4 "$(raft 4)" >/dev/null
caught=""
for _ in $(seq 1200); do
  a=$(applied 4 || true)
  if [ -z "$caught" ] && [ -n "$a" ] && [ "$a" -ge "$target" ]; then caught=$(date +%s%N); fi
  if [ -n "$caught" ] && ready "$(public 4)"; then break; fi
  sleep 0.05
done
t1=$(date +%s%N)
[ -n "$caught" ] || { echo "n4 never caught up (log: $work/n4.log)" >&2; tail -20 "$work/n4.log" >&2; exit 1; }
printf "quotes in the state: %s (raft index %s at the add)\n" "$quotes" "$target"
printf "n4 joined: caught up %d ms after the add, ready %d ms after it\n" $(( (caught - t0) / 1000000 )) $(( (t1 - t0) / 1000000 ))
