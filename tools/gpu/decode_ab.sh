#!/usr/bin/env bash
# ONE device call: decode/prefill A/B at full size. Starts `ds4-gguf synth --preset full --quant q2`
# into /dev/shm in the background, runs the kernel bench and the fixture verification meanwhile,
# then ds4-bench at one frontier for each variant in $VARIANTS (env assignments, ';'-separated),
# and one DS4_PROFILE run (per-kernel table, no graphs) of the default variant.
# Usage (device): bash tools/gpu/decode_ab.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
CTX=${CTX:-2048}; GEN=${GEN:-64}
VARIANTS=${VARIANTS:-"DS4_MV=old DS4_PDL=0 DS4_GEMM=old DS4_ATTN=simt;DS4_PDL=0;DS4_MV=old;DS4_GEMM=old;DS4_ATTN=simt;DS4_MV=mv2"}
synth_start
if [ "${SKIP_VERIFY:-0}" != 1 ]; then
  DS4_KBENCH_T=${KBENCH_T:-2048} timeout 200 "$BIN" --kernel-bench > "$OUT/kbench.txt" 2>&1; echo "kbench rc=$?"; cat "$OUT/kbench.txt"
  timeout 300 "$BIN" --verify-fixtures "${FIX:-.gpu/fix}" > "$OUT/verify.txt" 2>"$OUT/verify.err"; echo "verify rc=$?"
  grep -E "FAIL|passed" "$OUT/verify.txt"
fi
synth_wait
IFS=';' read -ra VS <<< "$VARIANTS"
for v in "${VS[@]}"; do
  echo "== variant: $v"
  env $v timeout 120 "$BIN" --cuda -m "$M" --random-prompt $((CTX + GEN + 8)) --ctx-start "$CTX" --ctx-max "$CTX" \
    --gen-tokens "$GEN" 2>&1 | tr '\r' '\n' | grep -E "ctx|t/s|error|Error|panic" | grep -v "uploading" | tail -4
done
if [ -n "${CTX2:-}" ]; then
  echo "== default variant at ctx $CTX2"
  timeout 150 "$BIN" --cuda -m "$M" --random-prompt $((CTX2 + GEN + 8)) --ctx-start "$CTX2" --ctx-max "$CTX2" \
    --gen-tokens "$GEN" 2>&1 | tr '\r' '\n' | grep -E "ctx|t/s|error|Error|panic" | grep -v "uploading" | tail -4
fi
if [ "${PROFILE:-1}" = 1 ]; then
  echo "== profile (DS4_PROFILE=1 --no-graphs)"
  DS4_PROFILE=1 timeout 120 "$BIN" --cuda -m "$M" --random-prompt $((CTX + 40)) --ctx-start "$CTX" --ctx-max "$CTX" \
    --gen-tokens 16 --no-graphs > "$OUT/profile.txt" 2>&1
  grep "profile decode" "$OUT/profile.txt" | head -24
fi
