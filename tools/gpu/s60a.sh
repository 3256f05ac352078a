#!/usr/bin/env bash
# Session 60's prepared call (no device came in sessions 60 and 61: none of it has run). Five switches,
# each off by default:
#   DS4_DENSE_Y16=N  prefill's cuBLAS outputs whose one reader takes f16 written as f16 rows
#                    (bits: 1 the attention output -> hc_post_mma8_hpy; 2 the shared expert's
#                    down -> hc_post_mma8_hyps; 4 its gate / up -> moe_mid_pairs_h);
#   DS4_HC_CHUNK=N   hc_post + hc_finish in turn per N tokens (the finish reads the state from L2);
#   DS4_IDXQ_L=1     the indexer's query prep with Di / 32 lanes a vector (idx_q_prep_l);
#   DS4_TOPK_THREADS prefill's topk_select in blocks of 256 / 512 threads;
#   DS4_COMP_L16=1   the compressors' ratio-128 windows with 16 tokens' loads in flight (comp_emit16).
# 1. Kernel bench: hc rows at 8K (dense_y16 rows: 0 differing values expected, the f16 forms
#    against the f32 ones on the widened values), idx rows (idx q prep_l: 0 differing f16
#    values, scales and f32 values; topk_select prefill: differing values 0), comp rows
#    (comp_emit16: differing values 0).
# 2. 8K prompts (H200: the whole model; H100: its first 28 layers): the defaults, each switch,
#    the defaults again, all five; with LEAN=1 (a short budget) the defaults, the four same-bit
#    switches together, the defaults again, all five. Every run but the DS4_DENSE_Y16 ones
#    must print the defaults' greedy tokens (the same bits).
# 3. The fixtures with all five on (DS4_HC_CHUNK=48: several chunks and a partial one per
#    fixture prefill): PASS everywhere; the tolerance lines against session 59's (only
#    DS4_DENSE_Y16 changes values). Last, so that a call cut short still has the prompts.
# `bash tools/gpu/s60a.sh sweep` (H200, on the warm machine after the call above; SWEEP_ENV
# the winners): the committed sweep (none since session 49).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz} (tools/gpu/prep.sh at this commit).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s60a
if [ "${1:-}" = sweep ]; then
  # `SWEEP_ENV="VAR=v ..." bash tools/gpu/s60a.sh sweep` (H200, the next call on the warm
  # machine: the model is already written): the committed sweep under that environment
  [ -n "${SYNTH_LAYERS:-}" ] && echo "the sweep needs the whole model: an H200 (this card has $(nvidia-smi --query-gpu=memory.total --format=csv,noheader | head -1))"
  synth_wait
  sweep_whole "${SWEEP_ENV:-}"
  cp "$OUT/sweep.log" "$REAL_OUT/" 2>/dev/null
  exit 0
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== hcp"
DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_hcp.txt" 2>&1
grep -E "dense_y16|hc_pf|FAIL|rror|panic" "$OUT/kbench_hcp.txt" | cut -c1-250
keep kbench_hcp.txt
echo "== idx"
DS4_KBENCH=idx timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_idx.txt" 2>&1
grep -E "e2m1|idx q prep|topk_select prefill|FAIL|rror|panic" "$OUT/kbench_idx.txt" | cut -c1-200
keep kbench_idx.txt
echo "== comp"
DS4_KBENCH=comp timeout 60 "$BIN" --kernel-bench > "$OUT/kbench_comp.txt" 2>&1
grep -E "comp_emit|FAIL|rror|panic" "$OUT/kbench_comp.txt" | cut -c1-200
keep kbench_comp.txt
synth_wait
# the prompts that decide, on either card (on the H200 the sweep is its own call, `s60a.sh
# sweep` above: the whole model's runs load 80 GB each, and both would not fit one call's 600 s)
# (LEAN=1, for a short budget: the four same-bit switches together, then with DS4_DENSE_Y16;
# the kernel-bench rows above time each kernel alone)
SAME="DS4_HC_CHUNK=1024 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256 DS4_COMP_L16=1"
LIST="X=1 DS4_DENSE_Y16=7 DS4_HC_CHUNK=1024 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256 DS4_COMP_L16=1 X=1"
[ -n "${LEAN:-}" ] && LIST="X=1 SAME X=1"
for v in $LIST "DS4_DENSE_Y16=7 $SAME"; do
  [ "$v" = SAME ] && v=$SAME
  prompt_ab "$v" 8192
done
# the fixtures last (a call cut short by the budget still has the prompts)
F="DS4_DENSE_Y16=7 DS4_HC_CHUNK=48 DS4_IDXQ_L=1 DS4_TOPK_THREADS=256 DS4_COMP_L16=1"
fixtures_in "$F"
verify_summary "$(verify_file "$F")"
