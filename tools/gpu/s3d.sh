#!/usr/bin/env bash
# ONE device call: fixtures, decode-kernel bench (attn_dec / moe_route_w vs old), decode A/B at
# 2K, prefill 8K with cuBLAS experts (1 vs 4 streams), warm per-kernel decode timing.
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
DS4_KBENCH=dec timeout 100 "$BIN" --kernel-bench > "$OUT/kbench_dec.txt" 2>&1; echo "kbench dec rc=$?"
wait $SYN; tail -1 /tmp/synth.log
run() { echo "== $1 ctx $2"; env $1 timeout 90 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start $2 --ctx-max $2 \
    --gen-tokens ${3:-64} 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic|fall" | tail -2; }
run "DS4_NONE=1" 2048
run "DS4_ATTN_DEC=old" 2048
run "DS4_ROUTE=old" 2048
run "DS4_MVQ_PERSIST=1" 2048
run "DS4_GEMM_EXP=cublas DS4_GEMM_EXP_STREAMS=1" 8192 16
run "DS4_GEMM_EXP=cublas" 8192 16
run "DS4_NONE=1" 8192 16
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 150 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-count 4000 --csv \
    --log-file /tmp/ncu.csv "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > /tmp/ncu_run.txt 2>&1
echo "ncu rc=$?"; gzip -c /tmp/ncu.csv > "$OUT/ncu.csv.gz"
ls -la "$OUT"
