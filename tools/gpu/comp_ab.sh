set -uo pipefail
. tools/gpu/env.sh
setup_caches
synth_start
for mode in X=1 DS4_COMP_DEC=0; do echo "== fixtures $mode"; ( export $mode; fixtures ) | grep -E "passed|FAIL" | head -5; done
synth_wait
for ctx in 2048 8192; do for i in 1 2; do decode_at "X=1" $ctx 32; decode_at "DS4_COMP_DEC=0" $ctx 32; done; done
