//! GGML block formats: dequantization and f32-activation matvec/matmul (MODEL.md §5, §8).
//!
//! # Canonical reduction order
//! Every row dot product is defined as: decode the weights of each block exactly as
//! [`dequantize`] does, multiply by the activation in f32, and accumulate element `i` of the row
//! into lane `i % 32` of 32 f32 accumulators (in increasing `i`). The lanes are then reduced as
//! `v[k] = (a[k] + a[k+8]) + (a[k+16] + a[k+24])` for `k < 8`, then `w[k] = v[k] + v[k+4]`,
//! `u[k] = w[k] + w[k+2]`, result `u[0] + u[1]`. Products and sums are separate roundings (no
//! FMA), so the scalar path and the SIMD path produce the same bits, and `matmul` reuses the same
//! per-token accumulation so its rows equal `matvec` bit for bit. Rows are independent, so the
//! thread count never changes a result.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod blocks;
mod grid;
pub mod q8;

pub use q8::{act_format, matmul_q8, matvec_q8, quantize_q8_0, quantize_q8_k, Q8Acts, Q8KActs, Q8_0Acts};

use crate::types::GgmlType;
use rayon::prelude::*;


#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QuantError {
    #[error("{ty}: {n} values is not a whole number of {block}-value blocks")]
    PartialBlock { ty: GgmlType, n: usize, block: usize },
    #[error("{ty}: {n} values need {want} bytes but {got} were given")]
    Size { ty: GgmlType, n: usize, want: usize, got: usize },
    #[error("{ty}: not a floating-point weight format (no dequantization)")]
    Unsupported { ty: GgmlType },
}

/// Number of lanes of the canonical accumulation (see module docs).
pub const LANES: usize = 32;

/// Values decoded per step for the unblocked float types (a multiple of `LANES`).
const FLOAT_CHUNK: usize = 256;

fn check(ty: GgmlType, src_len: usize, n: usize) -> Result<(), QuantError> {
    if ty == GgmlType::I32 {
        return Err(QuantError::Unsupported { ty });
    }
    let bl = ty.block_len();
    if n % bl != 0 {
        return Err(QuantError::PartialBlock { ty, n, block: bl });
    }
    let want = n / bl * ty.block_bytes();
    if src_len != want {
        return Err(QuantError::Size { ty, n, want, got: src_len });
    }
    Ok(())
}

/// Decode `dst.len()` values of type `ty` from `src` (which must hold exactly that many).
pub fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), QuantError> {
    check(ty, src.len(), dst.len())?;
    match ty {
        GgmlType::F32 => blocks::f32_values(src, dst),
        GgmlType::F16 => blocks::f16_values(src, dst),
        GgmlType::Bf16 => blocks::bf16_values(src, dst),
        _ => {
            let (bl, bb) = (ty.block_len(), ty.block_bytes());
            let dec = block_decoder(ty);
            for (blk, out) in src.chunks_exact(bb).zip(dst.chunks_exact_mut(bl)) {
                dec(blk, out);
            }
        }
    }
    Ok(())
}

pub(crate) fn block_decoder(ty: GgmlType) -> fn(&[u8], &mut [f32]) {
    match ty {
        GgmlType::Q8_0 => blocks::q8_0,
        GgmlType::Q2K => blocks::q2_k,
        GgmlType::Q4K => blocks::q4_k,
        GgmlType::Q8K => blocks::q8_k,
        GgmlType::Iq2Xxs => blocks::iq2_xxs,
        GgmlType::F32 => blocks::f32_values,
        GgmlType::F16 => blocks::f16_values,
        GgmlType::Bf16 => blocks::bf16_values,
        GgmlType::I32 => unreachable!("I32 rejected by check()"),
    }
}

/// Walk one row in decode chunks: calls `f(start_index, values)` for consecutive pieces.
/// Chunk starts are multiples of `LANES`, so local lane `i % LANES` equals the global lane.
#[inline]
fn for_each_chunk(ty: GgmlType, row: &[u8], mut f: impl FnMut(usize, &[f32])) {
    let mut buf = [0f32; 256];
    let dec = block_decoder(ty);
    let float = ty.block_len() == 1;
    let chunk_bytes = if float { FLOAT_CHUNK * ty.block_bytes() } else { ty.block_bytes() };
    let mut start = 0;
    for blk in row.chunks(chunk_bytes) {
        // Float types: the last chunk may be partial; block types always divide evenly.
        let n = if float { blk.len() / ty.block_bytes() } else { ty.block_len() };
        dec(blk, &mut buf[..n]);
        f(start, &buf[..n]);
        start += n;
    }
}

/// Whether the AVX2 kernels are used (CPU support, unless `DS4_NO_SIMD` is set). Results are
/// identical either way; the switch exists for benchmarks and debugging.
pub fn simd_enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            avx2::available() && std::env::var_os("DS4_NO_SIMD").is_none()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Accumulate `w[i]*x[i]` into `acc[i % LANES]`.
#[inline(always)]
fn acc_chunk(acc: &mut [f32; LANES], w: &[f32], x: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd_enabled() {
        // SAFETY: CPU support checked by simd_enabled.
        return unsafe { avx2::acc_chunk(acc, w, &x[..w.len()]) };
    }
    acc_chunk_scalar(acc, w, x)
}

#[inline(always)]
fn acc_chunk_scalar(acc: &mut [f32; LANES], w: &[f32], x: &[f32]) {
    let x = &x[..w.len()];
    let mut wc = w.chunks_exact(LANES);
    let mut xc = x.chunks_exact(LANES);
    for (w, x) in (&mut wc).zip(&mut xc) {
        for k in 0..LANES {
            acc[k] += w[k] * x[k];
        }
    }
    for (k, (w, x)) in wc.remainder().iter().zip(xc.remainder()).enumerate() {
        acc[k] += w * x;
    }
}

/// The canonical lane reduction (module docs).
#[inline(always)]
pub(crate) fn reduce_lanes(a: &[f32; LANES]) -> f32 {
    let mut v = [0f32; 8];
    for k in 0..8 {
        v[k] = (a[k] + a[k + 8]) + (a[k + 16] + a[k + 24]);
    }
    let w = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    let u = [w[0] + w[2], w[1] + w[3]];
    u[0] + u[1]
}

/// Dot product of one encoded row with `x` in the canonical order.
#[inline]
pub fn dot_row(ty: GgmlType, row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if simd_enabled() && ty != GgmlType::Q8K {
        // SAFETY: CPU support checked by simd_enabled.
        return unsafe { avx2::dot_row(ty, row, x) };
    }
    dot_row_scalar(ty, row, x)
}

/// The portable definition of [`dot_row`] (tests compare the SIMD kernels against it).
#[doc(hidden)]
pub fn dot_row_scalar(ty: GgmlType, row: &[u8], x: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    for_each_chunk(ty, row, |s, w| acc_chunk_scalar(&mut acc, w, &x[s..]));
    reduce_lanes(&acc)
}

fn check_matrix(ty: GgmlType, w: &[u8], rows: usize, cols: usize) -> usize {
    assert!(ty != GgmlType::I32, "matvec: I32 is not a weight type");
    assert!(cols % ty.block_len() == 0, "matvec: {cols} columns is not a multiple of the {ty} block");
    let rb = ty.row_bytes(cols);
    assert!(
        w.len() == rows * rb,
        "matvec: {ty} weight has {} bytes, {rows}x{cols} needs {}",
        w.len(),
        rows * rb
    );
    rb
}

/// Rows per rayon task: roughly 64 KiB of weights, so small matrices do not fan out.
fn rows_per_task(row_bytes: usize) -> usize {
    (65536 / row_bytes.max(1)).max(1)
}

/// `y[r] = Σ_c W[r][c]·x[c]`; `w` holds `rows` rows of `ty.row_bytes(cols)` bytes.
///
/// Panics if the slice sizes disagree with `rows`/`cols` (a caller bug, not an input error:
/// tensor shapes are validated when the model is bound).
pub fn matvec(ty: GgmlType, w: &[u8], rows: usize, cols: usize, x: &[f32], y: &mut [f32]) {
    let rb = check_matrix(ty, w, rows, cols);
    assert_eq!(x.len(), cols, "matvec: x has {} values, expected {cols}", x.len());
    assert_eq!(y.len(), rows, "matvec: y has {} values, expected {rows}", y.len());
    let per = rows_per_task(rb);
    let run = |(ci, ys): (usize, &mut [f32])| {
        for (k, yr) in ys.iter_mut().enumerate() {
            let r = ci * per + k;
            *yr = dot_row(ty, &w[r * rb..(r + 1) * rb], x);
        }
    };
    if rows <= per {
        y.chunks_mut(per).enumerate().for_each(run);
    } else {
        y.par_chunks_mut(per).enumerate().for_each(run);
    }
}

/// Tokens processed together per decoded block in `matmul`.
const TOKEN_TILE: usize = 16;

/// `y[t][r] = Σ_c W[r][c]·x[t][c]` for `n` tokens (x: n×cols, y: n×rows, token-major).
/// Row `t` of the result is bit-identical to `matvec` on `x[t]`.
pub fn matmul(ty: GgmlType, w: &[u8], rows: usize, cols: usize, x: &[f32], n: usize, y: &mut [f32]) {
    let rb = check_matrix(ty, w, rows, cols);
    assert_eq!(x.len(), n * cols, "matmul: x has {} values, expected {n}x{cols}", x.len());
    assert_eq!(y.len(), n * rows, "matmul: y has {} values, expected {n}x{rows}", y.len());
    if n == 0 || rows == 0 {
        return;
    }
    if n == 1 {
        return matvec(ty, w, rows, cols, x, y);
    }
    // Row-major scratch (rows × n), transposed into y at the end.
    let mut tmp = vec![0f32; rows * n];
    let per = (rows_per_task(rb * n.min(TOKEN_TILE)) ).max(1);
    tmp.par_chunks_mut(per * n).enumerate().for_each(|(ci, out)| {
        let mut accs = [[0f32; LANES]; TOKEN_TILE];
        for (k, orow) in out.chunks_mut(n).enumerate() {
            let r = ci * per + k;
            let row = &w[r * rb..(r + 1) * rb];
            for t0 in (0..n).step_by(TOKEN_TILE) {
                let tn = TOKEN_TILE.min(n - t0);
                for a in accs[..tn].iter_mut() {
                    *a = [0f32; LANES];
                }
                for_each_chunk(ty, row, |s, wv| {
                    for (j, a) in accs[..tn].iter_mut().enumerate() {
                        let xt = &x[(t0 + j) * cols..(t0 + j + 1) * cols];
                        acc_chunk(a, wv, &xt[s..]);
                    }
                });
                for (j, a) in accs[..tn].iter().enumerate() {
                    orow[t0 + j] = reduce_lanes(a);
                }
            }
        }
    });
    for (r, trow) in tmp.chunks_exact(n).enumerate() {
        for (t, v) in trow.iter().enumerate() {
            y[t * rows + r] = *v;
        }
    }
}
