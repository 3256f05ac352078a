#!/usr/bin/env bash
# ONE device call: fixtures (incl. the one-flip provenance), decode timing and graph ablations
# at 2K, and a per-kernel timing of decode inside the CUDA graph (nsys node trace when present,
# else ncu with warm caches). Carry .gpu/{ds4-bench,ds4-gguf,fix,kcache}.
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
grep -E "FAIL|passed|failed|explain" "$OUT/verify.txt" | tail -12; tail -3 /tmp/verify.err
wait $SYN; tail -1 /tmp/synth.log
MV="matvec_grouped,moe_down_fused,mv2,mv2_b2,mv2_b3,mv2_b4,mvq_b2,mvq_b3,quant_q8"
HC="hc_post_mix,hc_finish"
ATT="attn_prep,attn_partial,attn_combine"
CMP="comp_emit,comp_state,idx_q_prep,idx_score,topk_select"
run() { echo "== $1"; env $2 timeout 60 "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 \
    --gen-tokens 64 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic" | tail -1; }
run "default" ""
run "no matvecs" "DS4_SKIP_KERNELS=$MV"
run "no hc" "DS4_SKIP_KERNELS=$HC"
run "no attention" "DS4_SKIP_KERNELS=$ATT"
run "no compressor/indexer" "DS4_SKIP_KERNELS=$CMP"
run "no route" "DS4_SKIP_KERNELS=moe_route"
run "matvecs only" "DS4_SKIP_KERNELS=$HC,$ATT,$CMP,moe_route,embed_rows"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda*/bin/nsys 2>/dev/null | head -1)
echo "== nsys: $NSYS"
if [ -n "$NSYS" ]; then
  timeout 150 "$NSYS" profile -t cuda --cuda-graph-trace=node -o /tmp/p -f true "$BIN" --cuda -m "$M" --random-prompt 2100 --ctx-start 2048 --ctx-max 2048 --gen-tokens 16 > /tmp/nsys_run.txt 2>&1
  echo "nsys rc=$?"; tail -3 /tmp/nsys_run.txt
  timeout 100 "$NSYS" stats --report cuda_gpu_trace --format csv -o /tmp/trace /tmp/p.nsys-rep > /dev/null 2>&1
  ls /tmp/trace* ; f=$(ls /tmp/trace*.csv | head -1); gzip -c "$f" > "$OUT/nsys_trace.csv.gz"
fi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "== ncu: $NCU"
if [ -n "$NCU" ] && [ ! -s "$OUT/nsys_trace.csv.gz" ]; then
  timeout 200 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-count 4000 --csv \
    --log-file /tmp/ncu.csv "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > /tmp/ncu_run.txt 2>&1
  echo "ncu rc=$?"; tail -2 /tmp/ncu_run.txt; gzip -c /tmp/ncu.csv > "$OUT/ncu.csv.gz"
fi
ls -la "$OUT"
