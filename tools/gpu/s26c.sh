#!/usr/bin/env bash
# s26 call 3: q16 + idx_q_prep table + idx_q_prep f16 (.gpu) against 4f579f4 (.gpu/base), then the sweep
source tools/gpu/env.sh
synth_start
setup_caches
fixtures
grep -E "fast-vs-reference prefill|fast-cublas-vs|cuBLAS dev" $OUT/verify.txt | head -40
synth_wait
ab() { # DIR N ENV
  local d=$1 n=$2; shift 2
  env DS4_KERNEL_CACHE=$PWD/$d/kcache DS4_BENCH_TOKENS=1 "$@" timeout 120 $d/ds4-bench --cuda -m $M --random-prompt $((n+108)) --ctx-start $n --ctx-max $n --gen-tokens 96 > /tmp/ab.txt 2>&1
  echo "$d $n $* : $(tr '\r' '\n' < /tmp/ab.txt | grep -E "^ctx $n: " | tail -1) tok=$(grep 'tokens \[' /tmp/ab.txt | md5sum | cut -c1-8)"
  grep -iE "rror|panic" /tmp/ab.txt | head -3
}
for r in 1 2; do
  ab .gpu/base 8192
  ab .gpu 8192
  ab .gpu 8192 DS4_IDXQ_F16=0
done
ab .gpu/base 65536
ab .gpu 65536
echo "== sweep"
timeout 400 $BIN --cuda -m $M --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 --gen-tokens 64 --csv $OUT/h200_q2.csv 2>&1 | tr '\r' '\n' | grep -E "^ctx|ceiling|rror" | tail -20
ls $OUT
