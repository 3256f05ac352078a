#!/usr/bin/env bash
# Session 48's first call, `bash tools/gpu/s48.sh`: decode's hyper-connection steps split into
# the epilogue of the matvec before them (phase 1) + hc_fin_gs (phase 2): the FFN-side step after
# out_b (mvq_b2h: each 32-row block) and the attention-side step after the down projection
# (mvq_b3h: each slice's last block, by a ticket). `DS4_HC_EPI` mask: 1 the first, 2 the second,
# 3 both; 0 off (one hc_step_gs launch each, as before; the default until a device has run it).
#   1. kbench hce: out_b / the down + hc_step_gs against mvq_b2h / mvq_b3h + hc_fin_gs from one
#      state, every output compared byte for byte, and both pairs timed;
#   2. the fixtures (hc_step_gs's phases were refactored into functions: same arithmetic);
#   3. decode at 2K and 8K, two rounds: main's binary (.gpu/base), this one with DS4_HC_EPI=3,
#      0, 1 and 2, and the md5 of the greedy tokens (all equal expected: the split
#      runs the same arithmetic);
# (Its first run, with hc_step_gs512 still in the build, failed on mvq_b2h / hc_fin_gs missing
# from driver::KERNELS; its DS4_HC_EPI=0 rows measured DS4_HC_BLOCK=512 at -0.2 to -0.9 %
# against 1024 threads at 2K: the s47-hc512 branch was not merged.)
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,base}. $OUT: log.txt (+ the sweep's files on an H200).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s48
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== kbench hce"
DS4_KBENCH=hce timeout 120 "$BIN" --kernel-bench 2>&1 | grep -vE "^\s*$" | tail -12
# SHORT=1 (a call of ~4 minutes): one fixture run, one decode round, no sweep
if [ -n "${SHORT:-}" ]; then fixtures_in "DS4_HC_EPI=3"; else fixtures_in "DS4_HC_EPI=3" "DS4_HC_EPI=0"; fi
synth_wait
for r in $(seq 1 $([ -n "${SHORT:-}" ] && echo 1 || echo 2)); do
  for c in 2048 8192; do
    decode_md5 "$BASE_BIN" $c
    decode_md5 "$BIN" $c DS4_HC_EPI=3
    decode_md5 "$BIN" $c DS4_HC_EPI=0
    decode_md5 "$BIN" $c DS4_HC_EPI=1
    decode_md5 "$BIN" $c DS4_HC_EPI=2
  done
done
# 4. on an H200 (the whole model) the committed sweep with this binary's defaults
[ -z "${SHORT:-}" ] && sweep_whole
