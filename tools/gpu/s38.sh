#!/usr/bin/env bash
# Session 38's closing call on main (s36-low16 merged, idx_scored_rows): the fixtures, the
# low16 switch A/B at 8K (the same greedy tokens expected), the committed sweep, then one
# CUPTI trace of an 8K prompt (its prefill and 32 decode steps) for the next session's split.
# Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz,cupti} (~55 MB).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
fixtures_in X=1
synth_wait
for i in 1 2; do prompt_ab X=1 8192; prompt_ab DS4_LOW16=0 8192; done
timeout 400 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 \
  --gen-tokens 64 --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|TB/s|rror|panic" | tail -14
[ -n "${NO_TRACE:-}" ] || cupti_decode 8192
