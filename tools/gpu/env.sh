# Sourced by the device scripts: find libcuda/libnvrtc on the lent GPU machine.
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so.1[0-9]* 2>/dev/null | grep -v alt | grep -v builtins | head -1)
if [ -z "$nv" ]; then
  nv=$(python3 -c 'import nvidia, os, glob; print((glob.glob(os.path.join(list(nvidia.__path__)[0], "*/lib/libnvrtc.so.1*")) or [""])[0])' 2>/dev/null)
fi
export DS4_NVRTC_LIB="$nv"
export LD_LIBRARY_PATH="$(dirname "${nv:-/x}"):/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DS4_KERNEL_CACHE=/tmp/ds4-kcache
BIN=${BIN:-.gpu/ds4-bench}
GGUF_BIN=${GGUF_BIN:-.gpu/ds4-gguf}
OUT=${OUT:-/tmp/ds4-out}
mkdir -p "$OUT"
echo "libnvrtc: ${nv:-NOT FOUND}"

# The full-size synthetic q2 model (published shapes, random weights) in /dev/shm.
M=/dev/shm/q2.gguf
# Start writing it in the background (~55 s on the H200 machine); synth_wait waits for it.
# SYNTH_LAYERS=N: only the first N layers (all 43 take 80.8 GiB: an 80 GB H100 needs ~28).
# A later call on the same warm machine finds the file (/dev/shm/q2.done names its layers) and
# skips the write.
synth_start() {
  SYN=
  if [ -f "$M" ] && [ "$(cat /dev/shm/q2.done 2>/dev/null)" = "${SYNTH_LAYERS:-all}" ]; then echo "$M already written"; return 0; fi
  rm -f /dev/shm/q2.done
  mount -o remount,size=120G /dev/shm 2>/dev/null || true
  ( timeout ${SYNTH_TIMEOUT:-300} "$GGUF_BIN" synth --preset full --quant q2 --seed 1 ${SYNTH_LAYERS:+--layers $SYNTH_LAYERS} --out "$M" >/tmp/synth.log 2>&1 \
    && echo "${SYNTH_LAYERS:-all}" > /dev/shm/q2.done ) &
  SYN=$!
}
synth_wait() { [ -n "$SYN" ] && wait $SYN && tail -1 /tmp/synth.log; return 0; }
# call_open NAME: $OUT -> REAL_OUT, the work files in /tmp/NAME-out, the log, the kernel caches
# (call_start's and call_start_q4's common opening).
call_open() {
  REAL_OUT=${OUT:-/tmp/ds4-out}
  export OUT=/tmp/$1-out
  mkdir -p "$OUT" "$REAL_OUT"
  exec > >(tee -a "$REAL_OUT/log.txt") 2>&1
  setup_caches
}
# call_start NAME: the start of a one-call device script (s43.sh ...). The tool's $OUT keeps at
# most 8 files, so $OUT becomes REAL_OUT and the work files go to /tmp/NAME-out (`keep F ...`
# copies one back); everything printed from here on is appended to $REAL_OUT/log.txt. Then
# the kernel caches, and the synthetic model started in the background: on an 80 GB card (an
# H100 lent for the H200) its first 28 layers only, since all 43 (80.8 GiB) do not fit; the
# ratios between two binaries hold there, but a committed sweep needs the whole model.
call_start() {
  call_open "$1"
  local mem
  mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
  [ "${mem:-0}" -lt 100000 ] && export SYNTH_LAYERS=28
  synth_start
}
# call_start_q4 NAME LAYERS: call_start for the q4 variant (gate / up / down Q4_K): its first
# LAYERS layers (the 43 take ~160 GB: no card holds them; 16 take 58 GiB) written in the
# foreground into M=/dev/shm/q4.gguf (the q2 model removed first: /dev/shm holds one).
call_start_q4() {
  call_open "$1"
  rm -f /dev/shm/q2.gguf /dev/shm/q2.done
  M=/dev/shm/q4.gguf
  SYN=
  timeout 300 "$GGUF_BIN" synth --preset full --quant q4 --seed 1 --layers "$2" --out "$M" 2>&1 | tail -1
}
keep() { for f in "$@"; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$REAL_OUT/"; done; return 0; }
# sweep_whole ["ENV"]: the committed sweep (2K .. 64K contexts by 8K, 64 generated tokens each)
# under that environment -> $OUT/h200_q2.{csv,svg,summary.txt}, kept (its stderr in
# $OUT/sweep.log: each context's t/s line and KV payload save / restore times); on the whole model only
# (call_start's SYNTH_LAYERS unset).
sweep_whole() {
  [ -n "${SYNTH_LAYERS:-}" ] && return 0
  echo "== sweep ${1:-(default)}"
  env ${1:-X=1} timeout 150 "$BIN" --cuda -m "$M" --random-prompt 65700 --ctx-start 2048 --ctx-max 65536 --step-incr 8192 \
    --gen-tokens 64 --csv "$OUT/h200_q2.csv" 2>&1 | tr '\r' '\n' | tee "$OUT/sweep.log" | grep -E "TB/s|KV payload|rror|panic" | tail -18
  keep h200_q2.csv h200_q2.svg h200_q2.summary.txt
}
# Every fixture check on the GPU (format: tools/gpu/verify.expected) -> $OUT/verify.txt.
fixtures() {
  timeout 240 "$BIN" --verify-fixtures "${FIX:-.gpu/fix}" 2>/tmp/verify.err > "$OUT/verify.txt"; echo "verify rc=$?"
  grep -E "FAIL|passed|failed" "$OUT/verify.txt" | tail -12; tail -3 /tmp/verify.err
}
# fixtures_in "VAR=value" ...: the fixture checks once per environment setting.
# Each mode's report is kept as $OUT/verify_<mode>.txt (verify.txt holds the last one).
verify_file() { echo "$OUT/verify_$(echo "$1" | tr -c 'A-Za-z0-9_=\n' '_' | tr '=' '-').txt"; }
fixtures_in() {
  local mode
  for mode in "$@"; do
    echo "== fixtures: $mode"
    ( export $mode; fixtures )
    cp "$OUT/verify.txt" "$(verify_file "$mode")"
  done
}
# verify_summary [FILE ...]: each fixture report's PASS / FAIL counts and its fast-path
# deviation lines, gzipped into $REAL_OUT (default: every $OUT/verify_*.txt)
verify_summary() {
  local f files=("$@")
  [ $# -eq 0 ] && files=("$OUT"/verify_*.txt)
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    echo "== $(basename "$f"): $(grep -cE '^PASS' "$f") PASS, $(grep -cE '^FAIL' "$f") FAIL"
    grep -E "deviation|fast" "$f" | head -4
    gzip -c "$f" > "$REAL_OUT/$(basename "$f").gz"
  done
}
# kbench_exp T ...: the routed-expert GEMM kernel bench at each token count -> $OUT/kbench_exp_T.txt
kbench_exp() {
  local t
  for t in "$@"; do
    echo "== kernel bench exp T=$t"
    DS4_KBENCH=exp DS4_KBENCH_T=$t timeout 120 "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_exp_$t.txt" \
      | grep -E "^exp_|grouped|cublas |rror|panic"
  done
}
# decode_at "VAR=value ..." CTX [GEN]: prefill CTX tokens of the synthetic model, decode GEN.
decode_at() {
  echo "== $1 ctx $2"
  env $1 timeout 90 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start "$2" --ctx-max "$2" --gen-tokens "${3:-64}" 2>&1 \
    | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic|fall" | tail -2
}
# prompt_ab "VAR=value ..." CTX: one CTX-token prompt of the synthetic model and 16 greedy tokens
# under that environment; prints its t/s line and the md5 of the greedy tokens (runs that change
# no arithmetic must print the same md5).
prompt_ab() {
  DS4_BENCH_TOKENS=1 env $1 timeout 150 "$BIN" --cuda -m "$M" --random-prompt $(($2 + 80)) --ctx-start "$2" \
    --ctx-max "$2" --gen-tokens 16 > /tmp/run.txt 2>&1
  echo "[$1] ctx $2: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1) | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
# decode_md5 BIN CTX ["VAR=value ..."]: a CTX-token prompt and 96 greedy tokens with that binary
# (and its kernel cache) under that environment: the t/s line, the md5 of the greedy tokens
# (runs that change no arithmetic must print the same md5)
decode_md5() {
  env DS4_BENCH_TOKENS=1 DS4_KERNEL_CACHE="$(kc "$1")" ${3:-X=1} timeout 120 "$1" --cuda -m "$M" --random-prompt $(($2 + 120)) \
    --ctx-start "$2" --ctx-max "$2" --gen-tokens 96 > /tmp/run.txt 2>&1
  echo "$(basename "$(dirname "$1")") ${3:-} ctx $2: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1 | sed 's/ = .*//') | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
# bench_sample "VAR=value ...": ds4-bench's decode at 2K (128 tokens) under that environment:
# its sampled-decode line (DS4_BENCH_SAMPLE) and its t/s line
bench_sample() {
  env $1 timeout 100 "$BIN" --cuda -m "$M" --random-prompt 2128 --ctx-start 2048 --ctx-max 2048 --gen-tokens 128 2>&1 \
    | tr '\r' '\n' | grep -E "^ctx [0-9]+: (sampled|prefill)|rror|panic" | sed "s/^/[$1] /" | tail -2
}
# long_prompt: ~32K tokens of plain text (15,000 common words; 31,916 tokens with the synthetic
# model's tokenizer) in /tmp/long.txt, for the ds4 CLI's own prefill / generation rates.
long_prompt() {
  python3 -c "
import random
random.seed(1)
w='the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their'.split()
print(' '.join(random.choice(w) for _ in range(15000)))" > /tmp/long.txt
}
# A carried binary's own kernel cache (setup_caches unpacks .gpu/kz and .gpu/X/kz beside it).
kc() { case $1 in /*) echo "$(dirname "$1")/kcache" ;; *) echo "$PWD/$(dirname "$1")/kcache" ;; esac; }
BASE_BIN=${BASE_BIN:-.gpu/base/ds4-bench}
# pb BIN "ENV": one 8K prompt_ab with that binary and its kernel cache, tagged with its folder
# -> also appended to $OUT/p8k.txt.
pb() {
  DS4_KERNEL_CACHE="$(kc "$1")" BIN=$1 prompt_ab "$2" 8192 | sed "s|^|$(basename "$(dirname "$1")") |" | tee -a "$OUT/p8k.txt"
}
# kbench_hcp: the hc kernel bench at 8K tokens (bit-for-bit rows of the hc_s16 / exp_y16 forms)
# -> $OUT/kbench_hcp.txt
kbench_hcp() {
  echo "== kbench hcp T=8192"
  DS4_KBENCH=hcp DS4_KBENCH_T=8192 timeout ${KB_TIMEOUT:-120} "$BIN" --kernel-bench 2>&1 | tee "$OUT/kbench_hcp.txt" \
    | grep -E "hc_s16|exp_y16|hc_post_mma8|FAIL|rror|panic"
}
# kx BIN T "ENV" TAG: the routed-expert kernel bench (no cuBLAS rows) of that binary at T tokens
# -> $OUT/kbench_exp_TAG.txt
kx() {
  echo "== kbench exp $1 T=$2 $3"
  env DS4_KERNEL_CACHE="$(kc "$1")" $3 DS4_KBENCH_NOBLAS=1 DS4_KBENCH=exp DS4_KBENCH_T=$2 timeout ${KB_TIMEOUT:-120} "$1" --kernel-bench 2>&1 \
    | tee "$OUT/kbench_exp_$4.txt" | grep -E "^exp_|grouped_q|y16|routing|FAIL|rror|panic"
}
# The Nsight Compute command line tool.
ncu_bin() { command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1; }
# Warm per-kernel durations (Nsight Compute, one pass) of a 2K prefill and 2 decode steps
# without graphs -> $OUT/ncu.csv.gz (summarize the decode segments per kernel name).
ncu_decode() {
  local ncu; ncu=$(ncu_bin)
  timeout 150 "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-count 4000 --csv \
    --log-file /tmp/ncu.csv "$BIN" --cuda -m "$M" --random-prompt 2200 --ctx-start 2048 --ctx-max 2048 --gen-tokens 2 --no-graphs > /tmp/ncu_run.txt 2>&1
  echo "ncu rc=$?"; gzip -c /tmp/ncu.csv > "$OUT/ncu.csv.gz"
}
# ncu_kbench MODE REGEX: Nsight Compute sections (speed of light, memory, warp stall reasons,
# occupancy) for the first launches of the kernels matching REGEX inside the kernel bench
# DS4_KBENCH=MODE (a small process: kernel replay works there, unlike on the 80 GB model)
# -> $OUT/ncu_MODE.txt
ncu_kbench() {
  local ncu; ncu=$(ncu_bin)
  DS4_KBENCH=$1 timeout ${NCU_TIMEOUT:-150} "$ncu" --clock-control none -k "regex:$2" --launch-count ${NCU_COUNT:-3} \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    "$BIN" --kernel-bench > "$OUT/ncu_$1.txt" 2>&1
  echo "ncu $1 rc=$?"
}
# The kernel cache carried gzipped (.gpu/kz/*.cubin.gz, to stay under the 64 MiB carry limit)
# -> .gpu/kcache.
unpack_kz() {
  [ -d .gpu/kz ] || return 0
  mkdir -p .gpu/kcache
  for f in .gpu/kz/*.gz; do [ -e "$f" ] && gunzip -c "$f" > ".gpu/kcache/$(basename "$f" .gz)"; done
}
# ncu_source MODE REGEX: per-SASS-instruction warp stall samples (densest sampling) of the first
# launch of REGEX inside the kernel bench DS4_KBENCH=MODE -> $OUT/ncu_src_MODE.csv.gz
# (NCU_CACHE=none: caches not flushed before the profiled launch, as in the decode graph)
# (tools/gpu/ncu_source.py ranks the instructions and totals the stall reasons).
ncu_source() {
  local ncu; ncu=$(ncu_bin)
  DS4_KBENCH=$1 timeout ${NCU_TIMEOUT:-150} "$ncu" --clock-control none --cache-control ${NCU_CACHE:-all} -k "regex:$2" --launch-count 1 --warp-sampling-interval 0 \
    --section SourceCounters --section WarpStateStats -o /tmp/ncu_src_$1 -f "$BIN" --kernel-bench > /tmp/ncu_src_$1.log 2>&1
  echo "ncu source $1 rc=$?"
  "$ncu" --import /tmp/ncu_src_$1.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/ncu_src_$1.csv.gz"
}
# The kernel caches of a device call: this binary's (.gpu/kz -> .gpu/kcache, exported as
# DS4_KERNEL_CACHE) and each other binary's (.gpu/X/kz -> .gpu/X/kcache: .gpu/base, ...) carried.
setup_caches() {
  # (.gpu/fix.txz: xz, 39 MB where gzip took 46 of the 64 MiB carry; extracted by Python's
  # tarfile, which does not need an xz binary on the device)
  [ -f .gpu/fix.txz ] && [ ! -d .gpu/fix ] && python3 -c "import tarfile; tarfile.open('.gpu/fix.txz').extractall('.gpu')"
  [ -f .gpu/fix.tgz ] && [ ! -d .gpu/fix ] && tar xzf .gpu/fix.tgz -C .gpu
  unpack_kz
  export DS4_KERNEL_CACHE=${KCACHE:-$PWD/.gpu/kcache}
  local k
  for k in .gpu/*/kz; do
    [ -d "$k" ] || continue
    mkdir -p "${k%/kz}/kcache"
    for f in "$k"/*.gz; do [ -e "$f" ] && gunzip -c "$f" > "${k%/kz}/kcache/$(basename "$f" .gz)"; done
  done
  return 0
}
# nsys_decode CTX: Nsight Systems trace of a decode run in the CUDA graph, each graph node
# traced as its own kernel (--cuda-graph-trace=node) -> $OUT/nsys_kern.csv.gz (per-kernel
# name, start, duration: the in-graph durations and gaps the ablation table only sums up).
nsys_decode() {
  local nsys; nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
  if [ -z "$nsys" ]; then echo "nsys not found"; return 1; fi
  timeout ${NSYS_TIMEOUT:-150} "$nsys" profile -t cuda --cuda-graph-trace=node -o /tmp/nsys_dec -f true \
    "$BIN" --cuda -m "$M" --random-prompt $(($1 + 40)) --ctx-start "$1" --ctx-max "$1" --gen-tokens 16 > /tmp/nsys_run.txt 2>&1
  echo "nsys rc=$?"
  "$nsys" stats -r cuda_gpu_trace -f csv -o /tmp/nsys_dec /tmp/nsys_dec.nsys-rep > /dev/null 2>&1
  gzip -c /tmp/nsys_dec_cuda_gpu_trace.csv > "$OUT/nsys_kern.csv.gz" 2>/dev/null && echo "nsys trace written"
}
# cupti_decode CTX: the decode graph at CTX under the CUPTI kernel tracer (.gpu/cupti from
# tools/gpu/cupti_build.sh; every graph node's start and end) -> $OUT/cupti_kern.csv.gz (read it
# with tools/gpu/nsys_gaps.py). The traced run's t/s is printed to show the tracer's own cost.
cupti_decode() {
  [ -f .gpu/cupti/cupti_trace.so ] || { echo "no .gpu/cupti (tools/gpu/cupti_build.sh)"; return 1; }
  [ -f .gpu/cupti/libcupti.so.13 ] || gunzip -c .gpu/cupti/libcupti.so.13.gz > .gpu/cupti/libcupti.so.13
  echo "== cupti trace ctx $1"
  CUDA_INJECTION64_PATH=$PWD/.gpu/cupti/cupti_trace.so DS4_CUPTI_OUT=/tmp/cupti_kern.csv \
    timeout ${CUPTI_TIMEOUT:-150} "$BIN" --cuda -m "$M" --random-prompt $(($1 + 40)) --ctx-start "$1" --ctx-max "$1" --gen-tokens ${CUPTI_GEN:-32} 2>&1 \
    | tr '\r' '\n' | grep -E "^ctx [0-9]|rror|panic" | tail -2
  local rc=${PIPESTATUS[0]}
  echo "cupti rc=$rc records=$(wc -l < /tmp/cupti_kern.csv 2>/dev/null)"
  gzip -c /tmp/cupti_kern.csv > "$OUT/cupti_kern.csv.gz" 2>/dev/null || true
}
# small_rows "VAR=value ..." INCR [PROMPT MAX]: prefill batches of exactly the sizes in INCR (a
# comma list; ds4-bench DS4_BENCH_INCR) after a 2K context under that environment, 4 decode
# tokens after each: one line of ctx,batch,prefill t/s,decode t/s rows (session 50)
small_rows() {
  echo "== small batches, $1"
  env $1 DS4_BENCH_INCR=$2 timeout 100 "$BIN" --cuda -m "$M" --random-prompt "${3:-4200}" \
    --ctx-start 2048 --ctx-max "${4:-4096}" --gen-tokens 4 --csv "$OUT/small.csv" > /tmp/b.log 2>&1
  grep -E "rror|panic" /tmp/b.log | head -3
  cut -d, -f1-3,5 "$OUT/small.csv" | tr '\n' ' '; echo
}
