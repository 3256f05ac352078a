#!/usr/bin/env bash
# Session 59, second call: the IQ2_XXS sign words from a table (gemm_qs_sg / gemm_qs_guc_sg /
# gemm_qs2_gu_sg, `DS4_IQ2_SG=1`: 105 instructions per K step against 115) and the hc_post
# blocks' tokens chosen by the batch (hc_tokens: 256 at 8K, the new default).
# 1. The kernel bench's IQ2_XXS gate at 8K: "grouped_qs sg" (bits==qr expected) and "gu sg"
#    (the split's fused gate + up: the same mids expected).
# 2. The fixtures with every MoE batch on gemm_qs and DS4_IQ2_SG=1.
# 3. 8K prompts under the defaults, DS4_HC_TOKENS=64 (the old default) and DS4_IQ2_SG=1, twice
#    (the same greedy tokens expected). On an H200, the committed sweep under the defaults.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s59c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_gate" g8192 > /dev/null
grep -E "grouped_qs|gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c38-230
keep kbench_exp_g8192.txt
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0 DS4_IQ2_SG=1"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
for r in 1 2; do
  for v in X=1 DS4_HC_TOKENS=64 DS4_IQ2_SG=1; do prompt_ab "$v" 8192; done
done
[ "$SECONDS" -lt "${SWEEP_BY:-300}" ] && sweep_whole
