#!/usr/bin/env bash
# Session 55's third call: gemm_qs_gu with the routing weights staged in shared memory (its
# first form's epilogue waited on each load: 0.52x in s55a.sh), the kernel bench's gate cases at
# 8K tokens, 8K prompts with and without DS4_GU_FUSE=1 (twice; the same greedy tokens expected),
# then the fixtures with the fused path forced onto every MoE batch of the fixture models.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt, the kernel bench, the verify report.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s55c
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
kx "$BIN" 8192 DS4_KBENCH_CASE=exp_gate g8192 > /dev/null
grep -E "grouped_qsx| gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192.txt" | cut -c1-60,118-330
keep kbench_exp_g8192.txt
synth_wait
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1; do prompt_ab "$v" 8192; done
done
fixtures_in "DS4_GU_FUSE=1 DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
f=$(verify_file "DS4_GU_FUSE=1 DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0")
echo "== $(basename "$f"): $(grep -cE '^PASS' "$f") PASS, $(grep -cE '^FAIL' "$f") FAIL"
gzip -c "$f" > "$REAL_OUT/$(basename "$f").gz"
