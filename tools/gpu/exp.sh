#!/usr/bin/env bash
# ONE device call for a change to the routed-expert prefill GEMMs (gemm_q / gemm_qr /
# gemm_qr2): the fixtures with the default kernel choice, with gemm_qr forced onto every MoE
# batch and with gemm_qr2 forced; the expert kernel bench (DS4_KBENCH=exp) at the token counts
# in KT (default "8192 2048"); and, unless NOPREFILL=1, an 8K prefill with the register-fragment
# kernels off / on. Carry .gpu/{ds4-bench,ds4-gguf,fix,kcache}; results under $OUT.
# Usage (device): bash tools/gpu/exp.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
unpack_kz
[ -n "${NOPREFILL:-}" ] || synth_start
fixtures_in "X=1" "DS4_GEMM_QR_MIN=0" "DS4_GEMM_QR=2 DS4_GEMM_QR_MIN=0"
kbench_exp ${KT:-8192 2048}
if [ -z "${NOPREFILL:-}" ]; then
  synth_wait
  for v in "DS4_GEMM_QR=0" "X=1" "DS4_GEMM_QR=0" "X=1"; do decode_at "$v" 8192 4; done
fi
