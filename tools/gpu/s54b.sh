#!/usr/bin/env bash
# Session 54's second short call: the fixtures under the defaults (session 53's s53b.sh, which
# never ran) and with the routed experts' gate + up fused (DS4_GU_FUSE=1) on the grouped GEMMs
# forced onto every MoE batch of the fixture models (DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt, the verify reports (gzipped).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
REAL_OUT=$OUT; export OUT=/tmp/s54b-out; mkdir -p $OUT
exec > >(tee -a "$REAL_OUT/log.txt") 2>&1
setup_caches
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1 "DS4_GU_FUSE=1 DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
verify_summary
grep -hE "small-batch|cuBLAS deviation" "$OUT"/verify_X-1.txt | cut -c1-200
