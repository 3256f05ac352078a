#!/usr/bin/env bash
# Session 42's device call, `bash tools/gpu/s42.sh`: s40.sh's call 1 reordered for a short
# budget (every result is in $OUT as it comes; the most decisive first). Carry
# .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz} and .gpu/base (main at 04fe2d1 with its kz).
# 1. fixtures under the switch sets (correctness of the f16 forms on the small models);
# 2. kbench hcp (bit-for-bit rows of every new hc_s16 / exp_y16 entry point);
# 3. 8K prompts, base and new alternating: X=1 (the method check: same machine code, same
#    tokens), all three switches, then each alone; md5 of the greedy tokens;
# 4. kbench exp at 8K skewed and at 2K uniform, with the three-way split.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
ALL="DS4_HC_S16=1 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"
QR="DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"  # the gemm_qr forms on the small models
export KB_TIMEOUT=90
if [ -n "${SHORT:-}" ]; then
  # SHORT=1 (a call of ~4 minutes): one fixture run and the landing A/B first
  fixtures_in "$ALL"
  synth_wait
  pb "$BASE_BIN" X=1; pb "$BIN" "$ALL"; pb "$BIN" X=1; pb "$BIN" "$ALL"; pb "$BASE_BIN" X=1
  kbench_hcp
  fixtures_in "$QR"
  pb "$BIN" "DS4_HC_S16=1 DS4_EXP_Y16=1"; pb "$BIN" DS4_QS_SPLIT=3
  exit 0
fi
fixtures_in "$ALL" "$QR"
kbench_hcp
synth_wait
pb "$BASE_BIN" X=1; pb "$BIN" X=1; pb "$BIN" "$ALL"; pb "$BIN" "DS4_HC_S16=1 DS4_EXP_Y16=1"
pb "$BASE_BIN" X=1; pb "$BIN" "$ALL"; pb "$BIN" X=1
pb "$BIN" DS4_HC_S16=1; pb "$BIN" DS4_EXP_Y16=1; pb "$BIN" DS4_QS_SPLIT=3
kx "$BIN" 8192 "DS4_KBENCH_SKEW=1 DS4_QS_SPLIT=3" skew3
pb "$BIN" "$ALL"; pb "$BASE_BIN" X=1
kx "$BIN" 2048 DS4_QS_SPLIT=3 uni3
