#!/bin/sh
# Verifies Nereid's native bindings on the host it runs on (a GPU server, a Jetson, an
# Intel machine with OpenVINO): the CUDA driver binding (device query, memory round
# trips, CUDA IPC between two processes), ONNX Runtime serving the example `simple`
# model, NVML metrics, CUDA shared memory, then `simple` served by the tensorrt backend
# (a plan built here from simple's ONNX with trtexec) and by the openvino backend
# (simple's ONNX read by OpenVINO's ONNX frontend, on CPU and, if OpenVINO has one, GPU).
#
#   scripts/verify-hardware.sh [path/to/nereid] [path/to/model_repository]
#
# Prints one line per check ("ok", "FAIL", or "--" for what this host lacks); exits
# non-zero if any check failed. TRTEXEC names trtexec when it is not on PATH.
set -u
BIN=${1:-dist/nereid}
REPO=${2:-model_repository}
PORT=${NEREID_VERIFY_PORT:-18990}
fail=0

echo "== $("$BIN" --version)"
echo "== CUDA driver (libcuda.so.1), then the TensorRT and OpenVINO libraries found"
DEVICES=$("$BIN" devices --self-test 2>&1)
status=$?
echo "$DEVICES"
NO_CUDA=0
echo "$DEVICES" | grep -q '^no CUDA driver' && NO_CUDA=1
[ $status -ne 0 ] && [ $NO_CUDA = 0 ] && fail=1

# check_simple MODEL PORT: one infer on a `simple`-shaped model; prints ok or FAIL.
check_simple() {
  out=$(curl -s "localhost:$2/v2/models/$1/infer" -d '{"inputs":[
    {"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},
    {"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}')
  case "$out" in
    *'"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]'*) echo "    ok   $1: OUTPUT0 = INPUT0 + INPUT1" ;;
    *) echo "    FAIL $1: $out"; fail=1 ;;
  esac
}

# wait_ready PORT: up to 10 s for the server to answer ready.
wait_ready() {
  for _ in $(seq 1 100); do
    if curl -sf "localhost:$1/v2/health/ready" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "    FAIL server did not become ready"; fail=1
  return 1
}

echo "== ONNX Runtime (CPU) serving 'simple' from $REPO"
"$BIN" --model-repository="$REPO" --http-port="$PORT" --allow-grpc=false --metrics-port=$((PORT + 2)) --log-info=false \
  --exit-on-error=false --model-control-mode=explicit --load-model=simple &
pid=$!
wait_ready "$PORT" && check_simple simple "$PORT"
echo "== NVML GPU metrics (libnvidia-ml.so.1)"
gpu=$(curl -s "localhost:$((PORT + 2))/metrics" | grep -E '^nv_gpu_(utilization|memory_total_bytes|memory_used_bytes|power_usage|power_limit)\{' || true)
if [ -n "$gpu" ]; then
  echo "$gpu" | sed 's/^/    ok   /'
elif [ $NO_CUDA = 1 ]; then
  echo "    --   no GPU driver on this host: nv_gpu_* metrics are absent, as expected"
else
  echo "    FAIL a CUDA driver is present but no nv_gpu_* metrics were reported"; fail=1
fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

echo "== CUDA shared memory (server reading and writing another process's GPU allocation)"
KOFFI=${NEREID_KOFFI_NODE:-node_modules/@koromix/koffi-linux-$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')/linux_$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')/koffi.node}
if [ $NO_CUDA = 1 ]; then
  echo "    --   no GPU driver on this host"
elif [ -f "$KOFFI" ]; then
  BUN_BE_BUN=1 NEREID_KOFFI_NODE="$(realpath "$KOFFI")" "$BIN" scripts/verify-cuda-shm.ts "$BIN" "$REPO" || fail=1
else
  echo "    --   skipped: needs koffi's native module (run from a checkout after npm ci, or set NEREID_KOFFI_NODE)"
fi

WORK=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
MODELS=""

echo "== TensorRT (libnvinfer.so.10)"
echo "$DEVICES" | grep -E '^(no )?TensorRT' | head -1 | sed 's/^/    /'
TRTEXEC=${TRTEXEC:-$(command -v trtexec || ls /usr/src/tensorrt/bin/trtexec 2>/dev/null || true)}
if [ $NO_CUDA = 1 ]; then
  echo "    --   no GPU driver on this host"
elif ! echo "$DEVICES" | grep -qE '^TensorRT 10\.[0-9]+\.[0-9]+ \([^)]*\)$'; then
  echo "    --   no usable TensorRT 10 on this host"
elif [ -z "$TRTEXEC" ]; then
  echo "    --   skipped: trtexec (which builds the plan from simple's ONNX) is not on PATH; set TRTEXEC"
else
  mkdir -p "$WORK/simple_trt/1"
  if "$TRTEXEC" --onnx="$REPO/simple/1/model.onnx" --saveEngine="$WORK/simple_trt/1/model.plan" \
    --minShapes=INPUT0:1x16,INPUT1:1x16 --optShapes=INPUT0:8x16,INPUT1:8x16 --maxShapes=INPUT0:8x16,INPUT1:8x16 \
    >"$WORK/trtexec.log" 2>&1; then
    sed -e 's/^name: .*/name: "simple_trt"/' -e 's/^platform: .*/platform: "tensorrt_plan"/' \
      -e 's/kind: KIND_CPU/kind: KIND_GPU/' "$REPO/simple/config.pbtxt" >"$WORK/simple_trt/config.pbtxt"
    MODELS="$MODELS simple_trt"
  else
    echo "    FAIL trtexec could not build the plan (log: last lines below)"; tail -5 "$WORK/trtexec.log"; fail=1
  fi
fi

echo "== OpenVINO (libopenvino_c.so)"
echo "$DEVICES" | grep -E '^(no )?OpenVINO' | head -1 | sed 's/^/    /'
if echo "$DEVICES" | grep -q '^no OpenVINO'; then
  echo "    --   no OpenVINO on this host"
else
  # simple's ONNX file, read by OpenVINO's ONNX frontend: CPU always, GPU when OpenVINO has one.
  for kind in CPU GPU; do
    name=simple_ov_$(echo "$kind" | tr 'A-Z' 'a-z')
    mkdir -p "$WORK/$name/1"
    cp "$REPO/simple/1/model.onnx" "$WORK/$name/1/model.onnx"
    sed -e "s/^name: .*/name: \"$name\"/" -e 's/^platform: .*/backend: "openvino"\ndefault_model_filename: "model.onnx"/' \
      -e "s/kind: KIND_CPU/kind: KIND_$kind/" "$REPO/simple/config.pbtxt" >"$WORK/$name/config.pbtxt"
    MODELS="$MODELS $name"
  done
fi

if [ -n "$MODELS" ]; then
  echo "== serving:$MODELS"
  "$BIN" --model-repository="$WORK" --http-port="$PORT" --allow-grpc=false --allow-metrics=false --log-info=false --strict-readiness=false \
    --exit-on-error=false >"$WORK/server.log" 2>&1 &
  pid=$!
  if wait_ready "$PORT"; then
    for m in $MODELS; do
      if curl -sf "localhost:$PORT/v2/models/$m/ready" >/dev/null; then
        check_simple "$m" "$PORT"
      elif [ "$m" = simple_ov_gpu ]; then
        echo "    --   $m: $(curl -s "localhost:$PORT/v2/models/$m/ready" | sed 's/.*"error":"\(.*\)"}/\1/' | cut -c1-200)"
      else
        echo "    FAIL $m: $(curl -s "localhost:$PORT/v2/models/$m/ready")"; fail=1
      fi
    done
  fi
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
fi
exit $fail
