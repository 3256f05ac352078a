#!/usr/bin/env bash
# Session 47's last A/B, `bash tools/gpu/s47g.sh` (branch s47-hc512): hc_step_gs at 512 threads
# per block (DS4_HC_BLOCK=512: two mixes per warp, the second's weights also loaded before the
# wait), so that under PDL a block fits beside one of out_b's two per SM and can start when the
# first retires. Fixtures with it; decode at 2K and 8K, two rounds: default, 512, and 512
# without PDL; the md5 of the greedy tokens (all equal expected).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47g
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in DS4_HC_BLOCK=512
synth_wait
ab() {
  env DS4_BENCH_TOKENS=1 ${2:-X=1} timeout 120 "$BIN" --cuda -m "$M" --random-prompt $(($1 + 120)) --ctx-start "$1" \
    --ctx-max "$1" --gen-tokens 96 > /tmp/run.txt 2>&1
  echo "${2:-default} ctx $1: $(tr '\r' '\n' < /tmp/run.txt | grep -E '^ctx [0-9]' | tail -1 | sed 's/ = .*//') | tokens $(grep -E '^ctx .*: tokens' /tmp/run.txt | md5sum | cut -c1-8)"
  grep -E "rror|panic" /tmp/run.txt | head -3
}
for r in 1 2; do
  for c in 2048 8192; do ab $c; ab $c DS4_HC_BLOCK=512; ab $c "DS4_HC_BLOCK=512 DS4_HC_PDL=0"; done
done
