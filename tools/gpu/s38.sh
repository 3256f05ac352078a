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
run() {
  DS4_BENCH_TOKENS=1 env $1 timeout 150 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start "$2" \
    --ctx-max "$2" --gen-tokens 16 > /tmp/run.txt 2>&1
  echo "[$1] ctx $2: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1) | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
for i in 1 2; do run X=1 8192; run DS4_LOW16=0 8192; done
timeout 400 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 \
  --gen-tokens 64 --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|TB/s|rror|panic" | tail -14
[ -n "${NO_TRACE:-}" ] || cupti_decode 8192
