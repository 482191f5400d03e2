#!/usr/bin/env bash
# The one-shot GPU check: on a machine with one NVIDIA GPU, its driver and PyTorch CUDA (no Rust
# toolchain, no network), from the artefacts scripts/gpu-prepare.sh left in .gpu/, it measures in
# under 8 minutes and writes gpu.json, gpu.md and check.log into $OUT (default runs/gpu-check):
#
#   * the device (name, memory, driver) and the versions (build, torch, CUDA);
#   * ResNet20 SGHMC training steps/s at 3x32x32, batch 128 and 256, on wgpu and cuda, in rounds
#     interleaved with the same step in PyTorch CUDA (scripts/bench_torch_resnet.py: eager, and
#     torch.compile when it compiles within a minute);
#   * ICSGHMC x4 and DEO*-SGD x8 on ResNet20 (chain-steps/s), the UCI MLP with 16 chains;
#   * correctness: a seeded 20-step chain on flex, wgpu and cuda (energies within 1e-3 relative);
#   * the input pipeline's share of a step, and steps/s with batches prefetched or not;
#   * device memory: burn's allocator (1 and 4 chains, per extra chain), PyTorch's peak, and the
#     GPU's peak as nvidia-smi saw it.
#
# Usage: scripts/gpu-check.sh [--dry-run] [--bin PATH] [--rounds N] [--seconds S]
#   --dry-run  here, without a GPU: wgpu on the software Vulkan driver at batch 4, cuda and
#              PyTorch CUDA marked as skipped with their reason (PyTorch runs on the CPU
#              instead when it is installed), so the whole check is known to work before a GPU
#              sees it. With a dev build: scripts/gpu-prepare.sh --profile dev --no-debs.
#
# On a lent machine, from the repository root with .gpu carried:
#   scripts/gpu-check.sh            (as root: unpacks the Vulkan loader when the machine lacks it)
# Every part runs under its own time limit and records its failure instead of stopping the check.
set -uo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
dry=0
bin=""
rounds=2
seconds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --bin) bin="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$here/runs/gpu-check}"
mkdir -p "$OUT"
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
log="$OUT/check.log"
: > "$log"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$log" >&2; }
# A part: `part NAME LIMIT_SECONDS COMMAND...`; its output in $work/NAME.out, its status in runs.tsv.
part() {
  local name="$1" limit="$2"; shift 2
  local t0; t0=$(date +%s%N)
  timeout --kill-after=10 "$limit" "$@" > "$work/$name.out" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\t%s\t%s\n' "$name" "$rc" "$ms" >> "$work/runs.tsv"
  { echo "== $name (exit $rc)"; tail -n 40 "$work/$name.out"; } >> "$log"
  say "$name: exit $rc"
  return $rc
}
: > "$work/runs.tsv"

# --- setup -------------------------------------------------------------------------------
if [ -z "$bin" ]; then
  # The prepared binary travels xz-compressed (scripts/gpu-prepare.sh); python's lzma unpacks it.
  bin="$work/sgmcmc"
  if ! python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
       "$here/.gpu/sgmcmc.xz" "$bin" 2>>"$log"; then
    say "no .gpu/sgmcmc.xz to unpack: run scripts/gpu-prepare.sh first (or pass --bin)"
    exit 2
  fi
  chmod +x "$bin"
fi
if [ ! -x "$bin" ]; then
  say "no binary at $bin"
  exit 2
fi
if [ "$dry" = 1 ]; then
  source scripts/wgpu-env.sh
  batches=4
  seconds=1
  rounds=1
  input_limit=240   # lavapipe compiles the input group's kernels for a minute or two
  torch_device=cpu
else
  # The Vulkan loader, when the machine has none (the driver brings the NVIDIA ICD).
  if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' && ls .gpu/debs/*.deb >/dev/null 2>&1 \
     && [ "$(id -u)" = 0 ]; then
    for f in .gpu/debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
    say "unpacked the Vulkan loader from .gpu/debs"
  fi
  if ! ls /usr/share/vulkan/icd.d/nvidia*.json /etc/vulkan/icd.d/nvidia*.json >/dev/null 2>&1 \
     && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export VK_ICD_FILENAMES=$VK_DRIVER_FILES
  fi
  # NVRTC for the cuda device: the toolkit's, else the one PyTorch's wheels carry.
  nvrtc_dirs=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site
dirs = set()
for base in site.getsitepackages() + ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]:
    for f in glob.glob(os.path.join(base, "**", "libnvrtc.so*"), recursive=True):
        dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
EOF
)
  [ -n "$nvrtc_dirs" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$nvrtc_dirs"
  batches=128,256
  input_limit=60
  torch_device=cuda
fi
first_batch=${batches%%,*}
cd "$work"   # wgpu writes its kernel cache under ./target

# --- the machine ---------------------------------------------------------------------------
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true; } > "$work/gpu.txt"
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())' \
  > "$work/torch.txt" 2>&1 || true
cp "$here/.gpu/build.json" "$work/build.json" 2>/dev/null || echo '{}' > "$work/build.json"
"$bin" bench --help > /dev/null 2>&1 || say "the binary does not run here: $("$bin" --version 2>&1 | tail -1)"
say "device: $(cat "$work/gpu.txt"); torch: $(cat "$work/torch.txt")"

# --- correctness: one seeded chain on every device ------------------------------------------
# A GPU device that this binary lacks or the machine refuses exits 2 with one line (kept in the
# report as the reason it was skipped); the ones that run are measured below.
devices=()
for d in flex wgpu cuda; do
  if part "seeded-$d" 240 "$bin" bench --only seeded --device "$d" --batches "$first_batch" \
       --seconds 1 --out "$work/seeded-$d" --force && [ "$d" != flex ]; then
    devices+=("$d")
  fi
done
say "GPU devices that run: ${devices[*]:-none}"

# --- the input pipeline's share of a step (crops, flips, normalisation, upload; prefetched) --
for d in "${devices[@]}"; do
  part "input-$d" "$input_limit" "$bin" bench --only input --device "$d" --batches "$first_batch" \
    --seconds "$seconds" --out "$work/input-$d" --force
done

# --- throughput, interleaved with PyTorch ---------------------------------------------------
smi_watch() {  # GPU memory in use, sampled every 100 ms while a part runs
  if command -v nvidia-smi >/dev/null && [ "$dry" = 0 ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$work/smi-$1.txt" 2>/dev/null &
    echo $!
  fi
}
torch_ok=0
python3 -c 'import torch' 2>/dev/null && torch_ok=1
compile_ok=1
for r in $(seq 1 "$rounds"); do
  for d in "${devices[@]}"; do
    if [ $(( $(date +%s) - start )) -gt 400 ]; then say "time budget reached: round $r of $d skipped"; continue; fi
    w=$(smi_watch "ours-$d-r$r")
    part "ours-$d-r$r" 200 "$bin" bench --only gpu --device "$d" --batches "$batches" \
      --seconds "$seconds" --out "$work/ours-$d-r$r" --force
    [ -n "$w" ] && kill "$w" 2>/dev/null
  done
  if [ "$torch_ok" = 1 ]; then
    for b in ${batches//,/ }; do
      part "torch-eager-b$b-r$r" 90 python3 "$here/scripts/bench_torch_resnet.py" --device "$torch_device" \
        --batch "$b" --channels 3 --side 32 --n-data 50000 --seconds "$seconds" --warmup 5 --json \
        --threads "$(nproc)"
      if [ "$compile_ok" = 1 ] && [ $(( $(date +%s) - start )) -lt 360 ]; then
        part "torch-compile-b$b-r$r" 150 python3 "$here/scripts/bench_torch_resnet.py" --device "$torch_device" \
          --batch "$b" --channels 3 --side 32 --n-data 50000 --seconds "$seconds" --warmup 5 --json \
          --compile --threads "$(nproc)" || compile_ok=0
      fi
    done
  fi
done

# --- report --------------------------------------------------------------------------------
mode=gpu
[ "$dry" = 1 ] && mode=dry-run
python3 "$here/scripts/gpu_report.py" --work "$work" --out "$OUT" --mode "$mode" \
  --batches "$batches" --torch "$torch_ok" --wall "$(( $(date +%s) - start ))" >> "$log" 2>&1
rc=$?
say "report: exit $rc; wrote $OUT/gpu.json and $OUT/gpu.md"
[ -f "$OUT/gpu.md" ] && cat "$OUT/gpu.md"
[ -n "${GPU_CHECK_KEEP:-}" ] && say "raw outputs kept in $work" || rm -rf "$work"
exit $rc
