#!/usr/bin/env bash
# ONE device call: fixtures, int8 kbench at the attention-side shapes, decode A/B of a switch
# (AB="VAR=value ..." list, default DS4_HC_STEP=0), warm ncu per-kernel decode profile.
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
grep -E "FAIL|passed|failed" "$OUT/verify.txt" | tail -12; tail -3 /tmp/verify.err
for k in ${KB:-q8}; do DS4_KBENCH=$k timeout 120 "$BIN" --kernel-bench > "$OUT/kbench_$k.txt" 2>&1; echo "kbench $k rc=$?"; done
wait $SYN; tail -1 /tmp/synth.log
run() { echo "== $1"; env $1 timeout 60 "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 \
    --gen-tokens 64 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic" | tail -1; }
run "DS4_NONE=1"
for v in ${AB:-DS4_HC_STEP=0}; do run "$v"; done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 200 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-count 4000 --csv \
    --log-file /tmp/ncu.csv "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > /tmp/ncu_run.txt 2>&1
echo "ncu rc=$?"; gzip -c /tmp/ncu.csv > "$OUT/ncu.csv.gz"
ls -la "$OUT"
