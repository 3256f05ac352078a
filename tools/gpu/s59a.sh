#!/usr/bin/env bash
# Branch s58-hcpl: hc_finish's partials loaded all before any sum (HCF_PLOAD, `DS4_HC_FIN_PL=1`;
# one memory round trip per block instead of four; the same bits). The kernel bench's hc rows
# at 8K both ways (the "hc_finish f16" rows: diff 0 expected), the fixtures with it, 8K
# prompts both ways twice (the same greedy tokens expected); on an H200 the committed sweep
# under the defaults after. Also the hc_post kernels' tokens per block row (`DS4_HC_TOKENS`,
# 64 by default: 128 / 256 amortize each block's fn staging over more tokens). Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz} (prep.sh on the branch).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s59a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for v in X=1 DS4_HC_FIN_PL=1 DS4_HC_TOKENS=128; do
  tag=$(echo "$v" | tr '=' '-')  # (a name with '=' does not come back from the device)
  echo "== hcp $v"
  env $v DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_hcp_$tag.txt" 2>&1
  grep -E "hc_finish|hc_post_mma8|FAIL|rror|panic" "$OUT/kbench_hcp_$tag.txt" | head -12
  keep "kbench_hcp_$tag.txt"
done
fixtures_in DS4_HC_FIN_PL=1
verify_summary "$(verify_file DS4_HC_FIN_PL=1)"
synth_wait
for r in 1 2; do
  for v in X=1 DS4_HC_FIN_PL=1 DS4_HC_TOKENS=128 DS4_HC_TOKENS=256; do prompt_ab "$v" 8192; done
done
[ "$SECONDS" -lt "${SWEEP_BY:-300}" ] && sweep_whole
