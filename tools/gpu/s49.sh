#!/usr/bin/env bash
# Session 49's call, `bash tools/gpu/s49.sh`: top_p < 1 and top_k sampled where the logits are
# (near_max with the vocabulary's softmax sum, sampling::nucleus_certain deciding or declining;
# the k largest logits by topk_logits + topk_pairs). The fixture checks (their "session sampled
# run" rows now cover top_p 0.9 and top_k 40 / 1024 / 1: the device's sets and sum against the
# logits read back, and a run switching sampling per token against eval + host sampling); then
# ds4-bench's decode at 2K: the device greedy loop, and sampled at T 1 (min_p 0.05) with top_p
# 0.9 and with top_k 40, each through the device's set and through the readback.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s49
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in DS4_DEVICE_TOP=1
grep -E "sampled run" "$OUT/verify.txt" | cut -c1-600
synth_wait
# (most telling first: a call cut short by its time limit keeps what it printed)
for v in DS4_BENCH_TOP_P=0.9 DS4_BENCH_TOP_K=40; do
  for h in 0 1; do bench_sample "DS4_BENCH_SAMPLE=1 $v DS4_BENCH_SAMPLE_HOST=$h"; done
done
bench_sample X=1
