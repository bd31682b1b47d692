#!/usr/bin/env bash
# Builds the container image from deploy/Containerfile with podman (no Docker daemon):
# the binary for ARCH (x64: dist/nereid, arm64: dist/nereid-linux-arm64), ONNX Runtime's
# library for ARCH beside it, and only the shared libraries those load.
#
#   scripts/build-image.sh [x64|arm64] [--save=<file.tar>]
#
# x64 takes the libraries ldd finds on this host. arm64 cannot run ldd here, so it takes
# the same libraries from Debian's arm64 packages (libc6, libstdc++6, libgcc-s1), fetched
# with apt-get download (needs `dpkg --add-architecture arm64 && apt-get update`).
# Prints the image name and its size.
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${1:-x64}
SAVE=""
for a in "${@:2}"; do case $a in --save=*) SAVE=${a#--save=} ;; *) echo "unknown argument $a" >&2; exit 2 ;; esac; done
VERSION=$(node -p 'require("./package.json").version')
case $ARCH in
  x64) BIN=dist/nereid; PLATFORM=linux/amd64 ;;
  arm64) BIN=dist/nereid-linux-arm64; PLATFORM=linux/arm64 ;;
  *) echo "ARCH must be x64 or arm64" >&2; exit 2 ;;
esac
[ -x "$BIN" ] || { echo "$BIN is missing: build it first (npm run build, or npm run build:arm64)" >&2; exit 2; }
command -v podman >/dev/null || { echo "podman is not installed (apt-get install podman)" >&2; exit 2; }
ORT=node_modules/onnxruntime-node/bin/napi-v6/linux/$ARCH/libonnxruntime.so.1
KOFFI=node_modules/@koromix/koffi-linux-$ARCH/linux_$ARCH/koffi.node
CTX=dist/image-$ARCH
rm -rf "$CTX" && mkdir -p "$CTX/rootfs/opt/nereid" "$CTX/rootfs/etc" "$CTX/rootfs/models"
install -m 755 "$BIN" "$CTX/rootfs/opt/nereid/nereid"
install -m 644 "$ORT" "$CTX/rootfs/opt/nereid/libonnxruntime.so.1"
install -d -m 1777 "$CTX/rootfs/tmp"
printf 'root:x:0:0:root:/:/sbin/nologin\nnereid:x:10001:10001:nereid:/tmp:/sbin/nologin\n' > "$CTX/rootfs/etc/passwd"
printf 'root:x:0:\nnereid:x:10001:\n' > "$CTX/rootfs/etc/group"

copy_lib() { # copy_lib <file on this host> <path in the image>
  mkdir -p "$CTX/rootfs$(dirname "$2")"
  cp -L "$1" "$CTX/rootfs$2"
}
if [ "$ARCH" = x64 ]; then
  # Every library the binary, ONNX Runtime and koffi load, at the path ldd resolves.
  libs=$( { ldd "$BIN"; ldd "$ORT"; [ -f "$KOFFI" ] && ldd "$KOFFI"; } | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
  for l in $libs; do copy_lib "$l" "$l"; done
else
  DEBS=$CTX/debs
  mkdir -p "$DEBS"
  (cd "$DEBS" && apt-get download libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 >/dev/null) || {
    echo "cannot download Debian's arm64 libc6/libstdc++6/libgcc-s1: run 'dpkg --add-architecture arm64 && apt-get update' first" >&2; exit 2; }
  for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$DEBS/root"; done
  for n in ld-linux-aarch64.so.1 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libstdc++.so.6 libgcc_s.so.1; do
    f=$(find "$DEBS/root" -name "$n" | head -1)
    [ -n "$f" ] || { echo "$n not found in the arm64 packages" >&2; exit 2; }
    copy_lib "$f" "/lib/aarch64-linux-gnu/$n"
  done
  copy_lib "$CTX/rootfs/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" /lib/ld-linux-aarch64.so.1
  rm -rf "$DEBS"
fi
IMAGE=nereid:$VERSION-$ARCH
podman build --quiet --format docker --platform "$PLATFORM" -f deploy/Containerfile -t "$IMAGE" "$CTX" >/dev/null
if [ -n "$SAVE" ]; then rm -f "$SAVE"; podman save --quiet --format docker-archive -o "$SAVE" "$IMAGE"; fi
echo "$IMAGE $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
