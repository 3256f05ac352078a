#!/usr/bin/env bash
# Session 49's call, `bash tools/gpu/s49.sh`: top_p < 1 sampled where the logits are (near_max
# with the vocabulary's softmax sum; sampling::nucleus_certain decides or declines). The fixture
# checks (their "session sampled run" rows now cover top_p 0.9: the device's set and sum
# against the logits read back, and a run switching sampling per token against eval + host
# sampling); then ds4-bench's decode at 2K: the device greedy loop, and sampled at T 1 with
# top_p 0.9 and 1 (min_p 0.05), each through the device's set and through the readback.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s49
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1
grep -E "sampled run" "$OUT/verify.txt" | cut -c1-600
synth_wait
for r in 1; do
  bench_sample X=1
  for tp in 0.9 1; do
    for h in 0 1; do bench_sample "DS4_BENCH_SAMPLE=1 DS4_BENCH_TOP_P=$tp DS4_BENCH_SAMPLE_HOST=$h"; done
  done
done
