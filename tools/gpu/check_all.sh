#!/usr/bin/env bash
# ONE device call: fixtures (verify-fixtures), kernel benches of the new paths, decode/prefill
# variants and the full-size benchmark 2K..64K (bench/h200_q2.csv + .svg).
# Usage (device): bash tools/gpu/check_all.sh   (SKIP_FULL=1: no full sweep)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
synth_start
timeout 300 "$BIN" --verify-fixtures "${FIX:-.gpu/fix}" > "$OUT/verify.txt" 2>"$OUT/verify.err"; echo "verify rc=$?"
grep -E "FAIL|passed|fast-vs-reference decode" "$OUT/verify.txt" | head -30
for k in ${KBENCH:-q8 idx gemm}; do
  DS4_KBENCH=$k DS4_KBENCH_T=${KBENCH_T:-8192} timeout 240 "$BIN" --kernel-bench > "$OUT/kbench_$k.txt" 2>&1; echo "kbench $k rc=$?"
done
synth_wait
run() { echo "== $1"; env $2 timeout 150 "$BIN" --cuda -m "$M" --random-prompt $(($3 + 72)) --ctx-start "$3" --ctx-max "$3" \
    --gen-tokens 64 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic|Error" | tail -2; }
IFS=';' read -ra VS <<< "${VARIANTS:-default@2048;DS4_DECODE_Q8=0@2048;default@8192;DS4_GEMM_DEQ=f32@8192;DS4_IDX=simt@32768;default@32768}"
for v in "${VS[@]}"; do e=${v%@*}; c=${v#*@}; [ "$e" = default ] && e=""; run "${v}" "$e" "$c"; done
if [ "${SKIP_FULL:-0}" != 1 ]; then
  echo "== full sweep 2K..64K"
  timeout 400 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 4096 --gen-tokens 128 \
    --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic|weights|ceiling" | tail -24
  ls "$OUT"
fi
