#!/usr/bin/env bash
# Session 56: the fused gate + up (interleaved rows, moe_mid_gu_fast's silu) on the Q4_K variant
# (gate / up / down Q4_K): a synthetic q4 model of the first 16 layers (~65 GB: the 43 layers'
# ~160 GB fit no card), 8K prompts under the defaults, DS4_GU_FUSE=1 and =2, twice; then the
# fixtures with DS4_GU_FUSE=2 forced onto every MoE batch. Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start_q4 s56f 16
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1 DS4_GU_FUSE=2; do prompt_ab "$v" 8192; done
done
fixtures_in "DS4_GU_FUSE=2 DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
verify_summary
