#!/usr/bin/env bash
# The int8 decode matvec (mvq) against the read floor at the real shapes, then Nsight Compute
# on the three expert cases (sections, and per-SASS stall samples for IQ2_XXS). No model needed.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
unpack_kz
export DS4_KERNEL_CACHE=$PWD/.gpu/kcache
echo "== kbench q8"
DS4_KBENCH=q8 timeout 200 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_q8.txt" | grep -v "^  sweep" | head -30
for c in "gate   IQ2" "down   Q2_K" "gate   Q4_K"; do
  tag=$(echo "$c" | tr -s ' ' '_')
  DS4_KBENCH_CASE="$c" NCU_COUNT=1 ncu_kbench q8 'mvq_b3' && mv "$OUT/ncu_q8.txt" "$OUT/ncu_q8_$tag.txt"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Executed Ipc A|Issue Slots Busy|L1/TEX Hit|Mem Busy|Max Bandwidth|Stall|No Eligible|One or More" "$OUT/ncu_q8_$tag.txt" | head -30
done
DS4_KBENCH_CASE="gate   IQ2" ncu_source q8 'mvq_b3'
python3 tools/gpu/ncu_source.py "$OUT/ncu_src_q8.csv.gz" 2>&1 | head -60
