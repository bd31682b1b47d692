#!/usr/bin/env bash
# Runs the arm64 build under qemu-user (Debian: qemu-user-static, plus libc6:arm64 and
# libstdc++6:arm64 from `dpkg --add-architecture arm64`) and serves one inference.
#   scripts/smoke-arm64.sh            builds dist/nereid-linux-arm64 if missing
set -euo pipefail
cd "$(dirname "$0")/.."
QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
[ -n "$QEMU" ] || { echo "qemu-aarch64 is not installed (apt-get install qemu-user-static)"; exit 2; }
[ -x dist/nereid-linux-arm64 ] || node_modules/.bin/bun scripts/build.ts --target=bun-linux-arm64
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
node_modules/.bin/bun scripts/make-models.ts "$work/models" --only=simple >/dev/null
cp dist/nereid-linux-arm64 "$work/"
port=${PORT:-18777}
(cd "$work" && exec "$QEMU" ./nereid-linux-arm64 --model-repository=models --http-port="$port" --http-address=127.0.0.1 --allow-grpc=false --allow-metrics=false) >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break
  kill -0 $pid 2>/dev/null || { cat "$work/log"; echo "server exited"; exit 1; }
  sleep 0.2
done
body='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
out=$(curl -sf "http://127.0.0.1:$port/v2/models/simple/infer" -d "$body")
echo "$out"
echo "$out" | grep -q '"data":\[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\]' || { echo "unexpected answer"; cat "$work/log"; exit 1; }
echo "arm64 OK ($(uname -m) host, $QEMU)"
