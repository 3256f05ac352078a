#!/usr/bin/env bash
# ONE device call (the session's last): GEMM kernel bench incl. the cuBLAS dense path, prefill
# at 8K with and without cuBLAS, and the 2K..64K sweep for both. Uses a kernel cache built on
# the CPU machine (.gpu/kcache, see cuda::tests::prebuild_kernel_cache).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
synth_start
DS4_KBENCH=gemm DS4_KBENCH_T=8192 timeout 60 "$BIN" --kernel-bench > "$OUT/kbench_gemm.txt" 2>&1; echo "kbench rc=$?"
grep -E "cublas|^[a-z_/0-9]+ +[A-Z]" "$OUT/kbench_gemm.txt" | grep -E "cublas|q_a|q_b|out_b" | head -24
synth_wait
for v in "DS4_GEMM_DENSE=q" "DS4_GEMM_DENSE=cublas"; do
  echo "== $v prefill 8K"
  env $v timeout 35 "$BIN" --cuda -m "$M" --random-prompt 8300 --ctx-start 8192 --ctx-max 8192 --gen-tokens 32 2>&1 | tr '\r' '\n' | grep -E "^ctx|rror|panic|cuBLAS" | tail -3
done
for v in "DS4_GEMM_DENSE=q" "DS4_GEMM_DENSE=cublas"; do
  echo "== $v sweep"
  env $v timeout 60 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 32 \
    --csv "$OUT/sweep_${v#*=}.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|rror|panic" | tail -9
done
ls "$OUT"
