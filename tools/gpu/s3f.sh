#!/usr/bin/env bash
# ONE device call (the session's last): fixtures, decode at 2K with the switches of this
# session off (HC_STEP, ATTN_DEC), and the 2K..64K sweep (CSV + SVG + summary).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
M=/dev/shm/q2.gguf
mount -o remount,size=120G /dev/shm 2>/dev/null || true
( timeout 200 "$GGUF_BIN" synth --preset full --quant q2 --seed 1 --out "$M" >/tmp/synth.log 2>&1 ) &
SYN=$!
echo "== fixtures"
timeout 240 "$BIN" --verify-fixtures .gpu/fix 2>/tmp/verify.err > "$OUT/verify.txt"; echo "verify rc=$?"
grep -E "FAIL|passed|failed" "$OUT/verify.txt" | tail -12; tail -2 /tmp/verify.err
wait $SYN; tail -1 /tmp/synth.log
run() { echo "== $1 ctx $2"; env $1 timeout 90 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start $2 --ctx-max $2 \
    --gen-tokens ${3:-64} 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic|fall" | tail -2; }
run "DS4_HC_STEP=0 DS4_ATTN_DEC=old DS4_ROUTE=old" 2048
echo "== sweep"
timeout 120 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 64 \
    --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -9
ls -la "$OUT"
