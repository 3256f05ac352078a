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
//!
//! # Kernels
//! With AVX2+F16C (checked at run time) `matvec` decodes each block in registers, 8 values at a
//! time, and accumulates them straight into the four 8-wide lane registers; `matmul` decodes
//! 256-value chunks of 8 rows once per 16 tokens into a small buffer and accumulates 2-row ×
//! 4-token register tiles; `dequantize` uses the same SIMD decoders. Every decoder performs the
//! scalar decoder's f32 operations (tables hold only exact values: grid magnitudes, sign masks,
//! and per-sub-block `dl·q − ml` values computed with the scalar operations), so all paths give
//! the scalar path's bits. `DS4_NO_SIMD` selects the portable path.

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
    if !n.is_multiple_of(bl) {
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
    decode_values(ty, src, dst, simd_enabled());
    Ok(())
}

/// Decode whole blocks (float types: any count); sizes already checked by the caller. The
/// SIMD decoders produce the scalar decoders' bits.
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn decode_values(ty: GgmlType, src: &[u8], dst: &mut [f32], simd: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: CPU support checked by simd_enabled.
        return unsafe { avx2::decode(ty, src, dst) };
    }
    decode_values_scalar(ty, src, dst)
}

fn decode_values_scalar(ty: GgmlType, src: &[u8], dst: &mut [f32]) {
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

/// Accumulate `w[i]*x[i]` into `acc[i % LANES]` (portable definition).
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
    if simd_enabled() && ty != GgmlType::Q8K && ty != GgmlType::I32 {
        // The kernels index x without bounds checks.
        let n = row.len() / ty.block_bytes() * ty.block_len();
        assert!(x.len() >= n, "dot_row: {} bytes of {ty} need {n} activations, got {}", row.len(), x.len());
        // SAFETY: CPU support checked by simd_enabled, x long enough for the row.
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
    assert!(cols.is_multiple_of(ty.block_len()), "matvec: {cols} columns is not a multiple of the {ty} block");
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
    for_each_row(y, rows_per_task(rb), |r| dot_row(ty, &w[r * rb..(r + 1) * rb], x));
}

/// `y[r] = f(r)` for every row, in tasks of `per` rows (serially when one task covers all):
/// the row-parallel driver of the matvec kernels. Each row is computed alone, so results do not
/// depend on the split.
pub(crate) fn for_each_row(y: &mut [f32], per: usize, f: impl Fn(usize) -> f32 + Sync) {
    let run = |(ci, ys): (usize, &mut [f32])| {
        for (k, yr) in ys.iter_mut().enumerate() {
            *yr = f(ci * per + k);
        }
    };
    if y.len() <= per {
        y.chunks_mut(per).enumerate().for_each(run);
    } else {
        y.par_chunks_mut(per).enumerate().for_each(run);
    }
}

/// Tokens sharing one decode of a weight chunk in `matmul` (accumulators: 32 lanes each).
const TOKEN_TILE: usize = 16;
/// Rows decoded together in `matmul`, so each token's activation chunk is reused from L1.
const ROW_TILE: usize = 8;
/// Tokens per register tile of the SIMD matmul kernel (2 rows × MT tokens of accumulators).
const MT: usize = 4;
/// Values per decoded weight chunk in `matmul` (a multiple of every block length and of `LANES`).
const MM_CHUNK: usize = 256;

/// Accumulate decoded chunks (`rn` rows of `m` values in `buf`, stride `MM_CHUNK`) into the
/// lanes of `tn` tokens (`accs[r * TOKEN_TILE + t]`); `xc` holds the tokens' `m` activations
/// of this chunk back to back. 2×MT tiles share weight and activation loads; the chunk's
/// activations are reused from L1 across the rows.
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn acc_tile(accs: &mut [[f32; LANES]], buf: &[f32], rn: usize, m: usize, xc: &[f32], tn: usize, simd: bool) {
    let xs = |t: usize| &xc[t * m..][..m];
    #[cfg(target_arch = "x86_64")]
    if simd {
        let wr = |r: usize| &buf[r * MM_CHUNK..][..m];
        let mut t = 0;
        // 2×MT register tiles, then token pairs / single tokens and the odd row.
        while t + MT <= tn {
            let xq: [&[f32]; MT] = std::array::from_fn(|j| xs(t + j));
            let mut r = 0;
            while r + 2 <= rn {
                // SAFETY: CPU support checked by the caller (simd).
                unsafe { avx2::acc_chunk_2xt::<MT>(&mut accs[r * TOKEN_TILE + t..], TOKEN_TILE, [wr(r), wr(r + 1)], xq) };
                r += 2;
            }
            if r < rn {
                for (j, xj) in xq.iter().enumerate() {
                    // SAFETY: as above.
                    unsafe { avx2::acc_chunk(&mut accs[r * TOKEN_TILE + t + j], wr(r), xj) };
                }
            }
            t += MT;
        }
        while t + 1 < tn {
            let (x0, x1) = (xs(t), xs(t + 1));
            for r in 0..rn {
                let (a0, a1) = accs[r * TOKEN_TILE + t..].split_at_mut(1);
                // SAFETY: as above.
                unsafe { avx2::acc_chunk2(&mut a0[0], &mut a1[0], wr(r), x0, x1) };
            }
            t += 2;
        }
        if t < tn {
            for r in 0..rn {
                // SAFETY: as above.
                unsafe { avx2::acc_chunk(&mut accs[r * TOKEN_TILE + t], wr(r), xs(t)) };
            }
        }
        return;
    }
    for t in 0..tn {
        for r in 0..rn {
            acc_chunk_scalar(&mut accs[r * TOKEN_TILE + t], &buf[r * MM_CHUNK..][..m], xs(t));
        }
    }
}

/// Activations rearranged so that each (token tile, chunk) is contiguous: token `t0 + t`'s
/// values `s..s+m` of the tile starting at `t0` lie at `t0*cols + s*tn + t*m`. Token rows are
/// `cols` floats apart, a multiple of 4 KiB for the usual widths, so unpacked the same chunk of
/// every token maps to one L1 set and the tile's activations evict each other.
fn pack_chunks(x: &[f32], n: usize, cols: usize) -> Vec<f32> {
    let mut xp = vec![0f32; n * cols];
    for t0 in (0..n).step_by(TOKEN_TILE) {
        let tn = TOKEN_TILE.min(n - t0);
        for s in (0..cols).step_by(MM_CHUNK) {
            let m = MM_CHUNK.min(cols - s);
            for t in 0..tn {
                let at = t0 * cols + s * tn + t * m;
                xp[at..at + m].copy_from_slice(&x[(t0 + t) * cols + s..][..m]);
            }
        }
    }
    xp
}

/// `y[t][r] = Σ_c W[r][c]·x[t][c]` for `n` tokens (x: n×cols, y: n×rows, token-major).
/// Row `t` of the result is bit-identical to `matvec` on `x[t]`.
///
/// Each weight chunk (256 values of `ROW_TILE` rows) is decoded once per `TOKEN_TILE` tokens
/// with the same decoders as `dequantize`, then every token accumulates it in the canonical
/// lanes (chunks in column order), so each (row, token) sum sees the same products in the same
/// order as `matvec`.
pub fn matmul(ty: GgmlType, w: &[u8], rows: usize, cols: usize, x: &[f32], n: usize, y: &mut [f32]) {
    check_matrix(ty, w, rows, cols);
    assert_eq!(x.len(), n * cols, "matmul: x has {} values, expected {n}x{cols}", x.len());
    assert_eq!(y.len(), n * rows, "matmul: y has {} values, expected {n}x{rows}", y.len());
    if n == 0 || rows == 0 {
        return;
    }
    if n == 1 {
        return matvec(ty, w, rows, cols, x, y);
    }
    matmul_tiles(ty, w, rows, cols, x, n, y, simd_enabled())
}

/// The tiled `matmul` body; `simd` selects the kernels (tests run both).
#[allow(clippy::too_many_arguments)]
fn matmul_tiles(ty: GgmlType, w: &[u8], rows: usize, cols: usize, x: &[f32], n: usize, y: &mut [f32], simd: bool) {
    let rb = ty.row_bytes(cols);
    let (bl, bb) = (ty.block_len(), ty.block_bytes());
    let xp = pack_chunks(x, n, cols);
    // Row-major scratch (rows × n), transposed into y at the end.
    let mut tmp = vec![0f32; rows * n];
    // About 64 KiB of weights per task (more tokens only add work per byte), whole row tiles.
    let per = rows_per_task(rb).next_multiple_of(ROW_TILE);
    tmp.par_chunks_mut(per * n).enumerate().for_each(|(ci, out)| {
        let r_first = ci * per;
        let nr = out.len() / n;
        let mut buf = [0f32; ROW_TILE * MM_CHUNK];
        let mut accs = vec![[0f32; LANES]; ROW_TILE * TOKEN_TILE];
        for r0 in (0..nr).step_by(ROW_TILE) {
            let rn = ROW_TILE.min(nr - r0);
            for t0 in (0..n).step_by(TOKEN_TILE) {
                let tn = TOKEN_TILE.min(n - t0);
                for a in accs.iter_mut() {
                    *a = [0f32; LANES];
                }
                let xt = &xp[t0 * cols..(t0 + tn) * cols];
                let mut s = 0;
                while s < cols {
                    let m = MM_CHUNK.min(cols - s);
                    for r in 0..rn {
                        let row = &w[(r_first + r0 + r) * rb..][..rb];
                        decode_values(ty, &row[s / bl * bb..(s + m) / bl * bb], &mut buf[r * MM_CHUNK..][..m], simd);
                    }
                    acc_tile(&mut accs, &buf, rn, m, &xt[s * tn..][..m * tn], tn, simd);
                    s += m;
                }
                for r in 0..rn {
                    for t in 0..tn {
                        out[(r0 + r) * n + t0 + t] = reduce_lanes(&accs[r * TOKEN_TILE + t]);
                    }
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

#[cfg(test)]
mod tests {
    //! The SIMD decoders and the tiled matmul against the portable definitions, bit for bit
    //! (the integration tests in tests/quant.rs check the public API against f64 references,
    //! fixtures and the canonical order, with whichever kernels the CPU selects).
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| (self.next() >> 24) as u8).collect()
        }
        fn x(&mut self, n: usize) -> Vec<f32> {
            (0..n).map(|_| (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect()
        }
    }

    const TYPES: [GgmlType; 8] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Bf16,
        GgmlType::Q8_0,
        GgmlType::Q2K,
        GgmlType::Q4K,
        GgmlType::Iq2Xxs,
        GgmlType::Q8K,
    ];

    /// Random bytes with small, finite f16 scales; `raw` keeps whatever the bytes say (NaN,
    /// inf and subnormal scales included).
    fn blocks(rng: &mut Rng, ty: GgmlType, n: usize, raw: bool) -> Vec<u8> {
        let mut b = rng.bytes(n / ty.block_len() * ty.block_bytes());
        if raw {
            return b;
        }
        let h = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
        let at: &[usize] = match ty {
            GgmlType::Q8_0 | GgmlType::Iq2Xxs => &[0],
            GgmlType::Q4K => &[0, 2],
            GgmlType::Q2K => &[80, 82],
            _ => &[],
        };
        for blk in b.chunks_exact_mut(ty.block_bytes()) {
            for &a in at {
                blk[a..a + 2].copy_from_slice(&h(0.01));
            }
        }
        match ty {
            GgmlType::F16 => b.chunks_exact_mut(2).for_each(|c| c.copy_from_slice(&h((c[0] as f32 - 128.0) / 64.0))),
            GgmlType::Bf16 | GgmlType::F32 => {} // any bit pattern is a value (NaNs compared as bits)
            _ => {}
        }
        b
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn simd_decode_equals_scalar() {
        if !avx2::available() {
            return;
        }
        let mut rng = Rng(0x1234_5678_9abc);
        for ty in TYPES {
            let n = if ty.block_len() == 1 { 1000 } else { 16 * ty.block_len() };
            for raw in [false, true] {
                let src = blocks(&mut rng, ty, n, raw);
                let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
                decode_values(ty, &src, &mut a, true);
                decode_values_scalar(ty, &src, &mut b);
                for i in 0..n {
                    // NaN payloads may differ: `half` quiets BF16 NaNs, the shift keeps them.
                    let same = a[i].to_bits() == b[i].to_bits() || (a[i].is_nan() && b[i].is_nan());
                    assert!(same, "{ty} raw={raw} value {i}: {} vs {}", a[i], b[i]);
                }
            }
            for fill in [0u8, 0x7f, 0x80, 0xff] {
                let src = vec![fill; ty.row_bytes(if ty.block_len() == 1 { 40 } else { ty.block_len() })];
                let n = src.len() / ty.block_bytes() * ty.block_len();
                let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
                decode_values(ty, &src, &mut a, true);
                decode_values_scalar(ty, &src, &mut b);
                for i in 0..n {
                    let same = a[i].to_bits() == b[i].to_bits() || (a[i].is_nan() && b[i].is_nan());
                    assert!(same, "{ty} fill {fill:#x} value {i}: {} vs {}", a[i], b[i]);
                }
            }
        }
    }

    /// Every (token, row) of both matmul kernel sets equals the scalar row dot, for shapes that
    /// leave partial row and token tiles and (float types) a partial last chunk.
    #[test]
    fn matmul_tiles_equal_scalar_dots() {
        let mut rng = Rng(0xfeed_beef);
        for ty in TYPES {
            let cols = match ty.block_len() {
                1 => 300,
                32 => 352,
                _ => 512,
            };
            let rows = 2 * ROW_TILE + 3;
            let w = blocks(&mut rng, ty, rows * cols, false);
            let rb = ty.row_bytes(cols);
            for n in [2usize, 3, TOKEN_TILE + 3] {
                let x = rng.x(n * cols);
                let mut modes = vec![false];
                #[cfg(target_arch = "x86_64")]
                if avx2::available() {
                    modes.push(true);
                }
                for simd in modes {
                    let mut y = vec![0f32; n * rows];
                    matmul_tiles(ty, &w, rows, cols, &x, n, &mut y, simd);
                    for t in 0..n {
                        for r in 0..rows {
                            let want = dot_row_scalar(ty, &w[r * rb..(r + 1) * rb], &x[t * cols..(t + 1) * cols]);
                            let got = y[t * rows + r];
                            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                            assert!(same, "{ty} simd={simd} n={n} token {t} row {r}: {got} vs {want}");
                        }
                    }
                }
            }
        }
    }
}
