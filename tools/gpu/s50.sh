#!/usr/bin/env bash
# Session 50's call, `bash tools/gpu/s50.sh`: session 49's check (tools/gpu/s49.sh: the fixtures
# with DS4_DEVICE_TOP=1, then ds4-bench's top_p / top_k decode through the device's sets and the
# readback, and the greedy loop), then what a speculative verifier's small batch costs: prefill
# rows of 1, 2, 4 and 8 tokens at 2K (ds4-bench frontiers 2048 + k * step; each row's
# prefill_tps is step / seconds of that batch) beside the decode rate of the same run.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s50
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in DS4_DEVICE_TOP=1
grep -E "sampled run" "$OUT/verify.txt" | cut -c1-600
synth_wait
# (most telling first: a call cut short by its time limit keeps what it printed)
for v in DS4_BENCH_TOP_P=0.9 DS4_BENCH_TOP_K=40; do
  for h in 0 1; do bench_sample "DS4_BENCH_SAMPLE=1 $v DS4_BENCH_SAMPLE_HOST=$h"; done
done
bench_sample X=1
for s in 2 4 1 8; do
  echo "== small batches of $s"
  timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max $((2048 + 6 * s)) --step-incr $s \
    --gen-tokens 16 --csv "$OUT/small_$s.csv" 2>&1 | tr '\r' '\n' | grep -E "rror|panic" | head -3
  cat "$OUT/small_$s.csv"
done
