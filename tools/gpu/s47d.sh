#!/usr/bin/env bash
# Session 47's last call, `bash tools/gpu/s47d.sh` (an H200 for the whole model): the committed
# sweep under this session's defaults (hc_step_gs and quant_q8 under programmatic dependent
# launch); ds4-bench's decode at 2K, device greedy loop and sampled (T 1) with the readback and
# with the device's min_p set (session 46's s46c.sh, its bench part); the server's GPU smoke test
# (NO_SMOKE=1: not; then carry .gpu/{ds4-bench,ds4-gguf,kz} only). The sweep runs on an H200 only.
# Carry .gpu/{ds4-bench,ds4-gguf,ds4-server,fix.txz,kz}. $OUT: log.txt + the sweep's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47d
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
if [ -z "${NO_SMOKE:-}" ]; then
  timeout 200 python3 crates/ds4-server/tests/gpu/smoke.py .gpu/ds4-server .gpu/fix/vocab-f16/model.gguf /tmp/smoke > /tmp/smoke.txt 2>&1
  grep -E '"(cached|same|rc|turn)|SMOKE|rror' /tmp/smoke.txt | tr -d ' \n'; echo
fi
synth_wait
sweep_whole
bench_sample X=1
for h in 1 0; do bench_sample "DS4_BENCH_SAMPLE=1 DS4_BENCH_SAMPLE_HOST=$h"; done
