#!/usr/bin/env bash
# Session 57: the fused gate + up made the default for IQ2_XXS too (s56-pws merged: the
# routing weights staged in shared memory; kernel bench 1.12x). On the q2 model (H100: its first
# 28 layers): 8K prompts under the defaults and DS4_GU_FUSE=0, twice; the fixtures under the
# defaults and with every MoE batch on gemm_qs (the fused path forced); then a CUPTI kernel
# trace of an 8K prompt (where prefill goes now), after the kernel bench's gu rows under skewed
# routing. On an H200 (the whole model) the committed
# sweep runs before the prompts. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,cupti}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s57b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
sweep_whole
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=0; do prompt_ab "$v" 8192; done
done
[ -n "${LEAN:-}" ] && exit 0  # LEAN=1: the A/B and the forced fixtures only
# the gu rows under the synthetic model's skewed routing (its learned-routing layers: the
# remainders on gemm_qs2 / gemm_qs2_gu, which the uniform case leaves nearly empty)
kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_gate DS4_KBENCH_SKEW=1" g8192_skew > /dev/null
grep -E " gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192_skew.txt" | cut -c38-200
keep kbench_exp_g8192_skew.txt
CUPTI_GEN=4 cupti_decode 8192
cp "$OUT/cupti_kern.csv.gz" "$REAL_OUT/cupti_prefill_8k.csv.gz" 2>/dev/null
python3 tools/gpu/nsys_gaps.py "$OUT/cupti_kern.csv.gz" --longest 2>&1 | head -40
fixtures_in X=1
verify_summary "$(verify_file X=1)"
