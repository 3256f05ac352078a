#!/usr/bin/env bash
# Session 48's minimal call, `bash tools/gpu/s48m.sh` (~1.5 minutes, no synthetic model): the
# kernel bench that compares decode's split hyper-connection steps with hc_step_gs byte for byte
# (DS4_KBENCH=hce: out_b on mvq_b2h, the down projection on mvq_b3h, each + hc_fin_gs) and
# times both, then the fixtures with the split on (DS4_HC_EPI=3: the t256 models take the down
# projection's form). s48.sh is the full call (the decode A/B).
# Carry .gpu/{ds4-bench,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
setup_caches
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== kbench hce"
DS4_KBENCH=hce timeout 60 "$BIN" --kernel-bench 2>&1 | grep -vE "^\s*$" | tail -12
fixtures_in "DS4_HC_EPI=3"
