#!/usr/bin/env bash
# Session 53's second call (~1.5 min): the fixtures under the final defaults (mvqs from 16 tokens,
# dense_small up to 32 tokens, cuBLAS ahead of dense_small where a session's cuBLAS path takes
# the batch). Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt, the verify report.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
REAL_OUT=$OUT; export OUT=/tmp/s53b-out; mkdir -p $OUT
exec > >(tee -a "$REAL_OUT/log.txt") 2>&1
setup_caches
fixtures_in X=1
grep -hE "small-batch|cuBLAS deviation" "$OUT"/verify_*.txt | cut -c1-220
cp $OUT/verify_X-1.txt $REAL_OUT/
