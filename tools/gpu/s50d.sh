#!/usr/bin/env bash
# Session 50's prepared call (not run in session 50: its device time ran out), `bash
# tools/gpu/s50d.sh`: the final build's defaults (decode steps up to 3 tokens, gq_ks, moe_small
# up to 64 tokens, token-major) through the fixtures (with the new "fast small-batch experts
# deviation" check), then moe_small's slots grouped by expert (DS4_MOE_SMALL_GRP=1) through
# the fixtures, then small batches at 2K: the defaults, grouped at the default bound, grouped
# up to 256 tokens, token-major up to 256.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s50d
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1 DS4_MOE_SMALL_GRP=1
grep -hE "small-batch experts" "$OUT"/verify_*.txt | cut -c1-200
synth_wait
for v in X=1 DS4_MOE_SMALL_GRP=1 "DS4_MOE_SMALL_GRP=1 DS4_MOE_SMALL=256" DS4_MOE_SMALL=256; do
  small_rows "$v" 1,2,4,8,16,32,64,128,256,512 3300 3200
done
