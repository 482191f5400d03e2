# Sourced by the scripts that run wgpu (tests, CI benchmarks): pins the software Vulkan
# driver when no other ICD is present, so wgpu does not fall back to GL, and gives the Vulkan
# loader a runtime directory (it warns on every device creation without one).
if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] \
   && ! ls /dev/dri/renderD* >/dev/null 2>&1; then
  export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
fi
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/sgmcmc-xdg-$(id -u)"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
