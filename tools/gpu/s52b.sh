#!/usr/bin/env bash
# Session 52's prepared call, not run (the session's device time ran out in refused starts),
# `bash tools/gpu/s52b.sh` (~3 min on an H100): mvqs (mvqm through
# cp.async shared-memory stages) in the routed-expert kernel bench at 64, 256 and 1024 tokens
# (bits against mvqm); the new defaults (moe_small up to 256 tokens, mvqm from 16) through
# every fixture (with the new "(prefix)" rows: a longer sequence's first 256 tokens in one
# batch), and mvqs up to 2048 tokens through them; then single batches of 8-2048 tokens at 2K
# under the new defaults, session 50's (token-major up to 64 tokens, the grouped GEMM beyond)
# and mvqs. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s52b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
S="DS4_MOE_SMALL_GRP=s DS4_MOE_SMALL=2048"
kx "$BIN" 64,256,1024 X=1 mvqs > /dev/null
grep -E "^exp_|grouped_qsx| mvq[ms] |FAIL|rror|panic" "$OUT/kbench_exp_mvqs.txt" | cut -c1-100,130-260; keep kbench_exp_mvqs.txt
fixtures_in X=1 "$S"
grep -hE "small-batch experts" "$OUT"/verify_*.txt | cut -c1-200; keep verify_X-1.txt
synth_wait
for v in X=1 "DS4_MOE_SMALL=64 DS4_MOE_MMA_MIN=100000" "$S"; do
  small_rows "$v" 8,16,32,64,128,256,512,1024,2048 6300 6200
done
