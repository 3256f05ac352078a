#!/usr/bin/env bash
# One device call: fixtures (once per FIXMODES setting), kernel benches (KB="mode ...", each
# also under KBENV when set), and the base binary (.gpu/base, tools/gpu/base.sh REV) against
# this one in the decode graph at CTXS, then EXTRA settings of this binary at EXTRA_CTXS (each
# run twice), and with NSYS=CTX / CUPTI=CTX a kernel trace of the decode graph (nsys / the
# CUPTI tracer, tools/gpu/cupti_build.sh). Carry .gpu/{ds4-bench,ds4-gguf,fix,kz,base}.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
fixtures_in ${FIXMODES:-X=1}
for kb in ${KB:-}; do
  for e in X=1 ${KBENV:-}; do
    echo "== kbench $kb $e"
    env $e DS4_KBENCH=$kb timeout 200 "$BIN" --kernel-bench 2>&1 | tee -a "$OUT/kbench_$kb.txt" | grep -vE "^\s*$" | head -${KBLINES:-40}
  done
done
synth_wait
for ctx in ${CTXS:-2048 8192}; do
  for i in 1 2; do
    for b in base cur; do
      if [ $b = base ]; then B=.gpu/base/ds4-bench; K=$PWD/.gpu/base/kcache; else B=$BIN; K=$PWD/.gpu/kcache; fi
      echo "== $b $ctx"
      DS4_KERNEL_CACHE=$K env ${CUR_ENV:-X=1} timeout 90 "$B" --cuda -m "$M" --random-prompt $((ctx + 100)) --ctx-start $ctx --ctx-max $ctx --gen-tokens ${GEN:-48} 2>&1 \
        | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -1
    done
  done
done
for ctx in ${EXTRA_CTXS:-2048}; do
  for v in ${EXTRA:-}; do
    for i in 1 2; do decode_at "$v" $ctx 48; done
  done
done
# NSYS=CTX: an Nsight Systems trace of the decode graph at CTX (env.sh nsys_decode)
if [ -n "${NSYS:-}" ]; then nsys_decode "$NSYS"; fi
# CUPTI=CTX: the same with the CUPTI tracer (env.sh cupti_decode; carry .gpu/cupti too)
if [ -n "${CUPTI:-}" ]; then cupti_decode "$CUPTI"; fi
