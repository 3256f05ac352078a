#!/usr/bin/env bash
# ONE device call for branch next-lease (bench/NOTES.md, end of "Session 9"): fixtures (the
# Reference decode checks cover matvec_grouped_w's rows), the bit-identity checks (kbench q8o:
# matvec_grouped_w vs matvec_grouped; kbench dec: router_dec vs matvec_grouped + moe_route_w),
# the mvq sweep with mvq_b3c and mvq_b3r (kbench q8), then main (.gpu/base) against this binary in the
# decode graph at 2K and 8K and this binary with each new piece off.
# Prepare: git checkout next-lease && BASE=main bash tools/gpu/prep.sh
# Carry .gpu/{ds4-bench,ds4-gguf,fix,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
fixtures_in "X=1" "DS4_MVG_WIDE=0"
for kb in q8o dec hc q8; do
  echo "== kbench $kb"
  DS4_KBENCH=$kb timeout 150 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_$kb.txt" \
    | grep -E "ok  |FAIL|router|dh512 r4 p=4095|^hc D|trace us|^gate|^down|sweep (gate|down)|rror|panic" | cut -c1-220 | head -40
done
synth_wait
for ctx in 2048 8192; do
  for i in 1 2; do
    echo "== base"; DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache BIN=.gpu/base/ds4-bench decode_at "X=1" $ctx 32
    decode_at "X=1" $ctx 32
  done
done
for v in "DS4_IQ2_GRID=g4" "DS4_IQ2_GRID=r16" "DS4_MVG_WIDE=0" "DS4_IQ2_GRID=g4" "DS4_IQ2_GRID=r16" "DS4_MVG_WIDE=0"; do decode_at "$v" 8192 32; done
for k in router_dec matvec_grouped_w; do decode_at "DS4_SKIP_KERNELS=$k" 8192 32; done
