#!/bin/sh
# Host (no GPU) check of the int8 decode group-dots (q8.cuh mvq_gdot) against the trusted
# f32 ones (matvec.cuh mv2_gdot) and an f64 dot of the dequantized weights (matmul.cuh deq8):
# the kernels' own source is compiled by g++ with small shims for the CUDA intrinsics.
# Expect "mvq vs f64(quantized x)" ~1e-8 (the integer math is exact) and "mvq vs f64(x)"
# ~1e-2 (8-bit activations), then OK.
set -e
K=$(dirname "$0")/../../crates/ds4-engine/src/cuda/kernels
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp "$(dirname "$0")/emu.cpp" "$K/iq2xxs_grid.inc" "$T/"
mv "$T/iq2xxs_grid.inc" "$T/grid.inc"
awk '/^#define T_F32/{f=1} f&&/^\/\/ -----/{exit} f' "$K/matmul.cuh" | sed 's/#include "iq2xxs_grid.inc"/#include "grid.inc"/' > "$T/p1.h"
grep '^template <> struct XG\|^template <int TY> struct XG' "$K/matmul.cuh" > "$T/p2.h"
awk '/^__device__ __forceinline__ float dot4v/{f=1} /^template <int TY, int R>/{f=0} f' "$K/matvec.cuh" > "$T/p3.h"
awk '/^\/\/ Byte mask 0xFF/{f=1} /^template <int TY, int R>/{f=0} f' "$K/q8.cuh" > "$T/p4.h"
g++ -O1 -std=c++17 -w "$T/emu.cpp" -o "$T/emu"
"$T/emu"
