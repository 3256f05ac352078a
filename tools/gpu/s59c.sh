#!/usr/bin/env bash
# A record of a session-59 call: its switches (DS4_IQ2_G8, DS4_HC_FIN_PL, DS4_IQ2_SG, DS4_QS_U)
# were removed after it (bench/NOTES.md session 59); run it from commit 3c82188 / f9ccf3f, where they exist.
# Session 59, second call: gemm_qs's K step cut from 115 instructions (IQ2_XXS) by the sign
# words from a table (`DS4_IQ2_SG=1`: 105) and by the loop unrolled over each super-block
# (`DS4_IQ2_SG=2`: 76, for the IQ2_XXS gate + up and gemm_qs; `DS4_QS_U=1`: the plain gemm_qs /
# gemm_qs2 launches of every type, e.g. the Q2_K down), and the hc_post blocks' tokens chosen
# by the batch (hc_tokens: 256 at 8K, the new default).
# 1. The kernel bench's expert cases at 8K (IQ2_XXS gate, Q2_K down, Q4_K gate / down): the sg / sgu / u rows (bits==qr /
#    qr2 and the same mids expected).
# 2. The fixtures with every MoE batch on gemm_qs and DS4_IQ2_SG=2 DS4_QS_U=1.
# 3. 8K prompts under the defaults, DS4_HC_TOKENS=64 (the old default), DS4_IQ2_SG=1, =2,
#    DS4_QS_U=1 and both, the first and last again (the same greedy tokens expected). On an
#    H200 with time left (SWEEP_BY=420 s), the committed sweep under the defaults.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s59c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
KB_TIMEOUT=240 kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_" e8192 > /dev/null
grep -E "^exp_|grouped_qs|gu (sg|QsSplit st)|FAIL|rror|panic" "$OUT/kbench_exp_e8192.txt" | cut -c1-24,38-230
keep kbench_exp_e8192.txt
synth_wait
for v in X=1 "DS4_IQ2_SG=2 DS4_QS_U=1" DS4_HC_TOKENS=64 DS4_IQ2_SG=2 DS4_QS_U=1 DS4_IQ2_SG=1 X=1 "DS4_IQ2_SG=2 DS4_QS_U=1"; do
  prompt_ab "$v" 8192
done
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0 DS4_IQ2_SG=2 DS4_QS_U=1"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
[ "$SECONDS" -lt "${SWEEP_BY:-420}" ] && sweep_whole
