#!/usr/bin/env bash
# Session 56: the fused gate + up (interleaved rows, moe_mid_gu_fast's silu) on the Q4_K variant
# (gate / up / down Q4_K): a synthetic q4 model of the first 16 layers (~65 GB: the 43 layers'
# ~160 GB fit no card), 8K prompts under the defaults, DS4_GU_FUSE=1 and =2, twice; then the
# fixtures with DS4_GU_FUSE=2 forced onto every MoE batch. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
# (call_start without its q2 model)
REAL_OUT=$OUT; export OUT=/tmp/s56f-out; mkdir -p "$OUT"
exec > >(tee -a "$REAL_OUT/log.txt") 2>&1
setup_caches
rm -f /dev/shm/q2.gguf /dev/shm/q2.done
M=/dev/shm/q4.gguf
timeout 300 "$GGUF_BIN" synth --preset full --quant q4 --seed 1 --layers 16 --out "$M" 2>&1 | tail -1
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1 DS4_GU_FUSE=2; do prompt_ab "$v" 8192; done
done
fixtures_in "DS4_GU_FUSE=2 DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
for f in "$OUT"/verify_*.txt; do
  echo "== $(basename "$f"): $(grep -cE '^PASS' "$f") PASS, $(grep -cE '^FAIL' "$f") FAIL"
  grep -E "deviation|fast" "$f" | head -4
  gzip -c "$f" > "$REAL_OUT/$(basename "$f").gz"
done
