#!/usr/bin/env bash
# ONE device call: decode matvec sweep (kernel bench), decode variants (DS4_MV), prefill chunk
# variants (DS4_CHUNK), and an Nsight Compute per-kernel timing of prefill + two decode steps
# (--no-graphs; gpu__time_duration per launch -> $OUT/ncu.csv). Usage (device): bash tools/gpu/profile.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
synth_start
DS4_KBENCH=mv timeout 200 "$BIN" --kernel-bench > "$OUT/kbench_mv.txt" 2>&1; echo "kbench rc=$?"; cat "$OUT/kbench_mv.txt"
synth_wait
run() { echo "== $1"; env $2 timeout 150 "$BIN" --cuda -m "$M" --random-prompt $(($3 + 72)) --ctx-start "$3" --ctx-max "$3" \
    --gen-tokens 64 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic" | tail -2; }
run "default (DS4_MV=mix)" "" 2048
run "DS4_MV=old" "DS4_MV=old" 2048
run "DS4_MV=mv2" "DS4_MV=mv2" 2048
run "ctx 8192, chunk 2048" "" 8192
run "ctx 8192, chunk 4096" "DS4_CHUNK=4096" 8192
run "ctx 8192, chunk 8192" "DS4_CHUNK=8192" 8192
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "== ncu: $NCU"
if [ -n "$NCU" ]; then
  timeout 300 "$NCU" --clock-control none --metrics gpu__time_duration.sum --launch-count ${NCU_COUNT:-4000} --csv \
    --log-file "$OUT/ncu.csv" "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs \
    > "$OUT/ncu_run.txt" 2>&1
  echo "ncu rc=$? $(wc -l < "$OUT/ncu.csv") lines"; tail -3 "$OUT/ncu_run.txt"
fi
