#!/usr/bin/env bash
# Session 45's fourth call, `bash tools/gpu/s45d.sh`: the engine Session's greedy run (the CLI
# at --temp 0 takes the argmax on the device, 4 bytes back per token) against the host argmax
# (DS4_HOST_ARGMAX=1: the 517 KB of logits read back every token, as before): the fixtures with
# the new "session greedy run" check, then the ds4 CLI generating 128 tokens after a ~32K-token
# prompt both ways (the printed text must be identical), and ds4-bench's decode there.
# Carry .gpu/{ds4-bench,ds4-gguf,ds4,fix.tgz,kz}. $OUT: log.txt, verify.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s45d
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures; keep verify.txt
grep -E "session greedy run" "$OUT/verify.txt" | head -3
synth_wait
long_prompt
for r in 1; do
  for mode in DS4_HOST_ARGMAX=1 X=1; do
    env $mode timeout 150 .gpu/ds4 --cuda -m "$M" --prompt-file /tmp/long.txt -n 128 --ctx 40000 --temp 0 > /tmp/gen_$mode.txt 2> /tmp/gen_err.txt
    echo "[$mode] $(tr '\r' '\n' < /tmp/gen_err.txt | grep -E 'prefill:|rror|panic' | tail -1) | text $(md5sum < /tmp/gen_$mode.txt | cut -c1-8)"
  done
done
prompt_ab X=1 32768 | sed 's/^/bench /'
