#!/usr/bin/env bash
# Prepared in session 56 for the next lease (run it on an H200 with needs_h200: the sweep needs
# the whole q2 model; on an H100 the sweep is skipped and the rest runs).
# 1. Branch s56-pws (the fused gate + up's routing weights staged in shared memory, the same
#    arithmetic) against main: the kernel bench's gate cases at 8K tokens with both binaries
#    (main .gpu/ds4-bench, the branch .gpu/pws/ds4-bench: BASE_DIR=.gpu/pws bash
#    tools/gpu/base.sh s56-pws); the gu rows' mids must differ from moe_mid's as main's do.
# 2. Nsight Compute shared-memory tables (bank conflicts per instruction kind) of gemm_qs_gu and
#    gemm_qs on the IQ2_XXS gate case: the fused IQ2_XXS K loop stalls more on short
#    scoreboard (session 56) with the same instructions.
# 3. The committed sweep under the current defaults (sweep_whole) and two 8K prompts.
# Carry .gpu/{ds4-bench,ds4-gguf,kz} and .gpu/pws. $OUT: log.txt, the kernel benches, ncu
# reports, the sweep files.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s57a
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for tb in "main:$BIN" "pws:.gpu/pws/ds4-bench"; do
  tag=${tb%%:*} b=${tb#*:}
  [ -x "$b" ] || continue
  kx "$b" 8192 DS4_KBENCH_CASE=exp_gate "g8192_$tag" > /dev/null
  grep -E " gu |FAIL|rror|panic" "$OUT/kbench_exp_g8192_$tag.txt" | cut -c38-200 | sed "s/^/$tag /"
  keep "kbench_exp_g8192_$tag.txt"
done
ncu=$(ncu_bin)
for k in gemm_qs_gu gemm_qs; do
  DS4_KBENCH=exp DS4_KBENCH_CASE=exp_gate DS4_KBENCH_T=8192 DS4_KBENCH_NOBLAS=1 timeout 150 "$ncu" --clock-control none \
    -k "regex:^$k\$" --launch-count 1 --section MemoryWorkloadAnalysis_Tables --section MemoryWorkloadAnalysis \
    "$BIN" --kernel-bench > "$OUT/ncu_smem_$k.txt" 2>&1
  echo "ncu $k rc=$?"; grep -iE "bank|Shared" "$OUT/ncu_smem_$k.txt" | head -12
  keep "ncu_smem_$k.txt"
done
synth_wait
sweep_whole
for r in 1 2; do prompt_ab X=1 8192; done
