#!/usr/bin/env bash
# Session 56's sweep call. On an H200 (the whole model): the committed sweep under the current
# defaults (sweep_whole -> h200_q2.{csv,svg,summary.txt}) and two 8K prompts (on an H100 the
# prompts only, 28 layers). NCU_KERNELS="K ...": first Nsight Compute source-level stall
# samples of those kernels in the kernel bench's gate cases at 8K tokens (ncu_src_K.csv.gz).
# Carry .gpu/{ds4-bench,ds4-gguf,kz} (or BIN=... with its own folder). $OUT: log.txt, the sweep files.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s56a
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
export DS4_KBENCH_CASE=exp_gate DS4_KBENCH_T=8192 DS4_KBENCH_NOBLAS=1 NCU_TIMEOUT=120
for k in ${NCU_KERNELS:-}; do
  ncu_source exp "^$k\$"
  mv "$OUT/ncu_src_exp.csv.gz" "$REAL_OUT/ncu_src_$k.csv.gz" 2>/dev/null
  grep -E "rror|==PROF==.*[Nn]o kernels" /tmp/ncu_src_exp.log | head -3
done
unset DS4_KBENCH_CASE DS4_KBENCH_T DS4_KBENCH_NOBLAS
synth_wait
sweep_whole
for r in 1 2; do prompt_ab X=1 8192; done
