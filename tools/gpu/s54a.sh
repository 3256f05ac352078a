#!/usr/bin/env bash
# Session 54's first short call (s54.sh was taken back mid-call once): gemm_qs_gu in the kernel
# bench's gate cases at 8K tokens (time, f16 mids' bits against gemm_qs x 2 + moe_mid), then an
# 8K prompt without and with DS4_GU_FUSE=1, twice (the same greedy tokens expected).
# Carry .gpu/{ds4-bench,ds4-gguf,kz}. $OUT: log.txt, the kernel bench.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s54a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 DS4_KBENCH_CASE=exp_gate g8192 > /dev/null
grep -E "^exp_|grouped_qsx| gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c1-60,118-330
keep kbench_exp_g8192.txt
synth_wait
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1; do prompt_ab "$v" 8192; done
done
