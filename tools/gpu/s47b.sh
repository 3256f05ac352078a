#!/usr/bin/env bash
# Session 47's second call, `bash tools/gpu/s47b.sh`: programmatic dependent launch for two
# latency-bound decode kernels, each loading what its predecessor does not write before
# griddepcontrol.wait: hc_step_gs (the mix weights, the old state, post / comb; DS4_HC_PDL=1)
# and router_dec (its weight rows; DS4_ROUTER_PDL=1). Fixtures default and with both; decode at
# 2K and 8K: the base binary (.gpu/base, session 46), the new one as built (the loads moved
# ahead of a no-op wait) and with each switch, with the md5 of the greedy tokens (all equal
# expected: no arithmetic changes). As run in call 2 (bench/s47/s47_call2.txt); since then
# DS4_HC_PDL is on by default (DS4_HC_PDL=0: off) and DS4_ROUTER_PDL is gone (it lost: router_dec
# loading its 2 MB of weights beside hc_step_gs slowed decode 1 %).
# Carry .gpu/{ds4-bench,ds4-gguf,fix.txz,kz,base}. $OUT: log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s47b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in X=1 "DS4_HC_PDL=1 DS4_ROUTER_PDL=1"
synth_wait
for r in 1 2; do
  for c in 2048 8192; do
    decode_md5 "$BASE_BIN" $c
    for e in X=1 DS4_HC_PDL=1 DS4_ROUTER_PDL=1 "DS4_HC_PDL=1 DS4_ROUTER_PDL=1"; do decode_md5 "$BIN" $c "$e"; done
  done
done
