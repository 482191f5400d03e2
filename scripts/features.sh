# Sourced by the scripts that build the tested binary (tests, CI, benchmarks): the Cargo features
# of the one build they share. Every feature but `cuda`:
# - `fault-injection` only adds the toy config's `[fault]` table that tests/mpi.rs uses (the
#   shipped binary is built without it);
# - `learner` adds burn-train's `Learner` (examples/learner_sghmc.rs);
# - `cuda` is left out because burn-cuda 0.22.1 links a prebuilt LLVM 23 (cubecl-llvm's NVPTX back
#   end) that its build script downloads from GitHub, which CI and this project's machines
#   cannot reach. `.ci/run` type-checks the `cuda` code on its own (`DOCS_RS=1 cargo clippy
#   --all-features`, which skips that download); see docs/gpu.md.
export SGMCMC_FEATURES="${SGMCMC_FEATURES:-wgpu,mpi,fault-injection,learner}"
