#!/usr/bin/env bash
# ONE device call: the decode matvec sweep (kernel bench, DS4_KBENCH=mv) and graph-mode decode
# timing ablations at full size (DS4_SKIP_KERNELS: what the rest costs without those kernels;
# outputs of such runs are meaningless, only their speed is read). Usage (device): bash tools/gpu/ablate.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
CTX=${CTX:-2048}; GEN=${GEN:-64}
synth_start
DS4_KBENCH=mv timeout 200 "$BIN" --kernel-bench > "$OUT/kbench_mv.txt" 2>&1; echo "kbench rc=$?"; cat "$OUT/kbench_mv.txt"
${EXTRA_BEFORE:-true}
synth_wait
MV="matvec_grouped,moe_down_fused,mv2,mv2_b2,mv2_b3,mv2_b4,mvq_b2,mvq_b3,quant_q8"
HC="hc_post_mix,hc_finish,hc_step"
ATT="attn_prep,attn_partial,attn_combine,attn_dec"
CMP="comp_emit,comp_state,idx_q_prep,idx_score,topk_select"
MOE="moe_route,moe_route_w"
run() { echo "== $1"; env $2 timeout 120 "$BIN" --cuda -m "$M" --random-prompt $((CTX + GEN + 8)) --ctx-start "$CTX" --ctx-max "$CTX" \
    --gen-tokens "$GEN" 2>&1 | tr '\r' '\n' | grep -E "^ctx|error|panic" | tail -2; }
run "default" ""
run "pdl" "DS4_PDL=1"
run "no matvecs" "DS4_SKIP_KERNELS=$MV"
run "no hc" "DS4_SKIP_KERNELS=$HC"
run "no attention" "DS4_SKIP_KERNELS=$ATT"
run "no compressor/indexer" "DS4_SKIP_KERNELS=$CMP"
run "matvecs only" "DS4_SKIP_KERNELS=$HC,$ATT,$CMP,$MOE,embed_rows"
run "nothing (launch floor)" "DS4_SKIP_KERNELS=$MV,$HC,$ATT,$CMP,$MOE,embed_rows,argmax_excl"
