#!/usr/bin/env bash
# Session 59, the committed sweep (H200 only: the whole model) under this session's defaults
# (hc_post's tokens per block by the batch), then one 8K prompt for the record.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s59d
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
sweep_whole
prompt_ab X=1 8192
