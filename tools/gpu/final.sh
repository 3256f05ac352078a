#!/usr/bin/env bash
# The session's closing device call: the int8 checks (kbench q8o), fixtures, the base binary
# (.gpu/base) against this one at 2K and 8K, this one without the int8 attention side, and the
# context sweep -> $OUT/h200_q2.{csv,svg,summary.txt}. Carry .gpu/{ds4-bench,ds4-gguf,fix,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
export KB=q8o CTXS="2048 8192" EXTRA="DS4_DECODE_Q8_ATTN=0"
bash tools/gpu/next.sh
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
echo "== sweep"
timeout 120 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 32 \
  --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic"
ls "$OUT"
