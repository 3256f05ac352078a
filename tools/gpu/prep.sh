#!/usr/bin/env bash
# Prepare the carry for a device call (here, no GPU needed): the release ds4-bench and
# ds4-gguf stripped into .gpu/, the sm_90a kernel cache built from the current source and
# gzipped into .gpu/kz (env.sh's unpack_kz restores it on the device), and with BASE=REV the
# same for an earlier commit in .gpu/base (binary + .gpu/base/kz) for same-call A/B runs.
# The fixtures (../shared/fixtures/model without the noise/trace files) go xz-compressed into
# .gpu/fix.txz (env.sh's setup_caches unpacks them): the 64 MiB carry limit counts the tracked
# files too (~6 MB). Then carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz} (+ .gpu/base).
#   bash tools/gpu/prep.sh            BASE=main bash tools/gpu/prep.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
nvrtc=$(ls "$root"/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 | head -1)
cargo build --release -p ds4-cli -q
mkdir -p .gpu
cp target/release/ds4-bench target/release/ds4-gguf .gpu/
strip .gpu/ds4-bench .gpu/ds4-gguf
# the cache must come from the source as it is now (a stale one recompiles on the device: ~95 s)
rm -rf .gpu/kcache .gpu/kz
DS4_NVRTC_LIB="$nvrtc" DS4_KERNEL_CACHE="$root/.gpu/kcache" cargo test --release -p ds4-engine --lib prebuild_kernel_cache -q -- --ignored >/dev/null
mkdir -p .gpu/kz
for f in .gpu/kcache/*; do gzip -c "$f" > ".gpu/kz/$(basename "$f").gz"; done
if [ -n "${BASE:-}" ]; then
  bash tools/gpu/base.sh "$BASE"
fi
if [ ! -f .gpu/fix.txz ]; then
  rm -rf .gpu/fix && cp -r ../shared/fixtures/model .gpu/fix
  find .gpu/fix \( -name 'noise.*' -o -name 'trace.*' \) -delete
  tar cf - -C .gpu fix | xz -9 -T2 > .gpu/fix.txz
fi
du -shc .gpu/ds4-bench .gpu/ds4-gguf .gpu/fix.txz .gpu/kz ${BASE:+.gpu/base} 2>/dev/null | tail -1
