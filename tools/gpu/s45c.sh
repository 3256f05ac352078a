#!/usr/bin/env bash
# Session 45's third call, `bash tools/gpu/s45c.sh` (an H200 for the whole model): the
# committed sweep under this session's defaults, the 8K prompt with the old engine-Session
# batches (DS4_CHUNK=2048) and the new ones, and the ds4 CLI's own generation rate over 128
# tokens (greedy, then the default sampler) after a ~32K-token prompt: what the CLI / server
# decode gets against ds4-bench's device-side greedy loop.
# Carry .gpu/{ds4-bench,ds4-gguf,ds4,fix.tgz,kz}. $OUT: log.txt, h200_q2.*.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s45c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
sweep_whole
if [ -z "${SYNTH_LAYERS:-}" ]; then
  prompt_ab DS4_CHUNK=2048 8192 | sed 's/^/chunk2k /'
  prompt_ab X=1 8192 | sed 's/^/batch /'
fi
# ds4-bench's decode (device-side greedy) at the CLI prompt's context, for comparison
prompt_ab X=1 32768 | sed 's/^/bench /'
long_prompt
for f in "--temp 0" "" "--temp 0"; do
  echo "== ds4 CLI -n 128 ${f:-(default sampler)}"
  timeout 150 .gpu/ds4 --cuda -m "$M" --prompt-file /tmp/long.txt -n 128 --ctx 40000 $f 2>&1 >/dev/null | tr '\r' '\n' | grep -E "prefill:|rror|panic|fit" | tail -3
done
