#!/usr/bin/env bash
# Session 54's call: gemm_qs_gu (the routed experts' gate and up in one launch writing the
# mids, DS4_GU_FUSE=1) against gemm_qs twice + moe_mid. The kernel bench's gate cases at 8K and
# 2K tokens (the gu rows: time and the f16 mids' bits against the unfused path, 0 differing
# expected); the fixtures under the defaults (session 53's s53b.sh, which never ran), with the
# grouped GEMMs forced onto every MoE batch, and the same fused; 8K / 2K prompts both ways
# (the same greedy tokens expected; the 8K one also with DS4_QS_FORK=1, session 39's side-stream
# form of the split, never measured), then a CUPTI trace of the fused 8K prompt.
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,cupti}. $OUT: log.txt, the kernel bench, the verify
# reports, cupti_kern.csv.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s54
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for t in 8192 2048; do
  kx "$BIN" $t DS4_KBENCH_CASE=exp_gate g$t > /dev/null
  grep -E "^exp_|grouped_qsx| gu |FAIL|rror|panic" "$OUT/kbench_exp_g$t.txt" | cut -c1-60,118-330
  keep kbench_exp_g$t.txt
done
F="DS4_MOE_SMALL=0 DS4_GEMM_QR_MIN=0"
fixtures_in X=1 "$F" "DS4_GU_FUSE=1 $F"
for f in "$OUT"/verify_*.txt; do
  echo "== $(basename "$f"): $(grep -cE '^PASS' "$f") PASS, $(grep -cE '^FAIL' "$f") FAIL"
done
grep -hE "small-batch|cuBLAS deviation" "$OUT"/verify_X-1.txt | cut -c1-200
# the forced runs line by line: the fused one should print the same figures
diff <(grep -E "^(PASS|FAIL)" "$(verify_file "$F")") <(grep -E "^(PASS|FAIL)" "$(verify_file "DS4_GU_FUSE=1 $F")") | head -20
echo "fused vs unfused fixture lines differing: $(diff <(grep -E "^(PASS|FAIL)" "$(verify_file "$F")") <(grep -E "^(PASS|FAIL)" "$(verify_file "DS4_GU_FUSE=1 $F")") | grep -c '^<')"
for f in "$OUT"/verify_*.txt; do gzip -c "$f" > "$REAL_OUT/$(basename "$f").gz"; done
synth_wait
for r in 1 2; do
  for v in X=1 DS4_GU_FUSE=1 "DS4_GU_FUSE=1 DS4_QS_FORK=1"; do prompt_ab "$v" 8192; done
done
for v in X=1 DS4_GU_FUSE=1; do prompt_ab "$v" 2048; done
# a CUPTI trace of an 8K prompt (and 8 decode steps) with the fused path
if [ -d .gpu/cupti ]; then
  DS4_GU_FUSE=1 CUPTI_GEN=8 cupti_decode 8192
  keep cupti_kern.csv.gz
fi
