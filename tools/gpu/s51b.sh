#!/usr/bin/env bash
# Session 51's prepared call, `bash tools/gpu/s51b.sh` (~5 min on an H100): the routed-expert
# kernel bench's mvq_pairs / mvqn rows at 64, 256 and 1024 tokens; the fixtures with
# moe_small's slots chunked (DS4_MOE_SMALL_GRP=n: mvqn, up to 8 pairs of one expert per slot)
# up to 2048 tokens (every fixture prefill of up to 2048 tokens runs them, and the "fast
# small-batch experts deviation" row); single batches of 8-2048 tokens at 2K chunked and under
# the defaults; the per-kernel profile (DS4_PROFILE=1) of a 256-token batch chunked.
# FULL=1 adds the fixtures and rows of session 50's per-pair grouped layout
# (DS4_MOE_SMALL_GRP=1, up to 256 tokens) and chunked rows at one row per warp
# (DS4_MVQN_SPLIT=1,1): ~3 min more. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s51b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
N="DS4_MOE_SMALL_GRP=n DS4_MOE_SMALL=2048"
G="DS4_MOE_SMALL_GRP=1 DS4_MOE_SMALL=256"
# the kernel-level check first (seconds): mvqn against mvq_pairs and gemm_f32 at the real shapes
kx "$BIN" 64,256,1024 X=1 mvqn > /dev/null
grep -E "^exp_|grouped |mvq|FAIL|rror|panic" "$OUT/kbench_exp_mvqn.txt"; keep kbench_exp_mvqn.txt
if [ "${FULL:-0}" = 1 ]; then fixtures_in "$N" "$G"; else fixtures_in "$N"; fi
grep -hE "small-batch experts" "$OUT"/verify_*.txt | cut -c1-200
synth_wait
rows=("$N" X=1)
[ "${FULL:-0}" = 1 ] && rows+=("$N DS4_MVQN_SPLIT=1,1" "$G")
for v in "${rows[@]}"; do
  small_rows "$v" 8,32,64,128,256,512,1024,2048 6300 6200
done
echo "== profile 256, $N"
env $N DS4_PROFILE=1 DS4_BENCH_INCR=256 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2400 \
  --ctx-start 2048 --ctx-max 2304 --gen-tokens 2 > /tmp/p.log 2>&1
grep -E "rror|panic" /tmp/p.log | head -3
grep -E "profile prefill ctx 2304:" /tmp/p.log | head -14
