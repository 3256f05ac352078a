#!/usr/bin/env bash
# Build the binary and kernel cache of an earlier commit into .gpu/base/ (here, no GPU needed),
# so that one device call can run it against the current binary: machines lent at different
# times differ by up to ~3-5% on the same binary (bench/NOTES.md session 5), more than most
# changes, so a before/after figure only means something inside one call.
#   bash tools/gpu/base.sh REV      then carry .gpu/base and run e.g.  BASE_AB=3 bash tools/gpu/ab.sh
# BASE_DIR=.gpu/other puts a second one elsewhere (a three-way A/B).
set -euo pipefail
rev=${1:?usage: tools/gpu/base.sh REV}
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/${BASE_DIR:-.gpu/base}"
# already built for the same REV and BASE_APPLY (its REV file): nothing to do (BASE_FORCE=1 rebuilds)
if [ -z "${BASE_FORCE:-}" ] && [ -f "$out/ds4-bench" ] && [ -d "$out/kz" ] && [ "$(cat "$out/REV" 2>/dev/null)" = "$rev ${BASE_APPLY:-}" ]; then
  echo "$out: already $rev ${BASE_APPLY:-}"
  exit 0
fi
wt=$(mktemp -d)/base
git -C "$root" worktree add -f "$wt" "$rev" -q
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
nvrtc=$(ls "$root"/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 | head -1)
export CARGO_TARGET_DIR=${BASE_TARGET:-/tmp/ds4-base-target}
# BASE_APPLY="COMMIT:PATH ...": that commit's change to PATH applied on top (host-side fixes the
# base needs to run the same inputs: s43.sh's 28-layer file needs 94d4cd6's hparams.rs)
for cp in ${BASE_APPLY:-}; do git -C "$root" diff "${cp%%:*}^" "${cp%%:*}" -- "${cp#*:}" | (cd "$wt" && git apply); done
(cd "$wt" && cargo build --release -p ds4-cli -q)
rm -rf "$out" && mkdir -p "$out"
cp "$CARGO_TARGET_DIR/release/ds4-bench" "$out/" && strip "$out/ds4-bench"
(cd "$wt" && DS4_NVRTC_LIB="$nvrtc" DS4_KERNEL_CACHE="$out/kcache" cargo test --release -p ds4-engine --lib prebuild_kernel_cache -q -- --ignored)
echo "$rev ${BASE_APPLY:-}" > "$out/REV"
mkdir -p "$out/kz" && for f in "$out"/kcache/*; do gzip -c "$f" > "$out/kz/$(basename "$f").gz"; done && rm -rf "$out/kcache"
du -sh "$out"
