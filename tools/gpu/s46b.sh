#!/usr/bin/env bash
# Session 46's second call, `bash tools/gpu/s46b.sh`: the logits read back through pinned memory
# (CudaSession::logits; DS4_PAGEABLE_LOGITS=1: the pageable copy as before) on the paths that
# still read them every token: ds4-bench's host-sampled decode at 2K (DS4_BENCH_SAMPLE_HOST=1),
# and ds4-server with top_p 0.95 requests (top_p < 1 needs every logit), same text both ways;
# then the fixtures (every dense readback goes the new way).
# Carry .gpu/{ds4-bench,ds4-gguf,ds4-server,fix.tgz,kz}. $OUT: log.txt, verify.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s46b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
synth_wait
for r in 1 2; do
  for p in 1 0; do bench_sample "DS4_BENCH_SAMPLE=1 DS4_BENCH_SAMPLE_HOST=1 DS4_PAGEABLE_LOGITS=$p"; done
done
bench_sample X=1
SAB_TOP_P=0.95 SAB_A=X=1 SAB_B=DS4_PAGEABLE_LOGITS=1 timeout 200 python3 tools/gpu/sample_ab.py .gpu/ds4-server "$M" /tmp/sab 1.0 0.6 2>&1 | tail -3
fixtures; keep verify.txt
