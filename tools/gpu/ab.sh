#!/usr/bin/env bash
# ONE device call: fixtures, optional kernel benches (KB="q8 dec exp ..." -> DS4_KBENCH modes),
# decode at 2K for each switch setting in AB (space-separated VAR=value; the first run is the
# default), optional 2K..64K sweep (SWEEP=1 -> $OUT/h200_q2.csv + .svg + .summary.txt) and
# warm per-kernel decode timing (NCU=1), and Nsight Compute stall-reason sections of kernels
# inside their kernel benches (NCU_KB="hc:hc_step q8:mvq_b3 mv:matvec_grouped" ->
# $OUT/ncu_<mode>.txt), and per-instruction stall samples (NCU_SRC="hc:hc_step" ->
# $OUT/ncu_src_<mode>.csv.gz; tools/gpu/ncu_source.py summarizes), and BASE_AB=N alternating
# decode runs of an earlier commit's binary (.gpu/base, built by tools/gpu/base.sh) and this one.
# Carry .gpu/{ds4-bench,ds4-gguf,fix,kcache}
# (or .gpu/kz: gzipped cubins, unpacked into .gpu/kcache here; the carry limit is 64 MiB); the kernel cache is
# prebuilt here (cuda::tests::prebuild_kernel_cache). Session 3 ran it as e.g.
#   AB="DS4_HC_STEP=0 DS4_ATTN_DEC=old DS4_ROUTE=old" SWEEP=1 bash tools/gpu/ab.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
unpack_kz
synth_start
echo "== fixtures"; fixtures
for k in ${KB:-}; do DS4_KBENCH=$k DS4_KBENCH_T=${KBENCH_T:-2048,8192} timeout 150 "$BIN" --kernel-bench > "$OUT/kbench_$k.txt" 2>&1; echo "kbench $k rc=$?"; done
synth_wait
decode_at "DS4_DEFAULT=1" 2048
for v in ${AB:-}; do decode_at "$v" 2048; done
# BASE_AB=N: N alternating runs of .gpu/base (tools/gpu/base.sh) and the current binary
if [ -n "${BASE_AB:-}" ] && [ -x .gpu/base/ds4-bench ]; then
  for i in $(seq "$BASE_AB"); do
    DS4_KERNEL_CACHE=$PWD/.gpu/base/kcache BIN=.gpu/base/ds4-bench decode_at "DS4_AB=base-$(cat .gpu/base/REV 2>/dev/null)" 2048
    decode_at "DS4_AB=current" 2048
  done
fi
if [ -n "${SWEEP:-}" ]; then
  echo "== sweep"
  timeout 150 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 64 \
    --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -9
fi
[ -n "${NCU:-}" ] && ncu_decode
for mk in ${NCU_KB:-}; do ncu_kbench "${mk%%:*}" "${mk#*:}"; done
for mk in ${NCU_SRC:-}; do ncu_source "${mk%%:*}" "${mk#*:}"; done
ls -la "$OUT"
