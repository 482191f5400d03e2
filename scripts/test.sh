#!/usr/bin/env bash
# The test suite on every backend: flex, ndarray and wgpu (a software Vulkan device when there
# is no GPU), and the distributed runs under `mpirun` (feature `mpi`, tests/mpi.rs: 4 ranks on
# this machine). One build, one profile, all features; the target directory is cached outside
# the clone. The default build (no `--all-features`) needs no MPI library.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sgmcmc-target}"
scripts/install-deps.sh
# Pin the software Vulkan driver when no other ICD is present, so wgpu does not fall back to GL.
if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] \
   && ! ls /dev/dri/renderD* >/dev/null 2>&1; then
  export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
fi
# The Vulkan loader warns on every device creation without a runtime dir; give it one.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/sgmcmc-xdg-$(id -u)"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
cargo test --workspace --all-features "$@"
