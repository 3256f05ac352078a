#!/usr/bin/env bash
# The session's closing device call: fixtures (deferred Sinkhorn on and off), kbench hc, the
# base binary (.gpu/base) against this one at 2K and 8K, DS4_HC_SK=0 at 8K, the in-graph
# ablation table at 8K (DS4_SKIP_KERNELS, one kernel family at a time), and the context sweep
# -> $OUT/h200_q2.{csv,svg,summary.txt}. Carry .gpu/{ds4-bench,ds4-gguf,fix,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
export FIXMODES=${FIXMODES:-"X=1 DS4_HC_SK=0"} KB=${KB:-hc} KBLINES=${KBLINES:-12} CTXS=${CTXS:-"2048 8192"}
export EXTRA=${EXTRA:-DS4_HC_SK=0} EXTRA_CTXS=${EXTRA_CTXS:-8192}
bash tools/gpu/next.sh
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
echo "== ablation at 8K (ms per token saved = 1000/t_skip - 1000/t_full)"
decode_at "X=1" 8192 32
for k in ${ABLATE:-hc_step router_dec attn_prep mvq_b2 mvq_b3 matvec_grouped attn_dec comp_emit,comp_state idx_q_prep,idx_score,topk_select quant_q8}; do
  decode_at "DS4_SKIP_KERNELS=$k" 8192 32
done
echo "== sweep"
timeout 120 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 32 \
  --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic"
ls "$OUT"
