#!/usr/bin/env bash
# Session 50's third call, `bash tools/gpu/s50c.sh`: a small prefill batch's routed experts on
# the int8 matvec (DS4_MOE_SMALL=64: batches of up to 64 tokens; off by default until this
# call). The fixtures with it (the Fast sessions' short sequences prefill their 8 tokens at
# once: their "fast-vs-reference prefill" rows show its deviation, beside the decode rows'
# deviation on the same int8 matvecs), then small batches at 2K (ds4-bench DS4_BENCH_INCR)
# with and without it.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s50c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in DS4_MOE_SMALL=64
grep -E "short fast-vs-reference|short fast-official-vs" "$OUT/verify.txt" | cut -c1-160
synth_wait
for v in X=1 DS4_MOE_SMALL=64 "DS4_MOE_SMALL=64 DS4_STEP_BATCH=0"; do
  small_rows "$v" 1,1,2,2,4,8,12,16,24,32,48,64,128,256,512 4200 4096
done
