#!/bin/sh
# Verifies Nereid's native bindings on the host it runs on (a GPU server or a Jetson):
# the CUDA driver binding (device query, memory round trips, CUDA IPC between two
# processes), then ONNX Runtime serving the example `simple` model.
#
#   scripts/verify-hardware.sh [path/to/nereid] [path/to/model_repository]
#
# Prints one line per check; exits non-zero if any check failed. TensorRT and
# OpenVINO backends are not built yet, so they are reported as such.
set -u
BIN=${1:-dist/nereid}
REPO=${2:-model_repository}
PORT=${NEREID_VERIFY_PORT:-18990}
fail=0

echo "== $("$BIN" --version)"
echo "== CUDA driver (libcuda.so.1)"
"$BIN" devices --self-test || fail=1

echo "== ONNX Runtime (CPU) serving 'simple' from $REPO"
"$BIN" --model-repository="$REPO" --http-port="$PORT" --allow-grpc=false --metrics-port=$((PORT + 2)) --log-info=false \
  --exit-on-error=false --model-control-mode=explicit --load-model=simple &
pid=$!
ok=0
for _ in $(seq 1 100); do
  if curl -sf "localhost:$PORT/v2/health/ready" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.1
done
if [ "$ok" = 1 ]; then
  out=$(curl -s "localhost:$PORT/v2/models/simple/infer" -d '{"inputs":[
    {"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},
    {"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}')
  case "$out" in
    *'"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]'*) echo "    ok   simple: OUTPUT0 = INPUT0 + INPUT1" ;;
    *) echo "    FAIL simple: $out"; fail=1 ;;
  esac
else
  echo "    FAIL server did not become ready"; fail=1
fi
echo "== NVML GPU metrics (libnvidia-ml.so.1)"
gpu=$(curl -s "localhost:$((PORT + 2))/metrics" | grep -E '^nv_gpu_(utilization|memory_total_bytes|memory_used_bytes|power_usage|power_limit)\{' || true)
if [ -n "$gpu" ]; then
  echo "$gpu" | sed 's/^/    ok   /'
elif "$BIN" devices | grep -q '^no CUDA driver'; then
  echo "    --   no GPU driver on this host: nv_gpu_* metrics are absent, as expected"
else
  echo "    FAIL a CUDA driver is present but no nv_gpu_* metrics were reported"; fail=1
fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

echo "== CUDA shared memory (server reading and writing another process's GPU allocation)"
KOFFI=${NEREID_KOFFI_NODE:-node_modules/@koromix/koffi-linux-$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')/linux_$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')/koffi.node}
if "$BIN" devices | grep -q '^no CUDA driver'; then
  echo "    --   no GPU driver on this host"
elif [ -f "$KOFFI" ]; then
  BUN_BE_BUN=1 NEREID_KOFFI_NODE="$(realpath "$KOFFI")" "$BIN" scripts/verify-cuda-shm.ts "$BIN" "$REPO" || fail=1
else
  echo "    --   skipped: needs koffi's native module (run from a checkout after npm ci, or set NEREID_KOFFI_NODE)"
fi

echo "== TensorRT (libnvinfer.so.10): backend not built yet"
echo "== OpenVINO (libopenvino_c.so): backend not built yet"
exit $fail
