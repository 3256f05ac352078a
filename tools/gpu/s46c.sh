#!/usr/bin/env bash
# Session 46's third call, `bash tools/gpu/s46c.sh` (an H200 for the whole model): sampled
# decoding through ds4-server (seeded requests, T 1 and T 0, the min_p set / argmax on the
# device against DS4_HOST_SAMPLE=1's per-token readback, the same text) and ds4-bench's decode
# at 2K (device greedy loop; sampled T 1 with the readback, then with the device's set).
# Carry .gpu/{ds4-bench,ds4-gguf,ds4-server,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s46c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
timeout 240 python3 tools/gpu/sample_ab.py .gpu/ds4-server "$M" /tmp/sab 1.0 0 2>&1 | tail -3
bench_sample X=1
for h in 1 0; do bench_sample "DS4_BENCH_SAMPLE=1 DS4_BENCH_SAMPLE_HOST=$h"; done
