#!/usr/bin/env bash
# Device-side check of the ds4 CLI on CUDA (run through the device tool; not part of
# `cargo test`). Prepare on the dev machine (paths are git-ignored via .git/info/exclude):
#   cargo build --release -p ds4-cli --bin ds4 && mkdir -p .gpu/cli && cp target/release/ds4 .gpu/cli/
#   copy ../shared/fixtures/model/{tiny-f32,vocab-f16} (model.gguf, short/tokens.i32.bin,
#   short/prefill.*, tiny-f32/medium/{tokens.i32.bin,prefill.exact.logits.f32.bin}) to .gpu/cli/fix/
# then run `bash crates/ds4-cli/tests/gpu/cli_check.sh` with carry [".gpu/cli"].
# Prints the max |logit error| of --dump-logits against the fixtures per mode, CPU-vs-CUDA
# greedy text, the demo on the auto-selected backend, --dump-logprobs and a scripted chat.
set -u
cd "$(dirname "$0")/../../../.."
. tools/gpu/env.sh
B=.gpu/cli/ds4
F=.gpu/cli/fix
nvidia-smi --query-gpu=name --format=csv,noheader
ids() { python3 -c "import struct,sys;b=open(sys.argv[1],'rb').read();print(','.join(str(x) for x in struct.unpack('<%di'%(len(b)//4),b)))" "$1"; }
cmpf() { python3 - "$@" <<'PY'
import struct,sys
a=open(sys.argv[1],'rb').read(); b=open(sys.argv[2],'rb').read()
a=struct.unpack('<%df'%(len(a)//4),a); b=struct.unpack('<%df'%(len(b)//4),b)
assert len(a)==len(b), (len(a),len(b))
d=[abs(x-y) for x,y in zip(a,b)]; m=max(d); i=d.index(m)
print(f"{sys.argv[3]}: n={len(a)} max|d|={m:.3e} at {i} mean={sum(d)/len(d):.3e}")
PY
}
for mode in "" "--quality" "--quality --decode" "--quality --prefill-chunk 3"; do
  $B --cuda -m $F/tiny-f32/model.gguf --no-qat --tokens $(ids $F/tiny-f32/short/tokens.i32.bin) --dump-logits $OUT/t.f32 $mode 2>$OUT/err.txt || { cat $OUT/err.txt; }
  cmpf $OUT/t.f32 $F/tiny-f32/short/prefill.exact.logits.f32.bin "tiny short exact [$mode]"
done
$B --cuda -m $F/tiny-f32/model.gguf --no-qat --quality --tokens $(ids $F/tiny-f32/medium/tokens.i32.bin) --dump-logits $OUT/m.f32 --prefill-chunk 130 2>$OUT/err.txt || cat $OUT/err.txt
cmpf $OUT/m.f32 $F/tiny-f32/medium/prefill.exact.logits.f32.bin "tiny medium exact chunk130"
$B --cuda -m $F/tiny-f32/model.gguf --quality --tokens $(ids $F/tiny-f32/short/tokens.i32.bin) --dump-logits $OUT/o.f32 2>$OUT/err.txt || cat $OUT/err.txt
cmpf $OUT/o.f32 $F/tiny-f32/short/prefill.official.logits.f32.bin "tiny short official"
echo "== one-shot vocab-f16 greedy, cpu vs cuda"
$B --cpu -m $F/vocab-f16/model.gguf --nothink -p "Tell me a story" -n 12 --temp 0 > $OUT/cpu.txt 2>$OUT/cpu.err; tail -1 $OUT/cpu.err
$B --cuda --quality -m $F/vocab-f16/model.gguf --nothink -p "Tell me a story" -n 12 --temp 0 > $OUT/cuda.txt 2>$OUT/cuda.err; tail -3 $OUT/cuda.err
cmp -s $OUT/cpu.txt $OUT/cuda.txt && echo "greedy text identical" || { echo "greedy text differs"; od -c $OUT/cpu.txt | head; od -c $OUT/cuda.txt | head; }
echo "== demo on cuda (auto backend)"
$B --demo -p Hello -n 30 --seed 3 > $OUT/demo.txt 2>$OUT/demo.err; echo rc=$?; cat $OUT/demo.err
$B --demo -p Hello -n 30 --seed 3 --cpu > $OUT/demo_cpu.txt 2>/dev/null
cmp -s $OUT/demo.txt $OUT/demo_cpu.txt && echo "demo cuda==cpu text" || echo "demo cuda!=cpu text (fast kernels / sampling near ties)"
echo "== logprobs on cuda"
$B --cuda -m $F/vocab-f16/model.gguf --no-qat --quality --prompt-tokens $(ids $F/vocab-f16/short/tokens.i32.bin) -n 3 --dump-logprobs $OUT/lp.json --logprobs-top-k 3 2>/dev/null; head -c 600 $OUT/lp.json; echo
echo "== interactive on cuda through a pty (script)"
printf 'Hello there\n/nothink\nagain please\n/quit\n' > $OUT/in.txt
timeout 60 script -qfec "$B --demo -n 8 --seed 5 --trace $OUT/chat.trace < $OUT/in.txt" /dev/null > $OUT/chat.out 2>&1; echo rc=$?
grep -E "reused_tokens|prefilled_tokens|think_mode" $OUT/chat.trace
