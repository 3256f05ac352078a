#!/usr/bin/env bash
# ONE device call: fixtures, expert-GEMM kbench (cuBLAS vs grouped), decode A/B at 2K,
# prefill 8K A/B (cuBLAS experts), Nsight Compute sections of the decode kernels.
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
DS4_KBENCH=exp DS4_KBENCH_T=2048,4096,8192 timeout 150 "$BIN" --kernel-bench > "$OUT/kbench_exp.txt" 2>&1; echo "kbench exp rc=$?"
wait $SYN; tail -1 /tmp/synth.log
run() { echo "== $1 ctx $2"; env $1 timeout 90 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start $2 --ctx-max $2 \
    --gen-tokens ${3:-64} 2>&1 | tr '\r' '\n' | grep -E "^ctx|rror|panic|cuBLAS|fall" | tail -2; }
run "DS4_NONE=1" 2048
run "DS4_HC_STEP=0" 2048
run "DS4_MVQ_PERSIST=1" 2048
run "DS4_NONE=1" 8192 16
run "DS4_GEMM_EXP=q" 8192 16
run "DS4_GEMM_EXP_MIN_T=1024" 2048 16
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 150 "$NCU" --clock-control none -k regex:'^(mvq_b3|matvec_grouped|hc_step|attn_partial|moe_route)$' --launch-skip 1 --launch-count 14 \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > "$OUT/ncu_sections.txt" 2>&1
echo "ncu rc=$?"
ls -la "$OUT"
