#!/usr/bin/env bash
# Session 43's device call, `bash tools/gpu/s43.sh`: the landing A/B of sessions 40-41's three
# switches, a pick made inside the call, the committed sweep under that pick, then the rest of
# s42.sh's measurements, in one call (a second machine start costs ~3 of the 30 minutes).
# Carry .gpu/{fix.tgz,ds4-bench,ds4-gguf,kz} and .gpu/base (main at 04fe2d1 with its kz, plus
# 94d4cd6's block_count check so that it loads the 28-layer file of an 80 GB card:
# `BASE=04fe2d1 BASE_APPLY=94d4cd6:crates/ds4-engine/src/hparams.rs bash tools/gpu/prep.sh`).
# The pick: all three switches (ALL) when their fixtures pass, the new binary's default tokens
# equal the base's (md5: same machine code, so the method itself is checked) and ALL's mean 8K
# prompt beats the base's mean by more than 1 %; else the default (X=1).
# $OUT keeps at most 8 files: log.txt (everything printed), p8k.txt, pick.txt, the sweep's
# h200_q2.{csv,svg,summary.txt}, verify_pick.txt; the rest goes into rest.tgz at the end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
call_start s43
ALL="DS4_HC_S16=1 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"
QR="DS4_GEMM_QR=1 DS4_GEMM_QR_MIN=0 DS4_EXP_Y16=1 DS4_QS_SPLIT=3"
export KB_TIMEOUT=90
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fixtures_in "$ALL"
all_ok=0
grep -qE "^[0-9]+ passed, 0 failed" "$OUT/verify.txt" && all_ok=1
echo "fixtures under ALL ok=$all_ok"
synth_wait
pb "$BASE_BIN" X=1; pb "$BIN" "$ALL"; pb "$BIN" X=1; pb "$BIN" "$ALL"; pb "$BASE_BIN" X=1
keep p8k.txt
# p8k.txt rows: "<folder> [ENV] ctx 8192: ctx 8192: prefill N t/s, decode ... | tokens MD5"
pick=$(awk -v all="[$ALL]" -v ok=$all_ok '
  { tag=$1; env=substr($0, index($0,"["), index($0,"]")-index($0,"[")+1)
    match($0, /prefill [0-9]+ t\/s/); v=substr($0, RSTART+8, RLENGTH-12)+0; md5=$NF
    if (tag=="base") { b+=v; nb++; bmd5=md5 }
    else if (env=="[X=1]") { xmd5=md5 }
    else if (env==all) { a+=v; na++ } }
  END { if (nb && na && ok && xmd5==bmd5 && a/na > 1.01*b/nb) print "ALL"; else print "X=1"
        printf "base %.0f all %.0f (%+.2f %%) md5 base %s new %s\n", b/nb, a/na, 100*(a/na*nb/b-1), bmd5, xmd5 > "/dev/stderr" }' "$OUT/p8k.txt" 2>/tmp/pick_why.txt)
SET=X=1; [ "$pick" = ALL ] && SET=$ALL
echo "pick: $pick ($SET); $(cat /tmp/pick_why.txt)" | tee "$OUT/pick.txt"
keep pick.txt
if [ -n "${SYNTH_LAYERS:-}" ]; then
  echo "== $SYNTH_LAYERS layers (80 GB card): no committed sweep; the A/B repeated"
  pb "$BIN" "$ALL"; pb "$BASE_BIN" X=1; pb "$BIN" "$ALL"; pb "$BASE_BIN" X=1
fi
sweep_whole "$SET"
if [ "$SET" != X=1 ]; then cp "$(verify_file "$ALL")" "$OUT/verify_pick.txt"; keep verify_pick.txt; fi
# S43_SHORT=1: stop here (a shorter call is less exposed to a machine taken back mid-call)
if [ -n "${S43_SHORT:-}" ]; then tar czf "$REAL_OUT/rest.tgz" -C "$OUT" . && echo "rest.tgz written (short)"; exit 0; fi
for c in 2048 65536; do
  DS4_KERNEL_CACHE="$(kc "$BASE_BIN")" BIN=$BASE_BIN prompt_ab X=1 $c | sed 's/^/base /'
  prompt_ab "$SET" $c | sed 's/^/new /'
done
# the rest of s42.sh: each switch alone, the bit-for-bit kernel rows, the gemm_qr fixtures,
# the expert kernel bench
pb "$BIN" DS4_HC_S16=1; pb "$BIN" DS4_EXP_Y16=1; pb "$BIN" DS4_QS_SPLIT=3; pb "$BASE_BIN" X=1
keep p8k.txt
kbench_hcp
fixtures_in "$QR"
kx "$BIN" 8192 "DS4_KBENCH_SKEW=1 DS4_QS_SPLIT=3" skew3
kx "$BIN" 2048 DS4_QS_SPLIT=3 uni3
tar czf "$REAL_OUT/rest.tgz" -C "$OUT" . && echo "rest.tgz written"
