#!/usr/bin/env bash
# A record of a session-59 call: its switches (DS4_IQ2_G8, DS4_HC_FIN_PL, DS4_IQ2_SG, DS4_QS_U)
# were removed after it (bench/NOTES.md session 59); run it from commit 5d55d6b, where they exist.
# Session 59: branch s59 = main + s58-hcpl + the IQ2_XXS grid as prmt selectors.
# 1. The kernel bench's IQ2_XXS gate at 8K: gemm_qs_g8 against gemm_qs (bits==qr expected) and
#    the split's fused gate + up on the _g8 entry points (the same mids expected: "gu g8").
# 2. The hc kernel bench at 8K under the defaults, DS4_HC_FIN_PL=1 and DS4_HC_TOKENS=128 / 256
#    (hc_finish's partials in one round; the hc_post blocks' tokens).
# 3. The fixtures with every MoE batch on gemm_qs and all three switches on.
# 4. 8K prompts under each switch, twice (the same greedy tokens expected everywhere: none of
#    them changes arithmetic). On an H200, the committed sweep under the defaults after.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s59b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_gate" g8192 > /dev/null
grep -E "grouped_qs|gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c38-230
keep kbench_exp_g8192.txt
for v in X=1 DS4_HC_FIN_PL=1 DS4_HC_TOKENS=128 DS4_HC_TOKENS=256; do
  tag=$(echo "$v" | tr '=' '-')  # (a name with '=' does not come back from the device)
  echo "== hcp $v"
  env $v DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_hcp_$tag.txt" 2>&1
  grep -E "hc_finish|hc_post_mma8|FAIL|rror|panic" "$OUT/kbench_hcp_$tag.txt" | head -12
  keep "kbench_hcp_$tag.txt"
done
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0 DS4_IQ2_G8=1 DS4_HC_FIN_PL=1 DS4_HC_TOKENS=128"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
for r in 1 2; do
  for v in X=1 DS4_IQ2_G8=1 DS4_HC_FIN_PL=1 DS4_HC_TOKENS=128 DS4_HC_TOKENS=256; do prompt_ab "$v" 8192; done
done
[ "$SECONDS" -lt "${SWEEP_BY:-300}" ] && sweep_whole
