#!/usr/bin/env bash
# Manual comparison tool (not run in CI): PyTorch's steps/s for the papers' MNIST CNN SGLD step
# at batch 256 and 2500 with 2 threads (scripts/bench_torch_cnn.py), to put beside
# `sgmcmc bench` / `cargo bench --bench cnn`.
#
# Creates a venv under $HOME/.cache/sgmcmc-torch-venv and pip-installs CPU torch. By default pip's
# configured index is used (its Linux wheel pulls the CUDA runtime packages too, a few GB); set
# TORCH_INDEX_URL to PyTorch's CPU-only wheel index to get the small CPU build instead.
# Extra arguments go to the Python script, e.g. `scripts/bench-torch.sh --seconds 10 --batches 256`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${SGMCMC_TORCH_VENV:-$HOME/.cache/sgmcmc-torch-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  if [ -n "${TORCH_INDEX_URL:-}" ]; then
    "$venv/bin/pip" install --quiet --index-url "$TORCH_INDEX_URL" torch
  else
    "$venv/bin/pip" install --quiet torch
  fi
fi
exec "$venv/bin/python" "$here/bench_torch_cnn.py" "$@"
