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
# ab CTX [ENV]: CTX-token prompt, 96 greedy tokens: the t/s line and the tokens' md5
ab() {
  env DS4_BENCH_TOKENS=1 ${2:-X=1} timeout 120 "$BIN" --cuda -m "$M" --random-prompt $(($1 + 120)) --ctx-start "$1" \
    --ctx-max "$1" --gen-tokens 96 > /tmp/run.txt 2>&1
  echo "${2:-default} ctx $1: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1 | sed 's/ = .*//') | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
for r in 1 2; do
  for c in 2048 8192; do
    ab $c; for k in attn_prep quant_q8 router_dec attn_dec $ALL mvq_b3 mvq_b2; do ab $c DS4_PDL_K=$k; done
    ab $c DS4_HC_PDL=0
  done
done
