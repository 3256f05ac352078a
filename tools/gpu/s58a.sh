#!/usr/bin/env bash
# Session 58: session 57's unrun call (s57b.sh) plus the side-stream remainders. The fixtures
# with every MoE batch on gemm_qs (the fused gate + up forced) while the model is written; 8K
# prompts under the defaults (fused gate + up on IQ2_XXS), DS4_GU_FUSE=0 and DS4_QS_FORK=1
# (session 39's shortest-remainder launch on the side stream, never measured), twice; on an
# H200 the committed sweep; the kernel bench's gemm_qs diagnosis rows (gemm_qs_dg: parts of the
# K step left out, time only: does the L2 traffic of the activation copies bound its tiles?);
# a CUPTI trace of an 8K prompt; the default fixtures.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,cupti}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s58a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
for v in X=1 DS4_GU_FUSE=0 DS4_QS_FORK=1 X=1 DS4_GU_FUSE=0; do prompt_ab "$v" 8192; done
kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_gate" g8192_dg > /dev/null
grep -E "grouped_qs |qs_dg|FAIL|rror|panic" "$OUT/kbench_exp_g8192_dg.txt" | cut -c38-220
keep kbench_exp_g8192_dg.txt
sweep_whole
# (an H200 ends here: the whole model's loads and the sweep fill the call)
[ -n "${LEAN:-}" ] || [ -z "${SYNTH_LAYERS:-}" ] && exit 0
CUPTI_GEN=4 cupti_decode 8192
cp "$OUT/cupti_kern.csv.gz" "$REAL_OUT/cupti_prefill_8k.csv.gz" 2>/dev/null
python3 tools/gpu/nsys_gaps.py "$OUT/cupti_kern.csv.gz" --longest 2>&1 | head -40
fixtures_in X=1
verify_summary "$(verify_file X=1)"
