#!/usr/bin/env bash
# Prepares the artefacts of the one-shot GPU check (scripts/gpu-check.sh) in .gpu/ (ignored by
# git; a lent GPU machine gets it through the device tool's `carry`):
#
#   .gpu/sgmcmc.xz     a stripped release `sgmcmc` with the GPU devices (wgpu; cuda where it
#                      can be built, see below), without MPI (the GPU machine has no MPI library),
#                      xz-compressed: stripped it is about 110 MB (burn's GPU kernels, CubeCL's
#                      cache database), compressed about 20 MB; gpu-check.sh unpacks it
#   .gpu/debs/*.deb    the Vulkan loader's Debian packages, unpacked there if it lacks one
#   .gpu/build.json    what was built: commit, features, rustc and burn versions, sizes
#
# Usage: scripts/gpu-prepare.sh [--profile release|dev] [--cuda] [--no-debs]
#   --profile dev   reuse the test build's profile (minutes instead of a release build's half
#                   hour; our crates keep their debug assertions): enough for --dry-run
#   --cuda          also build the `cuda` device. burn-cuda 0.22.1 links a prebuilt LLVM 23
#                   (cubecl-llvm's NVPTX back end) that the build downloads from GitHub into
#                   ~/.local/share/tracel; without that download the build fails, so this is off
#                   unless the bundle is already there or asked for.
#
# The whole folder must stay under 60 MiB (the check's artefact budget); this script fails
# otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sgmcmc-target}"
profile=release
cuda=auto
debs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --cuda) cuda=yes; shift ;;
    --no-debs) debs=0; shift ;;
    *) echo "gpu-prepare: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$profile" in release|dev) ;; *) echo "gpu-prepare: --profile release|dev" >&2; exit 2 ;; esac
bundle="$HOME/.local/share/tracel/tracel-llvm-23.1.0-4/.tracel-llvm-installed"
features=wgpu
if [ "$cuda" = yes ] || { [ "$cuda" = auto ] && [ -f "$bundle" ]; }; then
  features=wgpu,cuda
fi
out=.gpu
mkdir -p "$out"
echo "gpu-prepare: building sgmcmc ($profile, features: default + $features)" >&2
if [ "$profile" = release ]; then
  cargo build --release --bin sgmcmc --features "$features"
  built="$CARGO_TARGET_DIR/release/sgmcmc"
else
  cargo build --bin sgmcmc --features "$features"
  built="$CARGO_TARGET_DIR/debug/sgmcmc"
fi
rm -f "$out/sgmcmc"
cp "$built" "$out/sgmcmc.tmp"
strip "$out/sgmcmc.tmp"
binary_bytes=$(stat -c %s "$out/sgmcmc.tmp")
xz -6 -T2 -c "$out/sgmcmc.tmp" > "$out/sgmcmc.xz.tmp"
rm "$out/sgmcmc.tmp"
mv "$out/sgmcmc.xz.tmp" "$out/sgmcmc.xz"
if [ "$debs" = 1 ]; then
  # The Vulkan loader (the NVIDIA driver brings its own ICD, not always the loader).
  mkdir -p "$out/debs" /tmp/sgmcmc-apt/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/sgmcmc-apt)
  if ! ls "$out"/debs/libvulkan1_*.deb >/dev/null 2>&1; then
    apt-get "${o[@]}" update -qq >/dev/null
    (cd "$out/debs" && apt-get "${o[@]}" download libvulkan1 >/dev/null)
  fi
fi
burn=$(awk '/^name = "burn"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
size=$(du -sb "$out" | cut -f1)
cat > "$out/build.json" <<EOF
{
  "commit": "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!.gpu' || echo '+changes')",
  "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "profile": "$profile",
  "features": "flex,ndarray,cli,$features",
  "rustc": "$(rustc --version)",
  "burn": "$burn",
  "binary_bytes": $binary_bytes,
  "compressed_bytes": $(stat -c %s "$out/sgmcmc.xz"),
  "folder_bytes": $size
}
EOF
cat "$out/build.json"
limit=$((60 * 1024 * 1024))
if [ "$size" -gt "$limit" ]; then
  echo "gpu-prepare: .gpu holds $size bytes, over the 60 MiB budget" >&2
  exit 1
fi
echo "gpu-prepare: .gpu ready ($((size / 1024 / 1024)) MiB); on the GPU machine: scripts/gpu-check.sh" >&2
