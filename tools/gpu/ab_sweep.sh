#!/usr/bin/env bash
# One closing device call: kernel bench KB (optional), fixtures, this binary at AB_CTXS (default
# 8K and 64K) with and without the switch AB (e.g. AB=DS4_IDX_W=0), or against the base binary
# (AB=base: .gpu/base from tools/gpu/base.sh), two alternating pairs each, then the 2K..64K
# sweep under whichever decoded faster in sum -> $OUT/h200_q2.csv, and CUPTI kernel traces of
# the decode graph at 8K and 64K (when .gpu/cupti is carried) -> $OUT/cupti_{8k,64k}.csv.gz.
# SWEEP=0 skips the sweep. Carry .gpu/{ds4-bench,ds4-gguf,fix.tgz,kz} (+ .gpu/cupti or .gpu/base).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
for kb in ${KB:-}; do
  echo "== kbench $kb"
  DS4_KBENCH=$kb timeout 200 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_$kb.txt" | grep -vE "^\s*$" | tail -${KBLINES:-8}
done
fixtures_in X=1 DS4_IDX_DTC_MIN=0
synth_wait
AB=${AB:-X=1}
tps() { grep -oE "decode [0-9.]+" | awk '{print $2}'; }
# run_b CTX: the B side (the switch, or the base binary with its kernel cache)
run_b() {
  if [ "$AB" = base ]; then
    BIN=.gpu/base/ds4-bench decode_at "DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache" "$1" 48
  else
    decode_at "$AB" "$1" 48
  fi
}
sa=0; sb=0
for i in 1 2; do
  for ctx in ${AB_CTXS:-8192 65536}; do
    a=$(decode_at X=1 $ctx 48 | tee /dev/stderr | tps); b=$(run_b $ctx | tee /dev/stderr | tps)
    sa=$(awk -v x="$sa" -v y="${a:-0}" 'BEGIN{print x + y}'); sb=$(awk -v x="$sb" -v y="${b:-0}" 'BEGIN{print x + y}')
  done
done 2>&1
echo "sum of decode t/s: default $sa, $AB $sb"
SW=X=1
if awk -v a="$sa" -v b="$sb" 'BEGIN{exit !(b > a)}'; then SW=$AB; fi
SB=$BIN
if [ "$SW" = base ]; then SW="DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache"; SB=.gpu/base/ds4-bench; fi
if [ "${SWEEP:-1}" = 1 ]; then
echo "== sweep ($SW $SB)"
env $SW timeout 150 "$SB" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 32 \
  --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tee "$OUT/sweep.log"
fi
[ -d .gpu/cupti ] && for ctx in 8192 65536; do
  env $SW BIN=$SB bash -c ". tools/gpu/env.sh >/dev/null; export DS4_KERNEL_CACHE=$DS4_KERNEL_CACHE; cupti_decode $ctx" && mv "$OUT/cupti_kern.csv.gz" "$OUT/cupti_$((ctx / 1024))k.csv.gz"
done
ls "$OUT"
