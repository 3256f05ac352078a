#!/usr/bin/env bash
# Session 56's check of the new default (the fused gate + up staged for Q4_K gate / up): the q4
# model's first 16 layers, 8K prompts under the defaults and DS4_GU_FUSE=0, twice (the defaults'
# tokens expected equal to s56f's DS4_GU_FUSE=2 run), then the fixtures under the defaults.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start_q4 s56g 16
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=0; do prompt_ab "$v" 8192; done
done
fixtures_in X=1
verify_summary
