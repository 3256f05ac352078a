#!/usr/bin/env bash
# Session 55's first call: gemm_qs_gu in the kernel bench's gate cases at 8K tokens (session
# 54's s54a.sh: time, f16 mids' bits against gemm_qs x 2 + moe_mid), the hc_pf rows of the
# prefill hc kernel bench (hc_post_mma8_hp / _hyp against _h / _hy: time, the same bits), then
# 8K prompts under the defaults, DS4_GU_FUSE=1, and DS4_GU_FUSE=1 DS4_HC_PF=1, twice (the
# same greedy tokens expected). Carry .gpu/{ds4-bench,ds4-gguf,kz}. $OUT: log.txt, the kernel benches.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s55a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 DS4_KBENCH_CASE=exp_gate g8192 > /dev/null
grep -E "^exp_|grouped_qsx| gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c1-60,118-330
keep kbench_exp_g8192.txt
echo "== kbench hcp T=8192"
DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_hcp.txt" 2>&1
grep -E "hc_pf|hc_s16 f16 y rows|exp_y16 hc_post|FAIL|rror|panic" "$OUT/kbench_hcp.txt" | cut -c1-250
keep kbench_hcp.txt
synth_wait
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1 "DS4_GU_FUSE=1 DS4_HC_PF=1"; do prompt_ab "$v" 8192; done
done
