#!/usr/bin/env bash
# Session 46, `bash tools/gpu/s46.sh`: sampling where the logits are (Session::decode_run:
# CudaSession::near_max gathers the min_p set on the device, ~8 KB back per token instead of the
# 517 KB of logits). The fixtures with the new "session sampled run" check; ds4-server on the
# synthetic model, seeded requests with and without DS4_HOST_SAMPLE=1 (same text, rates); then
# ds4-bench's decode at 2K sampled both ways at several temperatures (the random model's logits
# are flat: at T 1 the set passes the cap and the host path is taken; lower T gives a trained
# model's few-token sets) against its device-side greedy loop.
# The server's GPU smoke test (tests/gpu/smoke.py) on the vocab-f16 fixture.
# Carry .gpu/{ds4-bench,ds4-gguf,ds4-server,fix.tgz,kz}. $OUT: log.txt, verify.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s46
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures; keep verify.txt
grep -E "session (greedy|sampled) run" "$OUT/verify.txt" | cut -c1-400
# the server's GPU smoke test (its decode loop now runs through decode_run: checkpoints, evict,
# restart) on a fixture model, CUDA and --cpu
timeout 240 python3 crates/ds4-server/tests/gpu/smoke.py .gpu/ds4-server .gpu/fix/vocab-f16/model.gguf /tmp/smoke > /tmp/smoke.txt 2>&1
grep -E '"(cached|same|rc|turn)|SMOKE|rror' /tmp/smoke.txt | tr -d ' \n'; echo
synth_wait
timeout 200 python3 tools/gpu/sample_ab.py .gpu/ds4-server "$M" /tmp/sab 1.0 0.1 0.02 0 2>&1 | tail -6
bench_sample X=1
for T in 1 0.1 0.02; do
  for h in 1 0; do bench_sample "DS4_BENCH_SAMPLE=$T DS4_BENCH_SAMPLE_HOST=$h"; done
done
