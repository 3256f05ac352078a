#!/usr/bin/env bash
# Session 57, H200 only (needs_h200: the whole q2 model): the committed sweep under the current
# defaults (the fused gate + up now on IQ2_XXS too), then 8K prompts under the defaults and
# DS4_GU_FUSE=0. Carry .gpu/{ds4-bench,ds4-gguf,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s57c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
sweep_whole
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=0; do prompt_ab "$v" 8192; done
done
