#!/usr/bin/env bash
# Session 53's call (160 s on an H100; bench/s53/call1_s53.txt). Session 52's prepared s52b.sh,
# which never ran, folded in and trimmed after a machine was taken back mid-call: mvqs against
# mvqm in the kernel bench at 256 / 1024 tokens; the fixtures under the defaults and with
# dense_small (DS4_DENSE_SMALL=64); single batches of 64-1024 tokens under the defaults and
# mvqs up to 2048, of 4-64 tokens with and without dense_small; the per-kernel times of 4-, 16-
# and 64-token batches (DS4_PROFILE) both ways; a CUPTI trace of an 8K prompt and its decode
# (the last profile of an 8K prefill was session 38's).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,cupti}. $OUT: log.txt, the verify report, the
# kernel bench, cupti_kern.csv.gz (tools/gpu/nsys_gaps.py --longest / --tokens 24).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s53
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
S="DS4_MOE_SMALL_GRP=s DS4_MOE_SMALL=2048"
kx "$BIN" 256,1024 X=1 mvqs > /dev/null
grep -E "^exp_|grouped_qsx| mvq[ms] |FAIL|rror|panic" "$OUT/kbench_exp_mvqs.txt" | cut -c1-100,130-260; keep kbench_exp_mvqs.txt
fixtures_in X=1 DS4_DENSE_SMALL=64
grep -hE "small-batch" "$OUT"/verify_*.txt | cut -c1-200; keep verify_X-1.txt
synth_wait
for v in X=1 "$S"; do
  small_rows "$v" 64,128,256,512,1024 4200 4100
done
for v in X=1 DS4_DENSE_SMALL=64; do
  small_rows "$v" 4,8,16,32,64 2300 2200
done
for v in X=1 DS4_DENSE_SMALL=64; do
  echo "== small batches' kernels (DS4_PROFILE=1: each launch timed alone), 4 / 16 / 64 tokens at 2K, $v"
  env $v DS4_PROFILE=1 DS4_BENCH_INCR=4,16,64 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2300 --ctx-start 2048 \
    --ctx-max 2200 --gen-tokens 2 > /tmp/prof.log 2>&1
  for c in 2052 2068 2132; do grep -E "profile prefill ctx $c:" /tmp/prof.log | head -14; done
  grep -E "rror|panic" /tmp/prof.log | head -3
done
CUPTI_GEN=24 cupti_decode 8192
keep cupti_kern.csv.gz
