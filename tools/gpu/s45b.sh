#!/usr/bin/env bash
# Session 45's second call, `bash tools/gpu/s45b.sh`: the prefill that the CLI and the server
# get. Their engine Session used to hand the GPU one 2048-token chunk per forward call (ds4's
# chunk schedule); now it groups whole chunks up to the session's batch (16384). ds4-bench
# with DS4_CHUNK=2048 runs the old batches, by default the new ones (same tokens expected),
# at 8K / 32K / 64K prompts; then the ds4 CLI itself on a ~32K-token text prompt with
# --prefill-chunk 2048 (one chunk per call, as before) and by default. On an H200 first the
# committed sweep (and the fixtures). The KV payload's save / restore times (byte copies now).
# Carry .gpu/{ds4-bench,ds4-gguf,ds4,fix.tgz,kz}. $OUT: log.txt, verify.txt, h200_q2.*.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s45b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures; keep verify.txt
synth_wait
sweep_whole
# (the whole model loads slower: fewer runs there, under the 600 s limit)
if [ -z "${SYNTH_LAYERS:-}" ]; then ctxs="8192 65536"; cli=("--prefill-chunk 2048" ""); else ctxs="8192 32768 65536"; cli=("--prefill-chunk 2048" "--prefill-chunk 2048" "" ""); fi
for c in $ctxs; do
  prompt_ab DS4_CHUNK=2048 $c | sed 's/^/chunk2k /'
  prompt_ab X=1 $c | sed 's/^/batch /'
  grep "KV payload" /tmp/run.txt | tail -1
done
long_prompt
for f in "${cli[@]}"; do
  echo "== ds4 CLI ${f:-(default)}"
  timeout 150 .gpu/ds4 --cuda -m "$M" --prompt-file /tmp/long.txt -n 4 --ctx 40000 $f 2>&1 | tr '\r' '\n' | grep -E "prefill:|input tokens: [0-9]+/[0-9]+ \(100|rror|panic|fit" | tail -3
done
