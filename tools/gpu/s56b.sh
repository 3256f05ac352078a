#!/usr/bin/env bash
# Session 56's second call: the fused gate + up with gate and up rows interleaved by 8 in each
# tile (every thread stores its own mids; gemm_qs_gu / gemm_qs_guc / gemm_qs2_gu) in the kernel
# bench's gate cases at 8K tokens (time and f16 mids' bits against gemm_qs x 2 + moe_mid), 8K
# prompts under the defaults, DS4_GU_FUSE=1 and =2 (twice; the same greedy tokens expected),
# then the fixtures with each fused form forced onto every MoE batch of the fixture models.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt, the kernel bench, the verify reports.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s56b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 DS4_KBENCH_CASE=exp_gate g8192 > /dev/null
grep -E "grouped_qsx| gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c1-60,118-330
keep kbench_exp_g8192.txt
synth_wait
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1 DS4_GU_FUSE=2; do prompt_ab "$v" 8192; done
done
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
fixtures_in "DS4_GU_FUSE=1 $F" "DS4_GU_FUSE=2 $F"
verify_summary
