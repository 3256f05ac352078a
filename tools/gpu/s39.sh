#!/usr/bin/env bash
# Session 39's device calls, `bash tools/gpu/s39.sh 1|2`. Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz}
# (~52 MB).
# 1: gemm_qs split by each expert's remainder (GqKernel::QsSplit; then DS4_QS_SPLIT 128 / 64 /
#    0, now 2 / -, 0). The kernel bench exp (uniform 2K / 8K, skewed 8K: grouped_qsx's time and
#    bits against gemm_qr), the fixtures with the split forced onto every MoE batch, then 8K
#    prompts alternating the settings (the same greedy tokens expected: same bits).
# 2: the three-way split (gemm_qs4, 512-row tiles of up to 64 tokens, for IQ2_XXS, Q2_K and
#    Q4_K remainders of up to 64 tokens: DS4_QS_SPLIT=3; 4 = also for the batches that took
#    gemm_qs2 alone). Kernel bench exp (uniform 2K: grouped_qs4 and grouped_qsx against qs2;
#    skewed 8K), 8K prompts (0 / 2 / 3 / 3 with DS4_QS_FORK=1: the shortest remainders on
#    the side stream) twice, the fixtures with the split forced, 2K prompts (3 / 4) once (the same greedy tokens), then the committed sweep with the faster
#    of split modes 2 and 3 at 8K.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
call=${1:?usage: s39.sh 1|2}
if [ "$call" = 1 ]; then
export DS4_KBENCH_NOBLAS=1
kbench_exp 2048 8192
echo "== skewed"
DS4_KBENCH_SKEW=1 DS4_KBENCH=exp DS4_KBENCH_T=8192 timeout 120 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_exp_8192_skew.txt" \
  | grep -E "^exp_|grouped|routing|rror|panic"
unset DS4_KBENCH_NOBLAS
fixtures_in "DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0"
synth_wait
for i in 1 2; do
  prompt_ab DS4_QS_SPLIT=0 8192; prompt_ab X=1 8192; prompt_ab DS4_QS_SPLIT=64 8192
done
DS4_MOE_STATS=1 prompt_ab X=1 8192 >/dev/null; grep -iE "full tiles" /tmp/run.txt | head -4
else
export DS4_KBENCH_NOBLAS=1
kx() {
  echo "== kbench exp T=$1 $2"
  env $2 DS4_KBENCH=exp DS4_KBENCH_T=$1 timeout 120 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_exp_$1_$3.txt" \
    | grep -E "^exp_|grouped_q|routing|rror|panic"
}
kx 2048 DS4_QS_SPLIT=3 uni
kx 8192 "DS4_KBENCH_SKEW=1 DS4_QS_SPLIT=3" skew3
unset DS4_KBENCH_NOBLAS
synth_wait
for i in 1 2; do
  for m in DS4_QS_SPLIT=0 DS4_QS_SPLIT=2 DS4_QS_SPLIT=3 "DS4_QS_SPLIT=3 DS4_QS_FORK=1"; do prompt_ab "$m" 8192 | tee -a /tmp/p8k.txt $OUT/p8k.txt; done
done
fixtures_in "DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0 DS4_QS_SPLIT=3" "DS4_GEMM_QR=2 DS4_GEMM_QR_MIN=0 DS4_QS_SPLIT=4" "DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0 DS4_QS_SPLIT=3 DS4_QS_FORK=1"
prompt_ab DS4_QS_SPLIT=3 2048; prompt_ab DS4_QS_SPLIT=4 2048
# the sweep with the 8K prompts' faster of modes 2 and 3 (the sum of the two runs' t/s)
best=$(for m in 2 3; do echo "$m $(grep "^\[DS4_QS_SPLIT=$m\]" /tmp/p8k.txt | sed -E 's/.*prefill ([0-9]+) t\/s.*/\1/' | awk '{s+=$1} END{print s+0}')"; done | sort -k2 -n | tail -1 | cut -d' ' -f1)
echo "== sweep with DS4_QS_SPLIT=$best"
DS4_QS_SPLIT=$best timeout 150 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 \
  --gen-tokens 64 --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|TB/s|rror|panic" | tail -14
fi
