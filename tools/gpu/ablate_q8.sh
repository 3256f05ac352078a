#!/usr/bin/env bash
# ONE device call: in-graph costs of the decode matvec launches by ablation (DS4_SKIP_KERNELS:
# the token time without those kernels; outputs of such runs are meaningless, only the speed
# is read), for the int8 attention side (DS4_DECODE_Q8_ATTN) and the f32 one. 2K context.
# Carry .gpu/{ds4-bench,ds4-gguf,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
synth_wait
for v in "X=1" "DS4_SKIP_KERNELS=mvq_b2" "DS4_SKIP_KERNELS=quant_q8" "DS4_SKIP_KERNELS=matvec_grouped" "DS4_SKIP_KERNELS=mvq_b3" \
         "DS4_DECODE_Q8_ATTN=0" "DS4_DECODE_Q8_ATTN=0 DS4_SKIP_KERNELS=matvec_grouped" "X=1"; do
  decode_at "$v" 2048 48
done
echo "== base"
DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache BIN=.gpu/base/ds4-bench decode_at "X=1" 2048 48
DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache BIN=.gpu/base/ds4-bench decode_at "DS4_SKIP_KERNELS=quant_q8" 2048 48
