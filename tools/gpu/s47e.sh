#!/usr/bin/env bash
# Session 47's H200 call, `bash tools/gpu/s47e.sh`: the committed sweep of the whole model under
# this session's defaults (hc_step_gs and quant_q8 under programmatic dependent launch), and
# ds4-bench's decode at 2K: device greedy loop, sampled T 1 with the readback and with the
# device's min_p set (the bench part of session 46's s46c.sh). s47d.sh without its smoke test,
# which ran on an H100 (bench/s47/s47_call4.txt).
# Carry .gpu/{ds4-bench,ds4-gguf,kz}. $OUT: log.txt + the sweep's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47e
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
sweep_whole
bench_sample() {
  env $1 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2128 --ctx-start 2048 --ctx-max 2048 --gen-tokens 128 2>&1 \
    | tr '\r' '\n' | grep -E "^ctx [0-9]+: (sampled|prefill)|rror|panic" | sed "s/^/[$1] /" | tail -2
}
bench_sample X=1
for h in 1 0; do bench_sample "DS4_BENCH_SAMPLE=1 DS4_BENCH_SAMPLE_HOST=$h"; done
