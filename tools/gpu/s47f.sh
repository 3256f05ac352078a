#!/usr/bin/env bash
# Session 47's trace call, `bash tools/gpu/s47f.sh`: CUPTI traces of 2K decode (the graph's
# kernels, 32 tokens) with this session's defaults and with DS4_HC_PDL=0 DS4_PDL_K= (session
# 46's launches), for the per-kernel in-graph times under PDL (read with tools/gpu/nsys_gaps.py).
# Carry .gpu/{ds4-bench,ds4-gguf,kz,cupti}. $OUT: log.txt, cupti_pdl.csv.gz, cupti_nopdl.csv.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47f
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
cupti_decode 2048 && cp "$OUT/cupti_kern.csv.gz" "$REAL_OUT/cupti_pdl.csv.gz"
( export DS4_HC_PDL=0 DS4_PDL_K=; cupti_decode 2048 ) && cp "$OUT/cupti_kern.csv.gz" "$REAL_OUT/cupti_nopdl.csv.gz"
