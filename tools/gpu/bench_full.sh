#!/usr/bin/env bash
# Full-size benchmark on the GPU machine: synthesize the published q2 shapes with
# `ds4-gguf synth --preset full --quant q2` into /dev/shm (tmpfs enlarged to hold 81 GiB), then
# ds4-bench from CTX_START to CTX_MAX. Usage (device): bash tools/gpu/bench_full.sh [extra bench args]
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
CTX_START=${CTX_START:-2048}; CTX_MAX=${CTX_MAX:-65536}; STEP=${STEP:-2048}; GEN=${GEN:-128}
M=/dev/shm/q2.gguf
mount -o remount,size=120G /dev/shm 2>/dev/null || true
df -h /dev/shm | tail -1; free -g | head -2
if [ ! -s "$M" ]; then
  t0=$(date +%s)
  timeout ${SYNTH_TIMEOUT:-300} "$GGUF_BIN" synth --preset full --quant q2 --seed 1 --out "$M" 2>&1 | tr '\r' '\n' | tail -3
  echo "synth: $(( $(date +%s) - t0 )) s, $(stat -c %s "$M" 2>/dev/null) bytes"
fi
timeout ${BENCH_TIMEOUT:-400} "$BIN" --cuda -m "$M" --random-prompt "$CTX_MAX" --ctx-start "$CTX_START" --ctx-max "$CTX_MAX" \
  --step-incr "$STEP" --gen-tokens "$GEN" --csv "$OUT/h200_q2.csv" "$@" 2>&1 | tr '\r' '\n' | grep -v "uploading weights \[" | tail -60
