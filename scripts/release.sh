#!/usr/bin/env bash
# `npm run release`: the release artefacts in dist/release/ (or --out=DIR):
#   nereid-<version>-linux-x64, nereid-<version>-linux-arm64     the single executables
#   nereid-<version>-image-x64.tar, nereid-<version>-image-arm64.tar
#                                  the container images (podman save, docker-archive),
#                                  unless --no-images
#   SHA256SUMS                     sha256sum of each, checked with `sha256sum -c SHA256SUMS`
# The images need podman, and for arm64 Debian's arm64 C/C++ runtime packages
# (`dpkg --add-architecture arm64 && apt-get update`); see scripts/build-image.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=dist/release
IMAGES=1
for a in "$@"; do
  case $a in
    --out=*) OUT=${a#--out=} ;;
    --no-images) IMAGES=0 ;;
    *) echo "unknown argument $a (expected --out=DIR, --no-images)" >&2; exit 2 ;;
  esac
done
VERSION=$(node -p 'require("./package.json").version')
BUN=node_modules/.bin/bun
rm -rf "$OUT" && mkdir -p "$OUT"
for arch in x64 arm64; do
  "$BUN" scripts/build.ts --target=bun-linux-$arch --outfile="$OUT/nereid-$VERSION-linux-$arch" >/dev/null
done
if [ "$IMAGES" = 1 ]; then
  for arch in x64 arm64; do
    # build-image.sh takes the binary from dist/; give it the one just released.
    bin=dist/nereid; [ $arch = arm64 ] && bin=dist/nereid-linux-arm64
    cp "$OUT/nereid-$VERSION-linux-$arch" "$bin"
    scripts/build-image.sh $arch --save="$OUT/nereid-$VERSION-image-$arch.tar"
  done
fi
(cd "$OUT" && sha256sum nereid-* > SHA256SUMS && cat SHA256SUMS)
