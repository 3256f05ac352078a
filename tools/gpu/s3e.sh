#!/usr/bin/env bash
# ONE device call: fixtures, decode A/B of this session's switches at 2K, the 2K..64K sweep
# (CSV + SVG + summary), warm per-kernel decode timing.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
M=/dev/shm/q2.gguf
mount -o remount,size=120G /dev/shm 2>/dev/null || true
( timeout 200 "$GGUF_BIN" synth --preset full --quant q2 --seed 1 --out "$M" >/tmp/synth.log 2>&1 ) &
SYN=$!
echo "== fixtures"
timeout 240 "$BIN" --verify-fixtures .gpu/fix 2>/tmp/verify.err > "$OUT/verify.txt"; echo "verify rc=$?"
grep -E "FAIL|passed|failed" "$OUT/verify.txt" | tail -12; tail -3 /tmp/verify.err; grep "fast-vs-reference decode" "$OUT/verify.txt" | head -9
wait $SYN; tail -1 /tmp/synth.log
run() { echo "== $1 ctx $2"; env $1 timeout 90 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start $2 --ctx-max $2 \
    --gen-tokens ${3:-64} 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic|fall" | tail -2; }
run "DS4_NONE=1" 2048
run "DS4_DECODE_Q8_ATTN=0" 2048
run "DS4_COMP_FUSE=0" 2048
run "DS4_HC_THREADS=256" 2048
run "DS4_HC_THREADS=512" 2048
echo "== sweep"
timeout 120 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 32 \
    --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -9
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 100 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-count 4000 --csv \
    --log-file /tmp/ncu.csv "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > /tmp/ncu_run.txt 2>&1
echo "ncu rc=$?"; gzip -c /tmp/ncu.csv > "$OUT/ncu.csv.gz"
ls -la "$OUT"
