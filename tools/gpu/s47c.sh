#!/usr/bin/env bash
# Session 47's third call, `bash tools/gpu/s47c.sh`: programmatic dependent launch for single
# latency-bound decode kernels (DS4_PDL_K=name,...: each waits at its entry, so only its
# launch and block scheduling move under the predecessor's tail), hc_step_gs's PDL (on by
# default since call 2) kept; also the two int8 matvec entry points (every launch of each).
# Fixtures with the four small ones; decode at 2K and 8K, two rounds, the
# md5 of the greedy tokens (all equal expected).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
ALL=attn_prep,quant_q8,router_dec,attn_dec
fixtures_in "DS4_PDL_K=$ALL"
synth_wait
for r in 1 2; do
  for c in 2048 8192; do
    decode_md5 "$BIN" $c; for k in attn_prep quant_q8 router_dec attn_dec $ALL mvq_b3 mvq_b2; do decode_md5 "$BIN" $c DS4_PDL_K=$k; done
    decode_md5 "$BIN" $c DS4_HC_PDL=0
  done
done
