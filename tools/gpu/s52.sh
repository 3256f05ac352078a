#!/usr/bin/env bash
# Session 52's call, `bash tools/gpu/s52.sh` (~4 min on an H100): mvqm (moe_small's chunks of
# one expert's pairs on the int8 tensor cores, DS4_MOE_SMALL_GRP=m) against mvqn, mvq_pairs and
# the grouped GEMMs in the routed-expert kernel bench at 64, 256 and 1024 tokens; the fixtures
# with it up to 2048 tokens (and the "fast small-batch experts deviation" row); single batches
# of 8-2048 tokens at 2K under it and under the defaults; the per-kernel profile of a 256-token
# batch. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s52
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
M8="DS4_MOE_SMALL_GRP=m DS4_MOE_SMALL=2048"
kx "$BIN" 64,256,1024 X=1 mvqm > /dev/null
grep -E "^exp_|grouped_qsx|mvq|FAIL|rror|panic" "$OUT/kbench_exp_mvqm.txt" | cut -c1-230; keep kbench_exp_mvqm.txt
fixtures_in "$M8"
grep -hE "small-batch experts" "$OUT"/verify_*.txt | cut -c1-200
synth_wait
for v in "$M8" X=1; do
  small_rows "$v" 8,32,64,128,256,512,1024,2048 6300 6200
done
echo "== profile 256, $M8"
env $M8 DS4_PROFILE=1 DS4_BENCH_INCR=256 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2400 \
  --ctx-start 2048 --ctx-max 2304 --gen-tokens 2 > /tmp/p.log 2>&1
grep -E "rror|panic" /tmp/p.log | head -3
grep -E "profile prefill ctx 2304:" /tmp/p.log | head -8
