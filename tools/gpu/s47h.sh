#!/usr/bin/env bash
# Session 47's check of the s47-hc512 branch against main in one call, `bash tools/gpu/s47h.sh`:
# decode at 2K, main's binary (.gpu/base, d5bc23a: hc_step_gs at 1024 threads under PDL) and the
# branch's with DS4_HC_BLOCK=512 (hc_step_gs512) and as built (hc_step_gs, ~main's: 24 SASS
# instructions apart after the template split), alternating; the md5 of the greedy tokens.
# Carry .gpu/{ds4-bench,ds4-gguf,kz,base}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47h
synth_wait
ab() {
  env DS4_BENCH_TOKENS=1 DS4_KERNEL_CACHE="$(kc "$1")" ${3:-X=1} timeout 60 "$1" --cuda -m "$M" --random-prompt $(($2 + 120)) --ctx-start "$2" \
    --ctx-max "$2" --gen-tokens 96 > /tmp/run.txt 2>&1
  echo "$(basename "$(dirname "$1")") ${3:-} ctx $2: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1 | sed 's/ = .*//') | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
}
for r in 1 2; do ab "$BASE_BIN" 2048; ab "$BIN" 2048 DS4_HC_BLOCK=512; ab "$BIN" 2048; done
