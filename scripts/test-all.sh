#!/usr/bin/env bash
# The whole test suite: what a newcomer runs and what CI (.ci/run) calls.
# Installs the Python packages the tests use as independent references (real DeepSeek V4
# tokenizer, official OpenAI/Anthropic SDKs, a CPU-only NVRTC to compile-check CUDA kernels)
# into ./.venv, then runs the Rust tests and the black-box server tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ ! -d ../shared/fixtures ]; then
  echo "error: ../shared/fixtures not found beside this checkout (the fixture models and specs live there)" >&2
  exit 2
fi

# Python references, installed once into .venv.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
export DS4_PYTHON="$root/.venv/bin/python"
export PATH="$root/.venv/bin:$PATH"

# libnvrtc from the nvidia-cuda-nvrtc wheel: lets the CUDA kernels compile-check without a GPU.
nvrtc_dir=$(ls -d "$root"/.venv/lib/python3*/site-packages/nvidia/cu*/lib 2>/dev/null | head -1 || true)
[ -n "$nvrtc_dir" ] || nvrtc_dir=$(ls -d "$root"/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | head -1 || true)
if [ -n "$nvrtc_dir" ]; then
  export DS4_NVRTC_DIR="$nvrtc_dir"
  export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

cargo build --workspace --bins --release
cargo test --workspace --release -- --test-threads=2

# Black-box tests of the release binaries with real client libraries.
export PYTHON="$DS4_PYTHON"
export DS4_SERVER_BIN="$root/target/release/ds4-server"
for t in crates/*/tests/py/run.sh; do
  echo "== $t"
  bash "$t"
done
echo "ALL TESTS PASSED"
