//! 8-bit activation quantization and integer dot kernels: the ds4 fast path (MODEL.md §5.5,
//! §5.6, §8.1). Q8_0 weights pair with Q8_0 activations (32-value blocks, f32 scale); Q2_K,
//! Q4_K and IQ2_XXS weights pair with Q8_K activations (256-value blocks with 16-value sums).
//!
//! Inner sums are exact integers; the per-block f32 combination is fixed (below), so the
//! scalar and AVX2 kernels return identical bits and `matmul_q8` rows equal `matvec_q8`.
//! * Q8_0:    `sum += (d_w·d_x) · isum`
//! * Q2_K/Q4_K: `sum += (d_x·d)·Σ sc·isum − (d_x·dmin)·Σ m·bsum`
//! * IQ2_XXS: `sum += (d·d_x)·Σ (2·ls+1)·isum`, then `sum *= 0.125`
//!
//! Quantized activations never reach −128 (|q| ≤ 127 by construction), which the AVX2 sign
//! trick relies on.

use super::blocks::{f16_at, q4k_scale_min, u32_at, KSIGNS};
use super::grid::IQ2XXS_GRID;
use crate::types::GgmlType;
use rayon::prelude::*;

/// Q8_0 activations: per 32 values an f32 scale and 32 i8 codes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Q8_0Acts {
    pub d: Vec<f32>,
    pub q: Vec<i8>,
}

/// Q8_K activations: per 256 values an f32 scale, 256 i8 codes and 16 sums of 16 codes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Q8KActs {
    pub d: Vec<f32>,
    pub q: Vec<i8>,
    pub bsums: Vec<i16>,
}

#[inline]
fn code(v: f32) -> i8 {
    v.round_ties_even().clamp(-128.0, 127.0) as i8
}

/// MODEL.md §5.6: `d = amax/127` (f32), `q = clamp(rne(x/d))`. `x.len()` must be a multiple of 32.
pub fn quantize_q8_0(x: &[f32]) -> Q8_0Acts {
    assert!(x.len().is_multiple_of(32), "quantize_q8_0: {} values is not a multiple of 32", x.len());
    let mut out = Q8_0Acts { d: Vec::with_capacity(x.len() / 32), q: Vec::with_capacity(x.len()) };
    for b in x.chunks_exact(32) {
        let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.d.push(d);
        out.q.extend(b.iter().map(|&v| code(v * id)));
    }
    out
}

/// MODEL.md §5.5: scale from the signed element of largest magnitude (first on ties),
/// `iscale = −127/vmax`, `q = clamp(rne(iscale·x))`, `d = 1/iscale`. Multiple of 256 values.
pub fn quantize_q8_k(x: &[f32]) -> Q8KActs {
    assert!(x.len().is_multiple_of(256), "quantize_q8_k: {} values is not a multiple of 256", x.len());
    let nb = x.len() / 256;
    let mut out = Q8KActs { d: Vec::with_capacity(nb), q: Vec::with_capacity(x.len()), bsums: Vec::with_capacity(16 * nb) };
    for b in x.chunks_exact(256) {
        let mut vmax = 0f32;
        for &v in b {
            if v.abs() > vmax.abs() {
                vmax = v;
            }
        }
        if vmax == 0.0 {
            out.d.push(0.0);
            out.q.extend(std::iter::repeat_n(0, 256));
            out.bsums.extend(std::iter::repeat_n(0, 16));
            continue;
        }
        let iscale = -127.0 / vmax;
        let start = out.q.len();
        out.q.extend(b.iter().map(|&v| code(iscale * v)));
        for s in out.q[start..].chunks_exact(16) {
            out.bsums.push(s.iter().map(|&q| q as i16).sum());
        }
        out.d.push(1.0 / iscale);
    }
    out
}

/// Which activation format a weight type uses on the fast path (None: f32 activations).
pub fn act_format(ty: GgmlType) -> Option<GgmlType> {
    match ty {
        GgmlType::Q8_0 => Some(GgmlType::Q8_0),
        GgmlType::Q2K | GgmlType::Q4K | GgmlType::Iq2Xxs => Some(GgmlType::Q8K),
        _ => None,
    }
}

pub(crate) fn dot_q8_0_scalar(row: &[u8], xq: &Q8_0Acts, blk0: usize) -> f32 {
    let mut sum = 0f32;
    for (bi, b) in row.chunks_exact(34).enumerate() {
        let i = blk0 + bi;
        let y = &xq.q[32 * i..32 * i + 32];
        let isum: i32 = (0..32).map(|k| b[2 + k] as i8 as i32 * y[k] as i32).sum();
        sum += (f16_at(b, 0) * xq.d[i]) * isum as f32;
    }
    sum
}

pub(crate) fn dot_q8k_scalar(ty: GgmlType, row: &[u8], xq: &Q8KActs, blk0: usize) -> f32 {
    let mut sum = 0f32;
    match ty {
        GgmlType::Q2K => {
            for (bi, b) in row.chunks_exact(84).enumerate() {
                let i = blk0 + bi;
                let y = &xq.q[256 * i..256 * i + 256];
                let (mut isum, mut summ) = (0i32, 0i32);
                for h in 0..2 {
                    for s in 0..4 {
                        for half in 0..2 {
                            let j = 8 * h + 2 * s + half;
                            let mut t = 0i32;
                            for l in 16 * half..16 * half + 16 {
                                let q = ((b[16 + 32 * h + l] >> (2 * s)) & 3) as i32;
                                t += q * y[128 * h + 32 * s + l] as i32;
                            }
                            isum += (b[j] & 15) as i32 * t;
                        }
                    }
                }
                for (j, &sc) in b[..16].iter().enumerate() {
                    summ += (sc >> 4) as i32 * xq.bsums[16 * i + j] as i32;
                }
                let yd = xq.d[i];
                sum += (yd * f16_at(b, 80)) * isum as f32 - (yd * f16_at(b, 82)) * summ as f32;
            }
        }
        GgmlType::Q4K => {
            for (bi, b) in row.chunks_exact(144).enumerate() {
                let i = blk0 + bi;
                let y = &xq.q[256 * i..256 * i + 256];
                let (mut isum, mut summ) = (0i32, 0i32);
                for j in 0..8 {
                    let (sc, m) = q4k_scale_min(&b[4..16], j);
                    let shift = 4 * (j & 1);
                    let t: i32 = (0..32).map(|l| ((b[16 + 32 * (j / 2) + l] >> shift) & 15) as i32 * y[32 * j + l] as i32).sum();
                    isum += sc as i32 * t;
                    summ += m as i32 * (xq.bsums[16 * i + 2 * j] as i32 + xq.bsums[16 * i + 2 * j + 1] as i32);
                }
                let yd = xq.d[i];
                sum += (yd * f16_at(b, 0)) * isum as f32 - (yd * f16_at(b, 2)) * summ as f32;
            }
        }
        GgmlType::Iq2Xxs => {
            for (bi, b) in row.chunks_exact(66).enumerate() {
                let i = blk0 + bi;
                let y = &xq.q[256 * i..256 * i + 256];
                let mut bsum = 0i32;
                for sb in 0..8 {
                    let a = u32_at(b, 2 + 8 * sb);
                    let s = u32_at(b, 6 + 8 * sb);
                    let mut t = 0i32;
                    for k in 0..4 {
                        let g = IQ2XXS_GRID[((a >> (8 * k)) & 255) as usize].to_le_bytes();
                        let signs = KSIGNS[((s >> (7 * k)) & 127) as usize];
                        for e in 0..8 {
                            let v = g[e] as i32 * y[32 * sb + 8 * k + e] as i32;
                            t += if (signs >> e) & 1 != 0 { -v } else { v };
                        }
                    }
                    bsum += (2 * (s >> 28) as i32 + 1) * t;
                }
                sum += (f16_at(b, 0) * xq.d[i]) * bsum as f32;
            }
            sum *= 0.125;
        }
        _ => panic!("{ty} weights do not use Q8_K activations"),
    }
    sum
}

/// Activations quantized for one of the two formats.
#[derive(Clone, Debug, PartialEq)]
pub enum Q8Acts {
    Q8_0(Q8_0Acts),
    Q8K(Q8KActs),
}

impl Q8Acts {
    /// Quantize `x` in the format `ty` weights need (see [`act_format`]).
    pub fn for_weights(ty: GgmlType, x: &[f32]) -> Q8Acts {
        match act_format(ty) {
            Some(GgmlType::Q8_0) => Q8Acts::Q8_0(quantize_q8_0(x)),
            Some(GgmlType::Q8K) => Q8Acts::Q8K(quantize_q8_k(x)),
            _ => panic!("{ty} has no 8-bit activation path"),
        }
    }
    fn n_values(&self) -> usize {
        match self {
            Q8Acts::Q8_0(a) => a.q.len(),
            Q8Acts::Q8K(a) => a.q.len(),
        }
    }
}

/// One row against the activations of token starting at block `blk0`.
pub fn dot_row_q8(ty: GgmlType, row: &[u8], xq: &Q8Acts, blk0: usize) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if super::simd_enabled() {
        // SAFETY: `simd_enabled` checked the CPU features.
        return unsafe {
            match xq {
                Q8Acts::Q8_0(a) => super::avx2::dot_q8_0(row, a, blk0),
                Q8Acts::Q8K(a) => super::avx2::dot_q8k(ty, row, a, blk0),
            }
        };
    }
    dot_row_q8_scalar(ty, row, xq, blk0)
}

#[doc(hidden)]
pub fn dot_row_q8_scalar(ty: GgmlType, row: &[u8], xq: &Q8Acts, blk0: usize) -> f32 {
    match xq {
        Q8Acts::Q8_0(a) => dot_q8_0_scalar(row, a, blk0),
        Q8Acts::Q8K(a) => dot_q8k_scalar(ty, row, a, blk0),
    }
}

fn check(ty: GgmlType, w: &[u8], rows: usize, cols: usize, xq: &Q8Acts, n: usize) -> usize {
    let want = act_format(ty).unwrap_or_else(|| panic!("{ty} has no 8-bit activation path"));
    let ok = matches!((want, xq), (GgmlType::Q8_0, Q8Acts::Q8_0(_)) | (GgmlType::Q8K, Q8Acts::Q8K(_)));
    assert!(ok, "{ty} weights need {want} activations");
    let rb = ty.row_bytes(cols);
    assert_eq!(w.len(), rows * rb, "matvec_q8: {ty} weight has {} bytes, {rows}x{cols} needs {}", w.len(), rows * rb);
    assert_eq!(xq.n_values(), n * cols, "matvec_q8: activations hold {} values, expected {n}x{cols}", xq.n_values());
    rb
}

/// `y[r] = Σ_c W[r][c]·xq[c]` with quantized activations (one token).
pub fn matvec_q8(ty: GgmlType, w: &[u8], rows: usize, cols: usize, xq: &Q8Acts, y: &mut [f32]) {
    let rb = check(ty, w, rows, cols, xq, 1);
    assert_eq!(y.len(), rows);
    super::for_each_row(y, super::rows_per_task(rb), |r| dot_row_q8(ty, &w[r * rb..(r + 1) * rb], xq, 0));
}

/// `n` tokens (`xq` holds n×cols quantized values, token-major); y is n×rows. Row `t` is
/// bit-identical to `matvec_q8` on token `t`'s activations.
pub fn matmul_q8(ty: GgmlType, w: &[u8], rows: usize, cols: usize, xq: &Q8Acts, n: usize, y: &mut [f32]) {
    let rb = check(ty, w, rows, cols, xq, n);
    assert_eq!(y.len(), n * rows);
    if n == 0 || rows == 0 {
        return;
    }
    let blocks_per_token = cols / act_format(ty).unwrap().block_len();
    let mut tmp = vec![0f32; rows * n];
    let per = (65536 / rb.max(1)).max(1);
    tmp.par_chunks_mut(per * n).enumerate().for_each(|(ci, out)| {
        for (k, orow) in out.chunks_mut(n).enumerate() {
            let r = ci * per + k;
            let row = &w[r * rb..(r + 1) * rb];
            for (t, o) in orow.iter_mut().enumerate() {
                *o = dot_row_q8(ty, row, xq, t * blocks_per_token);
            }
        }
    });
    for (r, trow) in tmp.chunks_exact(n).enumerate() {
        for (t, v) in trow.iter().enumerate() {
            y[t * rows + r] = *v;
        }
    }
}
