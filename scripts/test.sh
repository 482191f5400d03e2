#!/usr/bin/env bash
# The test suite on every backend: flex, ndarray and wgpu (a software Vulkan device when there
# is no GPU), and the distributed runs under `mpirun` (feature `mpi`, tests/mpi.rs: 4 ranks on
# this machine). One build, one profile, every feature but `cuda` (scripts/features.sh); the
# target directory is cached outside the clone. The default build needs no MPI library.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sgmcmc-target}"
scripts/install-deps.sh
# wgpu on a software Vulkan device where there is no GPU.
source scripts/wgpu-env.sh
source scripts/features.sh
cargo test --workspace --features "$SGMCMC_FEATURES" "$@"
