#!/usr/bin/env bash
# Manual comparison tool (not run in CI): `sgmcmc digits` against BlackJAX's jitted SGLD on the
# same task (scripts/bench_blackjax_digits.py), interleaved ROUNDS times in one session, then the
# median steps/s of each and their ratios. sgmcmc runs twice per round: with the closed-form
# MLP gradients (the default) and with `--gradients autodiff` (burn autodiff through the network
# module: the path of a user's own network). All read DATA_DIR/digits (`sgmcmc data fetch digits`).
#
# Usage: scripts/bench-blackjax.sh DATA_DIR [ROUNDS]. Uses the system python if it has jax and
# blackjax, else creates a venv under $HOME/.cache/sgmcmc-jax-venv and pip-installs them (CPU);
# builds the `sgmcmc` binary with the workspace's profile.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
data="${1:?usage: scripts/bench-blackjax.sh DATA_DIR [ROUNDS]}"
rounds="${2:-3}"
# The system python when it has jax and blackjax, else a venv of our own.
py=python3
if ! python3 -c "import jax, blackjax" 2>/dev/null; then
  venv="${SGMCMC_JAX_VENV:-$HOME/.cache/sgmcmc-jax-venv}"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c "import jax, blackjax" 2>/dev/null \
    || "$venv/bin/pip" install --quiet jax blackjax numpy
  py="$venv/bin/python"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sgmcmc-target}"
(cd "$here/.." && source scripts/features.sh && cargo build --quiet --workspace --features "$SGMCMC_FEATURES")
bin="$CARGO_TARGET_DIR/debug/sgmcmc"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
rate() { python3 -c "import json; print(json.load(open('$1/summary.json'))['steps_per_second'])"; }
ours=(); autodiff=(); theirs=()
for r in $(seq "$rounds"); do
  "$bin" digits --data-dir "$data" --out "$out/run" --force --quiet >/dev/null
  ours+=("$(rate "$out/run")")
  "$bin" digits --data-dir "$data" --gradients autodiff --out "$out/ad" --force --quiet >/dev/null
  autodiff+=("$(rate "$out/ad")")
  line="$("$py" "$here/bench_blackjax_digits.py" --data-dir "$data" 2>/dev/null | tail -1)"
  theirs+=("$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['steps_per_second'])" "$line")")
  echo "round $r: sgmcmc ${ours[-1]} (autodiff ${autodiff[-1]}) steps/s, blackjax ${theirs[-1]} steps/s"
done
python3 - "${ours[*]}" "${autodiff[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
o, a, t = ([float(v) for v in arg.split()] for arg in sys.argv[1:4])
mo, ma, mt = statistics.median(o), statistics.median(a), statistics.median(t)
print(f"median: sgmcmc {mo:.0f} steps/s (autodiff {ma:.0f}), blackjax {mt:.0f} steps/s, "
      f"ratio sgmcmc/blackjax {mo / mt:.2f} (autodiff {ma / mt:.2f})")
PY
