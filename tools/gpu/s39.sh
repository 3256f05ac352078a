#!/usr/bin/env bash
# Session 39's call: gemm_qs split by each expert's remainder (GqKernel::QsSplit, DS4_QS_SPLIT
# 128 default / 64 / 0 off). The kernel bench exp (uniform 2K / 8K, skewed 8K: grouped_qsx's
# time and bits against gemm_qr), the fixtures with the split forced onto every MoE batch, then
# 8K prompts alternating the three settings (the same greedy tokens expected: same bits).
# Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz} (~52 MB).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
export DS4_KBENCH_NOBLAS=1
kbench_exp 2048 8192
echo "== skewed"
DS4_KBENCH_SKEW=1 DS4_KBENCH=exp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_exp_8192_skew.txt" \
  | grep -E "^exp_|grouped|routing|rror|panic"
unset DS4_KBENCH_NOBLAS
fixtures_in "DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0"
synth_wait
for i in 1 2; do
  prompt_ab DS4_QS_SPLIT=0 8192; prompt_ab X=1 8192; prompt_ab DS4_QS_SPLIT=64 8192
done
DS4_MOE_STATS=1 prompt_ab X=1 8192 >/dev/null; grep -iE "full tiles" /tmp/run.txt | head -4
