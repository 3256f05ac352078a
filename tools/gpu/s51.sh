#!/usr/bin/env bash
# Session 51's first call, `bash tools/gpu/s51.sh`: the fixtures under the defaults (with
# session 50's "fast small-batch experts deviation" check), with moe_small's slots grouped by
# expert (DS4_MOE_SMALL_GRP=1) and with them chunked (=n: mvqn, up to 8 pairs of one expert per
# slot) at a bound of 1024 tokens; small batches of 1-1024 tokens at 2K under each (chunked
# also with 1 row per warp: DS4_MVQN_SPLIT=1,1); then the
# batches of 1024-3072 tokens under the defaults and chunked; the per-kernel profile (DS4_PROFILE=1) of one 256-token batch under the defaults and chunked.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s51
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1 DS4_MOE_SMALL_GRP=1 "DS4_MOE_SMALL_GRP=n DS4_MOE_SMALL=1024"
grep -hE "small-batch experts" "$OUT"/verify_*.txt | cut -c1-200
synth_wait
N="DS4_MOE_SMALL_GRP=n DS4_MOE_SMALL=1024"
for v in X=1 "$N" "$N DS4_MVQN_SPLIT=1,1" "DS4_MOE_SMALL_GRP=1 DS4_MOE_SMALL=256"; do
  small_rows "$v" 1,4,8,16,32,64,128,256,512,1024 4300 4200
done
# past 1024 tokens: where the grouped GEMM overtakes the chunks
for v in X=1 "DS4_MOE_SMALL_GRP=n DS4_MOE_SMALL=4096"; do
  small_rows "$v" 1024,1536,2048,3072 9000 8800
done
for v in X=1 "DS4_MOE_SMALL_GRP=n DS4_MOE_SMALL=1024"; do
  echo "== profile 256, $v"
  env $v DS4_PROFILE=1 DS4_BENCH_INCR=256 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2400 \
    --ctx-start 2048 --ctx-max 2304 --gen-tokens 2 > /tmp/p.log 2>&1
  grep -E "rror|panic" /tmp/p.log | head -3
  grep -E "profile prefill ctx 2304:" /tmp/p.log | head -14
done
