#!/usr/bin/env bash
# ONE device call: kernel bandwidth table at the real shapes, then every fixture case on the
# GPU and GPU-vs-CPU agreement (prefill, chunked prefill, decode), determinism, payload round
# trip, fast-path deviation. Carry: .gpu/ds4-bench (stripped release binary) and .gpu/fix (a
# copy of ../shared/fixtures/model without the noise/trace files). Output format:
# tools/gpu/verify.expected. Usage (device): bash tools/gpu/verify.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
FIX=${FIX:-.gpu/fix}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader
echo "== kernel bench"
timeout 200 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench.txt"
echo "== fixtures"
timeout 300 "$BIN" --verify-fixtures "$FIX" 2>"$OUT/verify.err" | tee "$OUT/verify.txt"
rc=${PIPESTATUS[0]}
tail -5 "$OUT/verify.err"
# the decode indexer's tensor-core scores start at 3072 rows (session.rs idx_dtc_ok), beyond
# the fixtures' positions: once more with them at every size
echo "== fixtures, DS4_IDX_DTC_MIN=0"
DS4_IDX_DTC_MIN=0 timeout 300 "$BIN" --verify-fixtures "$FIX" 2>/dev/null > "$OUT/verify_dtc.txt"
rc2=$?
grep -E "FAIL|passed|failed" "$OUT/verify_dtc.txt" | tail -12
[ $rc -ne 0 ] && exit $rc
exit $rc2
