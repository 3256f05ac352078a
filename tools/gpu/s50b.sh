#!/usr/bin/env bash
# Session 50's second call, `bash tools/gpu/s50b.sh`: the fixtures under the defaults (device
# top_p / top_k sets on; prefill batches of up to 12 tokens as decode steps, with the new
# "the last K as decode steps" rows), then what prefill batches of 1 .. 512 tokens cost at 2K
# (ds4-bench DS4_BENCH_INCR: one frontier per batch size) with none run as decode steps
# (DS4_STEP_BATCH=0), the default (12) and all up to 32; then none as steps with the dense
# projections on cuBLAS from 1 token (DS4_GEMM_DENSE_MIN_T=1; default 128), and the routed
# experts too (DS4_GEMM_EXP=cublas, from 1 token). The fixtures also run with DS4_GQ_KS=1
# (gemm_q64 / gemm_q128 split over K where a launch's tiles leave SMs idle: every short
# sequence's prefill takes it), and the small batches with it.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s50b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1 DS4_GQ_KS=1
grep -E "decode steps" "$(verify_file X=1)" | cut -c1-200
synth_wait
for v in DS4_STEP_BATCH=0 "DS4_STEP_BATCH=0 DS4_GQ_KS=1" "DS4_STEP_BATCH=0 DS4_GEMM_DENSE_MIN_T=1" X=1 DS4_STEP_BATCH=32 \
  "DS4_STEP_BATCH=0 DS4_GEMM_DENSE_MIN_T=1 DS4_GEMM_EXP=cublas DS4_GEMM_EXP_MIN_T=1"; do
  small_rows "$v" 1,1,2,2,4,8,12,16,24,32,48,64,128,256,512 4200 4096
done
