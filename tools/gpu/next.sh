#!/usr/bin/env bash
# ONE device call for the changes prepared on branch next-lease (bench/NOTES.md, end of
# "Session 8"): fixtures with gemm_qr_gu on (default), off, and with gemm_qr forced onto every
# MoE batch; the expert kernel bench (grouped_qr with 9 stages, the gate_up_gu row against
# gemm_qr x2 + moe_mid); the base binary (.gpu/base, tools/gpu/base.sh main, kcache gzipped
# into .gpu/base/kz) against this one at 2K, 8K and 16K; the attention-side decode matvecs on mv2
# (DS4_MV_ATTN=mv2) against matvec_grouped at 2K. Carry .gpu/{ds4-bench,ds4-gguf,fix,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
unpack_kz
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
mkdir -p .gpu/base/kcache
for f in .gpu/base/kz/*.gz; do [ -e "$f" ] && gunzip -c "$f" > ".gpu/base/kcache/$(basename "$f" .gz)"; done
synth_start
fixtures_in "X=1" "DS4_GEMM_GU=0" "DS4_GEMM_QR_MIN=0" "DS4_MV_ATTN=mv2"
kbench_exp ${KT:-8192 2048}
synth_wait
for ctx in 2048 8192 16384; do
  for i in 1 2; do
    for b in base cur; do
      if [ $b = base ]; then B=.gpu/base/ds4-bench; K=$PWD/.gpu/base/kcache; else B=$BIN; K=$PWD/.gpu/kcache; fi
      echo "== $b $ctx"
      DS4_KERNEL_CACHE=$K timeout 90 "$B" --cuda -m "$M" --random-prompt $((ctx + 100)) --ctx-start $ctx --ctx-max $ctx --gen-tokens 24 2>&1 \
        | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -1
    done
  done
done
for i in 1 2; do
  for v in "X=1" "DS4_MV_ATTN=mv2"; do decode_at "$v" 2048 64; done
done
