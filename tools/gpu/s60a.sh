#!/usr/bin/env bash
# Session 60, first call. On an H200 (the whole model): the committed sweep under the defaults
# (none since session 49). On any card: prefill's cuBLAS outputs whose one reader takes f16
# written as f16 rows (`DS4_DENSE_Y16` bits: 1 the attention output, hc_post_mma8_hpy; 2 the
# shared expert's down, hc_post_mma8_hyps; 4 its gate / up, moe_mid_pairs_h):
# 1. the kernel bench's hc rows at 8K (dense_y16 rows: the same bits as the f32 forms on the
#    widened values expected);
# 2. the fixtures with DS4_DENSE_Y16=7 DS4_HC_CHUNK=48 (several chunks and a partial one per
#    fixture prefill; tolerance lines against session 59's), while the model is written;
# 3. on an H200 the sweep, then 8K prompts: the defaults, DS4_DENSE_Y16=7, DS4_HC_CHUNK=1024
#    twice each and both (on an H100, 28 layers: also DS4_DENSE_Y16=1 / 2 / 4 and
#    DS4_HC_CHUNK=512 / 2048); DS4_HC_CHUNK runs must print the defaults' greedy tokens.
# Also the indexer's query prep on idx_q_prep_l (`DS4_IDXQ_L=1`, Di / 32 lanes a vector): the
# kernel bench's idx rows (prep_l: 0 differing values and scales expected), in the fixtures'
# setting and in the prompts (the same greedy tokens as the defaults expected); prefill's
# topk_select in blocks of 256 threads (`DS4_TOPK_THREADS=256`; kernel bench: the same
# selection), in the prompts too.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s60a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== hcp"
DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_hcp.txt" 2>&1
grep -E "dense_y16|hc_pf|FAIL|rror|panic" "$OUT/kbench_hcp.txt" | cut -c1-250
keep kbench_hcp.txt
echo "== idx"
DS4_KBENCH=idx timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_idx.txt" 2>&1
grep -E "e2m1|idx q prep|topk_select prefill|FAIL|rror|panic" "$OUT/kbench_idx.txt" | cut -c1-200
keep kbench_idx.txt
# (the fixtures run while the synthetic model is written)
F="DS4_DENSE_Y16=7 DS4_HC_CHUNK=48 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
synth_wait
if [ -z "${SYNTH_LAYERS:-}" ]; then
  # the whole model (H200): the sweep, then the prompts that decide
  sweep_whole
  cp "$OUT/sweep.log" "$REAL_OUT/" 2>/dev/null
  LIST="X=1 DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256 X=1 DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024
    DS4_IDXQ_L=1 DS4_TOPK_THREADS=256"
else
  LIST="X=1 DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024 DS4_HC_CHUNK=512 DS4_HC_CHUNK=2048 DS4_DENSE_Y16=1 DS4_DENSE_Y16=2
    DS4_DENSE_Y16=4 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256 DS4_TOPK_THREADS=512 X=1 DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024 DS4_IDXQ_L=1
    DS4_TOPK_THREADS=256"
fi
for v in $LIST "DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256"; do
  prompt_ab "$v" 8192
done
