#!/usr/bin/env bash
# Session 40's device calls, `bash tools/gpu/s40.sh 1|2`. Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz}
# and .gpu/base (main at 04fe2d1, session 39's final commit: `BASE=04fe2d1 bash tools/gpu/prep.sh`).
# 1: the kernel bench rows of this session's three opt-in changes, each checked bit for bit
#    against the f32 path on the same values: hcp (hc_s16: the 16-bit hc state; exp_y16: the
#    f16 slot rows in hc_post_mma8's MoE sum, moe_mid on f16 g / u) and exp at 2K (uniform) /
#    8K (skewed) with DS4_QS_SPLIT=3 (session 39's gemm_qs4 rows, and y16: the GEMMs' f16
#    outputs), plus the base binary's exp at 2K. (Since session 41 the switches have their own
#    entry points, so the default kernels are the base's machine code: tools/gpu/sass_diff.py
#    04fe2d1 lists 61 of 69 the same, the other 8 differing only in the dynamic shared memory's
#    offset; the base and default prompt rows below should agree within noise.) Then
#    the fixtures under the new switches (fast-vs-reference lines: their deviation; the CPU-side
#    estimate of each switch's own cost is tools/hc16_sim.py's), then 8K
#    prompts alternating the base binary and the new one under each setting (t/s; md5 of the
#    greedy tokens: the default must equal the base's).
# 2: the committed sweep with the settings call 1 picks (SET="VAR=v ..."), the fixtures of that
#    setting, and 2K / 64K prompts against the base.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
setup_caches
synth_start
call=${1:?usage: s40.sh 1|2}
if [ "$call" = 1 ]; then
  # (in order of what matters most if the call is cut short: each result is in $OUT as it comes)
  kbench_hcp
  kx "$BIN" 8192 "DS4_KBENCH_SKEW=1 DS4_QS_SPLIT=3" skew3
  # (bf16's state is not run: tools/hc16_sim.py puts its cost at ~100x f16's, NOTES session 40)
  fixtures_in "DS4_HC_S16=1 DS4_EXP_Y16=1" "DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"
  synth_wait
  for m in X=1 "DS4_HC_S16=1 DS4_EXP_Y16=1" DS4_HC_S16=1 DS4_EXP_Y16=1 "DS4_HC_S16=1 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"; do
    [ "$m" = X=1 ] && pb "$BASE_BIN" X=1
    pb "$BIN" "$m"
  done
  kx "$BIN" 2048 DS4_QS_SPLIT=3 uni3
  kx "$BASE_BIN" 2048 X=1 base_uni
  pb "$BASE_BIN" X=1; pb "$BIN" X=1; pb "$BIN" "DS4_HC_S16=1 DS4_EXP_Y16=1"
else
  SET=${SET:-X=1}
  synth_wait
  echo "== sweep with $SET"
  env $SET timeout 150 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 \
    --gen-tokens 64 --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx|TB/s|rror|panic" | tail -14
  fixtures_in "$SET"
  for c in 2048 65536; do
    DS4_KERNEL_CACHE="$(kc "$BASE_BIN")" BIN=$BASE_BIN prompt_ab X=1 $c
    prompt_ab "$SET" $c
  done
fi
