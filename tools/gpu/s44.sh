#!/usr/bin/env bash
# Session 44's device call, `bash tools/gpu/s44.sh`: the three switches are the default now
# (HC_S16, EXP_Y16, QS_SPLIT=3; session 44's first call picked them on an H100's 28 layers).
# Fixtures by default, the 8K A/B base / default, each switch turned off alone (what each one
# pays), 2K and 64K against the base, and on an H200 the committed sweep of the whole model.
# Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz,base} (s43.sh's bundle). $OUT: log.txt, p8k.txt,
# the sweep's h200_q2.{csv,svg,summary.txt}, verify.txt, rest.tgz.
# (Ran once, in session 44; the defaults have changed since: DS4_EXP_Y16=3 and DS4_QS_SPLIT=2. s45.sh is the current call.)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s44
export KB_TIMEOUT=90
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures; keep verify.txt
synth_wait
sweep_whole
pb "$BASE_BIN" X=1; pb "$BIN" X=1; pb "$BIN" DS4_HC_S16=0; pb "$BIN" DS4_EXP_Y16=0; pb "$BIN" DS4_QS_SPLIT=2
pb "$BASE_BIN" X=1; pb "$BIN" X=1; pb "$BIN" DS4_HC_S16=0; pb "$BIN" DS4_EXP_Y16=0; pb "$BIN" DS4_QS_SPLIT=2
pb "$BASE_BIN" X=1
keep p8k.txt
for c in 2048 65536; do
  DS4_KERNEL_CACHE="$(kc "$BASE_BIN")" BIN=$BASE_BIN prompt_ab X=1 $c | sed 's/^/base /'
  prompt_ab X=1 $c | sed 's/^/new /'
done
kbench_hcp
tar czf "$REAL_OUT/rest.tgz" -C "$OUT" . && echo "rest.tgz written"
