#!/usr/bin/env bash
# Installs what the project needs beyond the Rust toolchain, when missing:
#   - a Vulkan driver for burn-wgpu: Debian's mesa-vulkan-drivers gives lavapipe, a software
#     Vulkan device, so the GPU code path runs (slowly) on machines without a GPU;
#   - DejaVu fonts for plot labels (plots are drawn without text otherwise).
# Needs root and apt-get; elsewhere it only prints what to install.
set -euo pipefail
need=()
ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers libvulkan1)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "note: please install ${need[*]} (wgpu tests fall back to OpenGL or fail without a Vulkan driver)" >&2
fi
