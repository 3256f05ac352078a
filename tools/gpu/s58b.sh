#!/usr/bin/env bash
# Session 58: gemm_qs's K loop with three fragment buffers (qs_kloop KD 3, `DS4_QS_KD=3`: each
# dequantization two steps ahead of its products; session 58's gemm_qs_dg rows showed the
# dequantization and the products serializing). The kernel bench's expert cases at 8K both
# ways (the same bits as gemm_qr expected: bits==qr / qr2; the gu rows' mids as before), the
# fixtures with every MoE batch on gemm_qs under DS4_QS_KD=3, 8K prompts both ways twice (the
# same greedy tokens expected), the default fixtures. On an H200 the committed sweep ends it.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s58b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for v in X=1 DS4_QS_KD=3; do
  kx "$BIN" 8192 "DS4_KBENCH_CASE=exp_ $v" "e8192_$v" > /dev/null
  echo "== $v"; grep -E "^exp_|grouped_qs|gu |y16 Qs|FAIL|rror|panic" "$OUT/kbench_exp_e8192_$v.txt" | cut -c1-24,38-200
  keep "kbench_exp_e8192_$v.txt"
done
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0 DS4_QS_KD=3"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
for r in 1 2; do
  for v in X=1 DS4_QS_KD=3; do prompt_ab "$v" 8192; done
done
# the routing's tiles per layer (DS4_MOE_STATS: the remainders gemm_qs2 takes)
prompt_ab DS4_MOE_STATS=1 8192 > /dev/null; grep -E "ds4: moe" /tmp/run.txt | head -120 > "$OUT/moe_stats_8k.txt"; keep moe_stats_8k.txt
head -8 "$OUT/moe_stats_8k.txt"
sweep_whole
[ -n "${LEAN:-}" ] || [ -z "${SYNTH_LAYERS:-}" ] && exit 0
fixtures_in DS4_QS_KD=3
verify_summary "$(verify_file DS4_QS_KD=3)"
