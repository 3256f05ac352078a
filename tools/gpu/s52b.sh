#!/usr/bin/env bash
# Session 52's second call, `bash tools/gpu/s52b.sh` (~3 min on an H100): the new defaults
# (moe_small up to 256 tokens, mvqm from 16) through every fixture (the new "(prefix)" rows:
# a longer sequence's first 256 tokens in one batch), then single batches of 8-512 tokens at
# 2K under them, under session 50's defaults (token-major up to 64 tokens, the grouped GEMM
# beyond) and with mvqm up to 512. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s52b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures
grep -hE "small-batch experts" "$OUT/verify.txt" | cut -c1-200; keep verify.txt
synth_wait
for v in X=1 "DS4_MOE_SMALL=64 DS4_MOE_MMA_MIN=100000" "DS4_MOE_SMALL=512"; do
  small_rows "$v" 8,16,24,32,64,128,256,384,512
done
