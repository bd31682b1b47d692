#!/usr/bin/env bash
# #30's many-core scaling check with each protocol warmed up first: `simple` over HTTP JSON
# (wrk) and gRPC (h2load) at each thread count, after WARM seconds of the same load on the
# same server, so that the JIT compilation of every worker thread's VM (22 µs per request
# of a short 8-thread gRPC measure on a 16-core host) falls outside the measure. The shared
# check (the device folder's run.sh) warms HTTP for 2 s and gRPC not at all; run both.
#
# It uses what that folder's pack.sh put in .device-scale/ (the binary, wrk, h2load, `simple`,
# the request files). On the device machine, from the project root:
#   bash .device-scale/run.sh 2>&1 | tee $OUT/scale.log; bash scripts/scale-warm.sh 2>&1 | tee $OUT/scale-warm.log
# Variables: THREADS ("1 2 4 8"), DUR (10 s per measure), WARM (10 s), SRV_CPUS (0-7), CLI_CPUS (8-15).
# Prints one RESULT line per measure: protocol, thread count, req/s, the process's and the
# main thread's CPU µs per request, failed requests.
set -u
D=$(pwd)/.device-scale
[ -f "$D/nereid.xz" ] || { echo "no .device-scale/ here: run the device folder's pack.sh first" >&2; exit 1; }
T=$(mktemp -d)
tar -xJf "$D/tools.tar.xz" -C "$T" && export PATH=$T/tools/bin:$PATH LD_LIBRARY_PATH=$T/tools/lib
xz -d -T0 -c "$D/nereid.xz" > "$T/nereid" && chmod +x "$T/nereid"
export XDG_CACHE_HOME=$T/xdg
SRV=${SRV_CPUS:-0-7}; CLI=${CLI_CPUS:-8-15}; DUR=${DUR:-10}; WARM=${WARM:-10}; TCK=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' "$1"; }
us() { awk -v a="$1" -v b="$2" -v n="$3" -v t="$TCK" 'BEGIN{ if (n > 0) printf "%.1f", (b-a)/t*1e6/n; else print "nan" }'; }
load() { # kind seconds
  if [ "$1" = http ]; then taskset -c "$CLI" wrk -t8 -c256 -d"$2"s -s "$D/post.lua" http://127.0.0.1:18800/v2/models/simple/infer 2>&1
  else taskset -c "$CLI" h2load -t8 -c32 -m16 -D"$2" -d "$D/simple.grpc" -H 'content-type: application/grpc' -H 'te: trailers' \
    http://127.0.0.1:18801/inference.GRPCInferenceService/ModelInfer 2>&1; fi
}
for n in ${THREADS:-1 2 4 8}; do
  taskset -c "$SRV" "$T/nereid" --model-repository="$D/repo" --http-port=18800 --grpc-port=18801 --metrics-port=18802 \
    --http-thread-count="$n" --grpc-infer-thread-count="$n" > "$T/server.log" 2>&1 & P=$!
  for _ in $(seq 1 300); do curl -sf localhost:18800/v2/health/ready > /dev/null && break; sleep 0.05; done
  for kind in http grpc; do
    load "$kind" "$WARM" > /dev/null
    c0=$(ticks /proc/$P/stat); m0=$(ticks /proc/$P/task/$P/stat)
    out=$(load "$kind" "$DUR")
    c1=$(ticks /proc/$P/stat); m1=$(ticks /proc/$P/task/$P/stat)
    if [ "$kind" = http ]; then r=$(awk '/requests in/{print $1}' <<< "$out"); bad=$(awk '/Non-2xx/{print $NF}' <<< "$out")
    else r=$(awk '/^requests:/{print $8}' <<< "$out"); bad=$(awk '/^requests:/{print $10}' <<< "$out"); fi
    echo "RESULT warm=${WARM}s $kind threads=$n req/s=$(awk -v n="${r:-0}" -v d="$DUR" 'BEGIN{printf "%.0f", n/d}') cpu_us/req=$(us "$c0" "$c1" "${r:-0}") main_thread_us/req=$(us "$m0" "$m1" "${r:-0}") failed=${bad:-0}"
  done
  kill -TERM "$P"; wait "$P" 2> /dev/null
done
rm -rf "$T"
