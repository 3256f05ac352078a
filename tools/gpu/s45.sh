#!/usr/bin/env bash
# Session 45's device call, `bash tools/gpu/s45.sh`: the committed sweep of the whole model with
# session 44's prefill defaults (the f16 hc state, f16 down outputs; measured on an H100's first
# 28 layers only), the 8K / 2K / 64K A/B against the base (.gpu/base, 04fe2d1: the previous
# defaults), and larger prefill batches for long prompts (DS4_CHUNK=16384 at 32K and 64K: the
# routed experts' weights are dequantized once per tile and batch, so twice the tokens per batch
# halve that work per token; the default stops at 8192).
# Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz,base}. On an 80 GB card: 28 layers, no sweep.
# S45_PART=1: the fixtures, the sweep and the 8K A/B only; S45_PART=2: the rest (calls under
# the 600 s limit).
# $OUT: log.txt, p8k.txt, the sweep's h200_q2.{csv,svg,summary.txt}, verify.txt, rest.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s45
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
if [ "${S45_PART:-1}" = 1 ]; then
fixtures; keep verify.txt
synth_wait
sweep_whole
pb "$BASE_BIN" X=1; pb "$BIN" X=1; pb "$BASE_BIN" X=1; pb "$BIN" X=1
keep p8k.txt
fi
# S45_PART=1 stops here, =2 starts here (a second call on the warm machine: the model is kept)
[ "${S45_PART:-}" = 1 ] && exit 0
synth_wait
for c in 2048 65536; do
  DS4_KERNEL_CACHE="$(kc "$BASE_BIN")" BIN=$BASE_BIN prompt_ab X=1 $c | sed 's/^/base /'
  prompt_ab X=1 $c | sed 's/^/new /'
  grep "KV payload" /tmp/run.txt | tail -1
done
echo "== prefill batch 16384 against 8192"
for c in 32768 65536; do
  prompt_ab X=1 $c | sed 's/^/chunk8k /'
  prompt_ab DS4_CHUNK=16384 $c | sed 's/^/chunk16k /'
done
# the routed-expert GEMMs' cost against tokens per expert (uniform routing: 6 T / 256 per
# expert, 48 .. 384): how much of gemm_qs's time the partial tiles take (bench/NOTES.md next)
export KB_TIMEOUT=90
for t in 2048 4096 8192 16384; do kx "$BIN" $t X=1 u$t; done
tar czf "$REAL_OUT/rest.tgz" -C "$OUT" . && echo "rest.tgz written"
