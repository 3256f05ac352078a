#!/usr/bin/env bash
# Session 50's last call, `bash tools/gpu/s50d.sh`: the final build's defaults (decode steps up
# to 3 tokens, gq_ks, moe_small up to 64): the fixtures, then one small-batch row set at 2K.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s50d
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures
synth_wait
DS4_BENCH_INCR=1,2,4,8,16,32,64,128 timeout 60 "$BIN" --cuda -m "$M" --random-prompt 2600 --ctx-start 2048 --ctx-max 2400 \
  --gen-tokens 4 --csv "$OUT/small.csv" > /tmp/b.log 2>&1
grep -E "rror|panic" /tmp/b.log | head -3
cut -d, -f1-3,5 "$OUT/small.csv" | tr '\n' ' '; echo
