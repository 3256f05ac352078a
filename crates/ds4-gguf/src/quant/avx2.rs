//! AVX2 (+F16C) kernels. Each reproduces the scalar definition bit for bit: weights are decoded
//! with the same f32 operations as `blocks.rs`, products and sums are separate roundings (no
//! FMA), and the four 8-wide accumulators are exactly lanes 0-7, 8-15, 16-23, 24-31 of the
//! canonical 32-lane order. Integer dot kernels are exact, so they equal the scalar ones too.

#![allow(clippy::missing_safety_doc)]

use super::blocks::{f16_at, q4k_scale_min, u32_at};
use super::grid::IQ2XXS_GRID;
use super::q8::{Q8_0Acts, Q8KActs};
use super::{reduce_lanes, LANES};
use crate::types::GgmlType;
use std::arch::x86_64::*;

/// Whether the running CPU has what these kernels use (cached by std).
#[inline]
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")
}

#[inline(always)]
unsafe fn finish(acc: [__m256; 4]) -> f32 {
    let mut a = [0f32; LANES];
    for k in 0..4 {
        _mm256_storeu_ps(a.as_mut_ptr().add(8 * k), acc[k]);
    }
    reduce_lanes(&a)
}

#[inline(always)]
unsafe fn madd(acc: __m256, w: __m256, x: *const f32) -> __m256 {
    _mm256_add_ps(acc, _mm256_mul_ps(w, _mm256_loadu_ps(x)))
}

/// i8 × 8 (at `p`) → f32 × 8.
#[inline(always)]
unsafe fn i8x8(p: *const u8) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p as *const __m128i)))
}

/// Low 8 bytes of `v` as u8 → f32 × 8.
#[inline(always)]
unsafe fn u8x8(v: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))
}

/// Canonical-order dot of an encoded row with `x` (types with an AVX2 decoder).
#[target_feature(enable = "avx2,f16c")]
pub unsafe fn dot_row(ty: GgmlType, row: &[u8], x: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 4];
    let xp = x.as_ptr();
    match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => {
            let n = row.len() / ty.block_bytes();
            let full = n / LANES * LANES;
            let rp = row.as_ptr();
            let mut i = 0;
            while i < full {
                for k in 0..4 {
                    let e = i + 8 * k;
                    let w = match ty {
                        GgmlType::F32 => _mm256_loadu_ps(rp.add(4 * e) as *const f32),
                        GgmlType::F16 => _mm256_cvtph_ps(_mm_loadu_si128(rp.add(2 * e) as *const __m128i)),
                        _ => _mm256_castsi256_ps(_mm256_slli_epi32(
                            _mm256_cvtepu16_epi32(_mm_loadu_si128(rp.add(2 * e) as *const __m128i)),
                            16,
                        )),
                    };
                    acc[k] = madd(acc[k], w, xp.add(e));
                }
                i += LANES;
            }
            if full == n {
                return finish(acc);
            }
            // Tail: continue in scalar on the same lanes.
            let mut a = [0f32; LANES];
            for k in 0..4 {
                _mm256_storeu_ps(a.as_mut_ptr().add(8 * k), acc[k]);
            }
            let mut tail = [0f32; LANES];
            let bb = ty.block_bytes();
            let dec = super::block_decoder(ty);
            dec(&row[full * bb..], &mut tail[..n - full]);
            for (l, w) in tail[..n - full].iter().enumerate() {
                a[l] += w * x[full + l];
            }
            return reduce_lanes(&a);
        }
        GgmlType::Q8_0 => {
            for (bi, b) in row.chunks_exact(34).enumerate() {
                let d = _mm256_set1_ps(f16_at(b, 0));
                let p = b.as_ptr().add(2);
                let xb = xp.add(32 * bi);
                for k in 0..4 {
                    acc[k] = madd(acc[k], _mm256_mul_ps(d, i8x8(p.add(8 * k))), xb.add(8 * k));
                }
            }
        }
        GgmlType::Q2K => {
            let m3 = _mm256_set1_epi8(3);
            for (bi, b) in row.chunks_exact(84).enumerate() {
                let d = f16_at(b, 80);
                let dmin = f16_at(b, 82);
                let xb = xp.add(256 * bi);
                for h in 0..2 {
                    let qv = _mm256_loadu_si256(b.as_ptr().add(16 + 32 * h) as *const __m256i);
                    for s in 0..4 {
                        let q = _mm256_and_si256(_mm256_srlv_epi64(qv, _mm256_set1_epi64x(2 * s as i64)), m3);
                        let lo = _mm256_castsi256_si128(q);
                        let hi = _mm256_extracti128_si256(q, 1);
                        let j = 8 * h + 2 * s;
                        let (dl0, ml0) = (_mm256_set1_ps(d * (b[j] & 15) as f32), _mm256_set1_ps(dmin * (b[j] >> 4) as f32));
                        let (dl1, ml1) =
                            (_mm256_set1_ps(d * (b[j + 1] & 15) as f32), _mm256_set1_ps(dmin * (b[j + 1] >> 4) as f32));
                        let xg = xb.add(128 * h + 32 * s);
                        let parts = [lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)];
                        for k in 0..4 {
                            let (dl, ml) = if k < 2 { (dl0, ml0) } else { (dl1, ml1) };
                            let w = _mm256_sub_ps(_mm256_mul_ps(dl, u8x8(parts[k])), ml);
                            acc[k] = madd(acc[k], w, xg.add(8 * k));
                        }
                    }
                }
            }
        }
        GgmlType::Q4K => {
            let m15 = _mm256_set1_epi8(15);
            for (bi, b) in row.chunks_exact(144).enumerate() {
                let d = f16_at(b, 0);
                let dmin = f16_at(b, 2);
                let xb = xp.add(256 * bi);
                for jj in 0..4 {
                    let qv = _mm256_loadu_si256(b.as_ptr().add(16 + 32 * jj) as *const __m256i);
                    for half in 0..2 {
                        let j = 2 * jj + half;
                        let (sc, m) = q4k_scale_min(&b[4..16], j);
                        let dl = _mm256_set1_ps(d * sc as f32);
                        let ml = _mm256_set1_ps(dmin * m as f32);
                        let q = if half == 0 { _mm256_and_si256(qv, m15) } else { _mm256_and_si256(_mm256_srli_epi16(qv, 4), m15) };
                        let lo = _mm256_castsi256_si128(q);
                        let hi = _mm256_extracti128_si256(q, 1);
                        let parts = [lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)];
                        let xg = xb.add(32 * j);
                        for k in 0..4 {
                            let w = _mm256_sub_ps(_mm256_mul_ps(dl, u8x8(parts[k])), ml);
                            acc[k] = madd(acc[k], w, xg.add(8 * k));
                        }
                    }
                }
            }
        }
        GgmlType::Iq2Xxs => {
            let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            let signbit = _mm256_set1_ps(-0.0);
            for (bi, b) in row.chunks_exact(66).enumerate() {
                let d = f16_at(b, 0);
                let xb = xp.add(256 * bi);
                for sb in 0..8 {
                    let a = u32_at(b, 2 + 8 * sb);
                    let s = u32_at(b, 6 + 8 * sb);
                    let db = _mm256_set1_ps(d * (0.5 + (s >> 28) as f32) * 0.25);
                    for k in 0..4 {
                        let g = IQ2XXS_GRID[((a >> (8 * k)) & 255) as usize];
                        let mag = u8x8(_mm_cvtsi64_si128(g as i64));
                        let signs = super::blocks::KSIGNS[((s >> (7 * k)) & 127) as usize] as i32;
                        let sm = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(signs), bits), bits);
                        let neg = _mm256_and_ps(_mm256_castsi256_ps(sm), signbit);
                        let w = _mm256_xor_ps(_mm256_mul_ps(db, mag), neg);
                        acc[k] = madd(acc[k], w, xb.add(32 * sb + 8 * k));
                    }
                }
            }
        }
        GgmlType::Q8K | GgmlType::I32 => unreachable!("no AVX2 decoder for {ty}"),
    }
    finish(acc)
}

/// `acc[i % 32] += w[i] * x[i]` (matmul inner step), same roundings as the scalar loop.
#[target_feature(enable = "avx2")]
pub unsafe fn acc_chunk(acc: &mut [f32; LANES], w: &[f32], x: &[f32]) {
    let n = w.len();
    let full = n / LANES * LANES;
    let ap = acc.as_mut_ptr();
    let mut a = [
        _mm256_loadu_ps(ap),
        _mm256_loadu_ps(ap.add(8)),
        _mm256_loadu_ps(ap.add(16)),
        _mm256_loadu_ps(ap.add(24)),
    ];
    let (wp, xp) = (w.as_ptr(), x.as_ptr());
    let mut i = 0;
    while i < full {
        for k in 0..4 {
            a[k] = madd(a[k], _mm256_loadu_ps(wp.add(i + 8 * k)), xp.add(i + 8 * k));
        }
        i += LANES;
    }
    for k in 0..4 {
        _mm256_storeu_ps(ap.add(8 * k), a[k]);
    }
    for l in 0..n - full {
        acc[l] += w[full + l] * x[full + l];
    }
}

// ------------------------------------------------------------------------------------------
// Integer dot kernels against quantized activations (exact integer sums).
// ------------------------------------------------------------------------------------------

#[inline(always)]
unsafe fn hsum_i32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
    _mm_cvtsi128_si32(s)
}

/// Σ a_i·b_i over 32 signed bytes, exact (16-bit products summed in i32).
#[inline(always)]
unsafe fn dot_i8x32(a: *const u8, b: *const i8) -> __m256i {
    let va = _mm256_loadu_si256(a as *const __m256i);
    let vb = _mm256_loadu_si256(b as *const __m256i);
    let a0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(va));
    let a1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(va, 1));
    let b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(vb));
    let b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(vb, 1));
    _mm256_add_epi32(_mm256_madd_epi16(a0, b0), _mm256_madd_epi16(a1, b1))
}

#[target_feature(enable = "avx2,f16c")]
pub unsafe fn dot_q8_0(row: &[u8], xq: &Q8_0Acts, blk0: usize) -> f32 {
    let mut sum = 0f32;
    for (bi, b) in row.chunks_exact(34).enumerate() {
        let i = blk0 + bi;
        let isum = hsum_i32(dot_i8x32(b.as_ptr().add(2), xq.q.as_ptr().add(32 * i)));
        sum += (f16_at(b, 0) * xq.d[i]) * isum as f32;
    }
    sum
}

#[target_feature(enable = "avx2,f16c")]
pub unsafe fn dot_q8k(ty: GgmlType, row: &[u8], xq: &Q8KActs, blk0: usize) -> f32 {
    let mut sum = 0f32;
    match ty {
        GgmlType::Q2K => {
            let m3 = _mm256_set1_epi8(3);
            for (bi, b) in row.chunks_exact(84).enumerate() {
                let i = blk0 + bi;
                let q8 = xq.q.as_ptr().add(256 * i);
                let mut isum = _mm256_setzero_si256();
                for h in 0..2 {
                    let qv = _mm256_loadu_si256(b.as_ptr().add(16 + 32 * h) as *const __m256i);
                    for s in 0..4 {
                        let q = _mm256_and_si256(_mm256_srlv_epi64(qv, _mm256_set1_epi64x(2 * s as i64)), m3);
                        let y = _mm256_loadu_si256(q8.add(128 * h + 32 * s) as *const __m256i);
                        let p = _mm256_maddubs_epi16(q, y);
                        let j = 8 * h + 2 * s;
                        let sc = _mm256_setr_m128i(_mm_set1_epi16((b[j] & 15) as i16), _mm_set1_epi16((b[j + 1] & 15) as i16));
                        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, sc));
                    }
                }
                let mut summ = 0i32;
                for j in 0..16 {
                    summ += (b[j] >> 4) as i32 * xq.bsums[16 * i + j] as i32;
                }
                let yd = xq.d[i];
                sum += (yd * f16_at(b, 80)) * hsum_i32(isum) as f32 - (yd * f16_at(b, 82)) * summ as f32;
            }
        }
        GgmlType::Q4K => {
            let m15 = _mm256_set1_epi8(15);
            for (bi, b) in row.chunks_exact(144).enumerate() {
                let i = blk0 + bi;
                let q8 = xq.q.as_ptr().add(256 * i);
                let mut isum = _mm256_setzero_si256();
                let mut summ = 0i32;
                for jj in 0..4 {
                    let qv = _mm256_loadu_si256(b.as_ptr().add(16 + 32 * jj) as *const __m256i);
                    for half in 0..2 {
                        let j = 2 * jj + half;
                        let (sc, m) = q4k_scale_min(&b[4..16], j);
                        let q = if half == 0 { _mm256_and_si256(qv, m15) } else { _mm256_and_si256(_mm256_srli_epi16(qv, 4), m15) };
                        let y = _mm256_loadu_si256(q8.add(32 * j) as *const __m256i);
                        let p = _mm256_maddubs_epi16(q, y);
                        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16(sc as i16)));
                        summ += m as i32 * (xq.bsums[16 * i + 2 * j] as i32 + xq.bsums[16 * i + 2 * j + 1] as i32);
                    }
                }
                let yd = xq.d[i];
                sum += (yd * f16_at(b, 0)) * hsum_i32(isum) as f32 - (yd * f16_at(b, 2)) * summ as f32;
            }
        }
        GgmlType::Iq2Xxs => {
            for (bi, b) in row.chunks_exact(66).enumerate() {
                let i = blk0 + bi;
                let q8 = xq.q.as_ptr().add(256 * i);
                let mut isum = _mm256_setzero_si256();
                for sb in 0..8 {
                    let a = u32_at(b, 2 + 8 * sb);
                    let s = u32_at(b, 6 + 8 * sb);
                    let g = |k: u32| IQ2XXS_GRID[((a >> (8 * k)) & 255) as usize] as i64;
                    let sg = |k: u32| SIGN_BYTES[((s >> (7 * k)) & 127) as usize] as i64;
                    let mag = _mm256_setr_epi64x(g(0), g(1), g(2), g(3));
                    let sgn = _mm256_setr_epi64x(sg(0), sg(1), sg(2), sg(3));
                    let y = _mm256_sign_epi8(_mm256_loadu_si256(q8.add(32 * sb) as *const __m256i), sgn);
                    let p = _mm256_maddubs_epi16(mag, y);
                    let ls = (2 * (s >> 28) + 1) as i16;
                    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16(ls)));
                }
                sum += (f16_at(b, 0) * xq.d[i]) * hsum_i32(isum) as f32;
            }
            sum *= 0.125;
        }
        _ => unreachable!("not a Q8_K-activation weight type: {ty}"),
    }
    sum
}

/// `KSIGNS` expanded to bytes: 0xff (−1) where the sign bit is set, 0x01 otherwise.
static SIGN_BYTES: [u64; 128] = {
    let mut t = [0u64; 128];
    let mut s = 0;
    while s < 128 {
        let bits = super::blocks::KSIGNS[s];
        let mut v = 0u64;
        let mut i = 0;
        while i < 8 {
            let byte: u64 = if (bits >> i) & 1 != 0 { 0xff } else { 0x01 };
            v |= byte << (8 * i);
            i += 1;
        }
        t[s] = v;
        s += 1;
    }
    t
};
