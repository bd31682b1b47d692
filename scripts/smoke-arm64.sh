#!/usr/bin/env bash
# Runs the arm64 build under qemu-user (Debian: qemu-user-static, plus libc6:arm64 and
# libstdc++6:arm64 from `dpkg --add-architecture arm64`): first with an empty model
# repository (Bun, koffi and the HTTP frontend on arm64), then serving inferences through
# ONNX Runtime's arm64 library (`simple`, INT32 add/sub, and `simple_identity`, BYTES).
#   scripts/smoke-arm64.sh              builds dist/nereid-linux-arm64, then checks it
#   scripts/smoke-arm64.sh --no-infer   stops after the empty-repository check
# On a real arm64 host (Jetson) run the binary directly: QEMU=env scripts/smoke-arm64.sh
# The arm64 container image's files, without a container: BINARY=<rootfs>/opt/nereid/nereid
# QEMU_LD_PREFIX=<rootfs> scripts/smoke-arm64.sh (its libonnxruntime beside it, its C and
# C++ libraries from the rootfs instead of the host's).
#
# Under qemu-user, /proc/cpuinfo is the x86 host's, and ONNX Runtime's arm64 library
# (its cpuinfo probe) crashes reading it at load. The inference step therefore runs the
# server in a private mount namespace (`unshare -m`, which needs root) where
# /proc/cpuinfo is an arm64 one (two Cortex-A72 cores); without root it exits 3 saying so.
set -euo pipefail
NO_INFER=0; [ "${1:-}" = "--no-infer" ] && NO_INFER=1
cd "$(dirname "$0")/.."
QEMU=${QEMU:-$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)}
[ -n "$QEMU" ] || { echo "qemu-aarch64 is not installed (apt-get install qemu-user-static)"; exit 2; }
if [ -z "${BINARY:-}" ]; then
  node_modules/.bin/bun scripts/build.ts --target=bun-linux-arm64 >/dev/null
  BINARY=dist/nereid-linux-arm64
fi
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
cp "$BINARY" "$work/nereid-linux-arm64"
if [ -f "$(dirname "$BINARY")/libonnxruntime.so.1" ]; then cp "$(dirname "$BINARY")/libonnxruntime.so.1" "$work/"; fi
port=${PORT:-18777}
pid=
WRAP=()
start() { # $1 = repository folder
  (cd "$work" && exec "${WRAP[@]}" "$QEMU" ./nereid-linux-arm64 --model-repository="$1" --http-port="$port" --http-address=127.0.0.1 --allow-grpc=false --allow-metrics=false) >"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && return 0
    kill -0 $pid 2>/dev/null || { cat "$work/log"; echo "server exited"; exit 1; }
    sleep 0.2
  done
  echo "server did not become ready"; exit 1
}
mkdir -p "$work/empty"
start empty
meta=$(curl -sf "http://127.0.0.1:$port/v2")
echo "$meta"
echo "$meta" | grep -q '"name":"triton"' || { echo "unexpected server metadata"; exit 1; }
kill $pid; wait $pid 2>/dev/null || true
echo "arm64 server OK without models"
[ $NO_INFER = 1 ] && exit 0
node_modules/.bin/bun scripts/make-models.ts "$work/models" --only=simple,simple_identity >/dev/null
if [ "$QEMU" != env ] && ! grep -q '^CPU implementer' /proc/cpuinfo; then
  for n in 0 1; do
    printf 'processor\t: %s\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n' "$n"
    printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n'
  done >"$work/cpuinfo"
  if ! unshare -m sh -c "mount --bind '$work/cpuinfo' /proc/cpuinfo && grep -q '^CPU implementer' /proc/cpuinfo" 2>/dev/null; then
    echo "inference not checked: under qemu-user ONNX Runtime's arm64 library needs an arm64 /proc/cpuinfo, which this script mounts with unshare -m (run it as root)"
    exit 3
  fi
  WRAP=(unshare -m sh -c "mount --bind '$work/cpuinfo' /proc/cpuinfo && exec \"\$@\"" sh)
  export QEMU_CPU=${QEMU_CPU:-cortex-a72}
fi
start models
body='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
out=$(curl -sf "http://127.0.0.1:$port/v2/models/simple/infer" -d "$body")
echo "$out"
echo "$out" | grep -q '"data":\[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\]' || { echo "unexpected answer"; cat "$work/log"; exit 1; }
body='{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"BYTES","data":["arm64","","h\u00e9"]}]}'
out=$(curl -s "http://127.0.0.1:$port/v2/models/simple_identity/infer" -d "$body")
echo "$out"
echo "$out" | grep -q '"data":\["arm64","","hé"\]' || { echo "unexpected answer"; cat "$work/log"; exit 1; }
echo "arm64 OK ($(uname -m) host, $QEMU${QEMU_CPU:+ -cpu $QEMU_CPU})"
