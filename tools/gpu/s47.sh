#!/usr/bin/env bash
# Session 47, `bash tools/gpu/s47.sh`: the IQ2_XXS decode matvec with fewer instructions per
# loop trip (q8.cuh: IQ2_POS held in a register instead of re-materialized before each PRMT, and
# the group's pointers computed once per group; SASS: the loop trips 10-14 % shorter, the same
# arithmetic). Fixtures; kernel bench q8's IQ2_XXS case with the base binary (.gpu/base: the
# session-46 build) and the new one; decode at 2K and 8K, base and new alternating, with the
# md5 of the greedy tokens (equal expected: no sum changes order). Then mvq_b4 (four blocks per
# SM, a 32-register load budget) for the down tables / all expert tables (DS4_MVQ_B4=down / all):
# kernel bench q8's down case (its split sweep includes mvq_b4) and decode at 2K / 8K.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,base}. $OUT: log.txt, verify.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures; keep verify.txt
kq() {
  echo "== kbench q8 $1 ($2)"
  env DS4_KERNEL_CACHE="$(kc "$1")" DS4_KBENCH=q8 DS4_KBENCH_CASE="$2" timeout 100 "$1" --kernel-bench 2>&1 | grep -E "^(gate|down|int8)|rror|panic" | head -4
}
kq "$BASE_BIN" IQ2; kq "$BIN" IQ2
DS4_KBENCH=q8 DS4_KBENCH_CASE=down timeout 100 "$BIN" --kernel-bench 2>&1 | grep -E "sweep" | cut -c1-400
synth_wait
# ab BIN CTX: CTX-token prompt, 96 greedy tokens: the t/s line and the tokens' md5
ab() {
  env DS4_BENCH_TOKENS=1 DS4_KERNEL_CACHE="$(kc "$1")" ${3:-X=1} timeout 120 "$1" --cuda -m "$M" --random-prompt $(($2 + 120)) --ctx-start "$2" \
    --ctx-max "$2" --gen-tokens 96 > /tmp/run.txt 2>&1
  echo "$(basename "$(dirname "$1")") ${3:-} ctx $2: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1) | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
for c in 2048 8192; do ab "$BASE_BIN" $c; ab "$BIN" $c; ab "$BASE_BIN" $c; ab "$BIN" $c; done
for c in 2048 8192; do for m in down all down all; do ab "$BIN" $c DS4_MVQ_B4=$m; done; done
