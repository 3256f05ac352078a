//! AVX2 (+F16C) kernels. Each reproduces the scalar definition bit for bit: weights are decoded
//! with the same f32 operations as `blocks.rs`, products and sums are separate roundings (no
//! FMA), and the four 8-wide accumulators are exactly lanes 0-7, 8-15, 16-23, 24-31 of the
//! canonical 32-lane order. Integer dot kernels are exact, so they equal the scalar ones too.
//!
//! The block decoders hand out 8-wide groups of decoded weights (`f(g, w)`: elements
//! `8g..8g+8` of the block) so the fused matvec loop and the decode-to-buffer used by matmul
//! share one definition. The order in which groups are handed out only has to keep each lane's
//! elements in increasing index order, which every decoder does.

#![allow(clippy::missing_safety_doc, clippy::needless_range_loop)]

use super::blocks::{q4k_scale_min, u32_at, KSIGNS};
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

#[repr(C, align(32))]
struct Align32<T>(T);

/// f16 at byte `at`, converted with F16C and broadcast to 8 lanes. `half`'s `to_f32` makes the
/// same conversion but, without a compile-time `f16c` target, through a runtime-dispatched call
/// that costs a register spill per block. (Broadcasting first also writes the whole register: a
/// scalar insert let LLVM merge into a live accumulator, a false dependency across blocks.)
#[inline(always)]
unsafe fn f16c_x8(b: &[u8], at: usize) -> __m256 {
    let h = u16::from_le_bytes([b[at], b[at + 1]]);
    _mm256_cvtph_ps(_mm_set1_epi16(h as i16))
}

/// IQ2_XXS grid magnitudes as f16 (exact for 8, 25, 43), so one group's 8 magnitudes are one
/// 16-byte load and a conversion instead of a byte extraction and two conversions (4 KiB).
static GRID_F16: Align32<[[u16; 8]; 256]> = Align32({
    let mut t = [[0u16; 8]; 256];
    let mut g = 0;
    while g < 256 {
        let mut i = 0;
        while i < 8 {
            let m = ((IQ2XXS_GRID[g] >> (8 * i)) & 255) as u16;
            // f16 of m (8 <= m < 64): exponent e with 2^e <= m, 10-bit mantissa.
            let e = 15 - m.leading_zeros() as u16;
            t[g][i] = ((e + 15) << 10) | ((m << (10 - e)) & 0x3ff);
            i += 1;
        }
        g += 1;
    }
    t
});

/// `KSIGNS` as f32 sign-bit masks: xor-ing one onto `db·mag` is exactly the scalar `-v`.
static SIGN_MASK: Align32<[[u32; 8]; 128]> = Align32({
    let mut t = [[0u32; 8]; 128];
    let mut s = 0;
    while s < 128 {
        let mut i = 0;
        while i < 8 {
            t[s][i] = (((KSIGNS[s] >> i) & 1) as u32) << 31;
            i += 1;
        }
        s += 1;
    }
    t
});

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

/// u8 × 8 (at `p`) → u32 × 8.
#[inline(always)]
unsafe fn u8x8_epi32(p: *const u8) -> __m256i {
    _mm256_cvtepu8_epi32(_mm_loadl_epi64(p as *const __m128i))
}

/// Q8_0 block (32 values): `d·q`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn q8_0_groups(b: &[u8], mut f: impl FnMut(usize, __m256)) {
    let b = &b[..34];
    let d = f16c_x8(b, 0);
    let p = b.as_ptr().add(2);
    for k in 0..4 {
        f(k, _mm256_mul_ps(d, i8x8(p.add(8 * k))));
    }
}

/// Q2_K block: `dl·q − ml` with q in 0..4 takes 4 values per 16-value sub-block, so each
/// sub-block gets a table of them (computed with the scalar operations) and the 2-bit codes
/// select from it with one permute. The permute reads 3 index bits; the table repeats with
/// period 4, so the bit above each code needs no masking.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn q2_k_groups(b: &[u8], mut f: impl FnMut(usize, __m256)) {
    let b = &b[..84];
    let vd = f16c_x8(b, 80);
    let vm = f16c_x8(b, 82);
    let sc = _mm_loadu_si128(b.as_ptr() as *const __m128i);
    let m4 = _mm_set1_epi8(15);
    let lo = _mm_and_si128(sc, m4);
    let hi = _mm_and_si128(_mm_srli_epi16(sc, 4), m4);
    let cvt = |v: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
    // dl[j] = d·(sc_j & 15), ml[j] = dmin·(sc_j >> 4): the scalar products, 16 at a time.
    let mut dl = Align32([0f32; 16]);
    let mut ml = Align32([0f32; 16]);
    _mm256_store_ps(dl.0.as_mut_ptr(), _mm256_mul_ps(vd, cvt(lo)));
    _mm256_store_ps(dl.0.as_mut_ptr().add(8), _mm256_mul_ps(vd, cvt(_mm_srli_si128(lo, 8))));
    _mm256_store_ps(ml.0.as_mut_ptr(), _mm256_mul_ps(vm, cvt(hi)));
    _mm256_store_ps(ml.0.as_mut_ptr().add(8), _mm256_mul_ps(vm, cvt(_mm_srli_si128(hi, 8))));
    // Broadcast from memory below (a load, not two shuffles: the permutes need the shuffle pipes).
    std::hint::black_box((&mut dl, &mut ml));
    let q0123 = _mm256_setr_ps(0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0);
    let qs = b.as_ptr().add(16);
    // Per half sub-block column: the 4 tables (s = 0..3) in registers, then each 8-byte code
    // group is loaded once and shifted for the 4 sub-blocks that share its bytes. Each lane
    // still sees its elements in increasing order (s ascending within a column).
    for h in 0..2 {
        for half in 0..2 {
            let mut lut = [_mm256_setzero_ps(); 4];
            for (s, l) in lut.iter_mut().enumerate() {
                let j = 8 * h + 2 * s + half;
                *l = _mm256_sub_ps(_mm256_mul_ps(_mm256_broadcast_ss(&dl.0[j]), q0123), _mm256_broadcast_ss(&ml.0[j]));
            }
            for kk in 0..2 {
                let k = 2 * half + kk;
                let idx = u8x8_epi32(qs.add(32 * h + 8 * k));
                f(16 * h + k, _mm256_permutevar_ps(lut[0], idx));
                f(16 * h + 4 + k, _mm256_permutevar_ps(lut[1], _mm256_srli_epi32(idx, 2)));
                f(16 * h + 8 + k, _mm256_permutevar_ps(lut[2], _mm256_srli_epi32(idx, 4)));
                f(16 * h + 12 + k, _mm256_permutevar_ps(lut[3], _mm256_srli_epi32(idx, 6)));
            }
        }
    }
}

/// Q4_K block: `dl·q − ml`, 8 sub-blocks of 32; the 6-bit scales/mins are unpacked for all 8
/// sub-blocks at once (same values as `q4k_scale_min`).
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn q4_k_groups(b: &[u8], mut f: impl FnMut(usize, __m256)) {
    let b = &b[..144];
    let vd = f16c_x8(b, 0);
    let vm = f16c_x8(b, 2);
    let (u0, u1, u2) = (u32_at(b, 4), u32_at(b, 8), u32_at(b, 12));
    let (m6, m4, m2) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
    let scales = (u0 & m6) as u64 | (((u2 & m4) | (((u0 >> 6) & m2) << 4)) as u64) << 32;
    let mins = (u1 & m6) as u64 | ((((u2 >> 4) & m4) | (((u1 >> 6) & m2) << 4)) as u64) << 32;
    let cvt = |v: u64| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v as i64)));
    let mut dl = Align32([0f32; 8]);
    let mut ml = Align32([0f32; 8]);
    _mm256_store_ps(dl.0.as_mut_ptr(), _mm256_mul_ps(vd, cvt(scales)));
    _mm256_store_ps(ml.0.as_mut_ptr(), _mm256_mul_ps(vm, cvt(mins)));
    let m15 = _mm256_set1_epi32(15);
    let qs = b.as_ptr().add(16);
    for jj in 0..4 {
        let (dla, mla) = (_mm256_set1_ps(dl.0[2 * jj]), _mm256_set1_ps(ml.0[2 * jj]));
        let (dlb, mlb) = (_mm256_set1_ps(dl.0[2 * jj + 1]), _mm256_set1_ps(ml.0[2 * jj + 1]));
        for k in 0..4 {
            let raw = u8x8_epi32(qs.add(32 * jj + 8 * k));
            let qa = _mm256_cvtepi32_ps(_mm256_and_si256(raw, m15));
            let qb = _mm256_cvtepi32_ps(_mm256_srli_epi32(raw, 4));
            f(8 * jj + k, _mm256_sub_ps(_mm256_mul_ps(dla, qa), mla));
            f(8 * jj + 4 + k, _mm256_sub_ps(_mm256_mul_ps(dlb, qb), mlb));
        }
    }
}

/// IQ2_XXS block: `±db·mag`, magnitudes from `GRID_F16`, signs xor-ed from `SIGN_MASK`. The 8
/// sub-block scales `db = d·(0.5 + ls)·0.25` are computed together (same operations, 8 lanes).
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn iq2_xxs_groups(b: &[u8], mut f: impl FnMut(usize, __m256)) {
    let b = &b[..66];
    let q = b.as_ptr().add(2);
    // Sub-block sb = dwords (a_sb, s_sb) at q + 8sb; gather the s dwords into 8 lanes.
    let v0 = _mm256_castsi256_ps(_mm256_loadu_si256(q as *const __m256i));
    let v1 = _mm256_castsi256_ps(_mm256_loadu_si256(q.add(32) as *const __m256i));
    let sv = _mm256_castps_si256(_mm256_shuffle_ps(v0, v1, 0b11_01_11_01)); // s0 s1 s4 s5 | s2 s3 s6 s7
    let sv = _mm256_permute4x64_epi64(sv, 0b11_01_10_00);
    let ls = _mm256_cvtepi32_ps(_mm256_srli_epi32(sv, 28));
    let half = _mm256_set1_ps(0.5);
    let quarter = _mm256_set1_ps(0.25);
    let db = _mm256_mul_ps(_mm256_mul_ps(f16c_x8(b, 0), _mm256_add_ps(half, ls)), quarter);
    let mut dbs = Align32([0f32; 8]);
    _mm256_store_ps(dbs.0.as_mut_ptr(), db);
    for sb in 0..8 {
        let s = (q.add(8 * sb + 4) as *const u32).read_unaligned();
        let db = _mm256_set1_ps(dbs.0[sb]);
        for k in 0..4 {
            let gi = *q.add(8 * sb + k) as usize;
            let si = ((s >> (7 * k)) & 127) as usize;
            let mag = _mm256_cvtph_ps(_mm_load_si128(GRID_F16.0[gi].as_ptr() as *const __m128i));
            let sign = _mm256_load_ps(SIGN_MASK.0[si].as_ptr() as *const f32);
            f(4 * sb + k, _mm256_xor_ps(_mm256_mul_ps(db, mag), sign));
        }
    }
}

/// Float row types: the 8 values at element `e`.
#[inline(always)]
unsafe fn float8(ty: GgmlType, rp: *const u8, e: usize) -> __m256 {
    match ty {
        GgmlType::F32 => _mm256_loadu_ps(rp.add(4 * e) as *const f32),
        GgmlType::F16 => _mm256_cvtph_ps(_mm_loadu_si128(rp.add(2 * e) as *const __m128i)),
        _ => _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(rp.add(2 * e) as *const __m128i)), 16)),
    }
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
                    acc[k] = madd(acc[k], float8(ty, rp, e), xp.add(e));
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
                let xb = xp.add(32 * bi);
                q8_0_groups(b, |g, w| acc[g] = madd(acc[g], w, xb.add(8 * g)));
            }
        }
        GgmlType::Q2K => {
            for (bi, b) in row.chunks_exact(84).enumerate() {
                let xb = xp.add(256 * bi);
                q2_k_groups(b, |g, w| acc[g & 3] = madd(acc[g & 3], w, xb.add(8 * g)));
            }
        }
        GgmlType::Q4K => {
            for (bi, b) in row.chunks_exact(144).enumerate() {
                let xb = xp.add(256 * bi);
                q4_k_groups(b, |g, w| acc[g & 3] = madd(acc[g & 3], w, xb.add(8 * g)));
            }
        }
        GgmlType::Iq2Xxs => {
            for (bi, b) in row.chunks_exact(66).enumerate() {
                let xb = xp.add(256 * bi);
                iq2_xxs_groups(b, |g, w| acc[g & 3] = madd(acc[g & 3], w, xb.add(8 * g)));
            }
        }
        GgmlType::Q8K | GgmlType::I32 => unreachable!("no AVX2 decoder for {ty}"),
    }
    finish(acc)
}

/// Decode whole blocks (or, for float types, any number of values) exactly as
/// `blocks.rs` does: `src` holds `dst.len()` values.
#[target_feature(enable = "avx2,f16c")]
pub unsafe fn decode(ty: GgmlType, src: &[u8], dst: &mut [f32]) {
    let op = dst.as_mut_ptr();
    match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => {
            let n = dst.len();
            let full = n / 8 * 8;
            let rp = src.as_ptr();
            for e in (0..full).step_by(8) {
                _mm256_storeu_ps(op.add(e), float8(ty, rp, e));
            }
            let bb = ty.block_bytes();
            super::block_decoder(ty)(&src[full * bb..], &mut dst[full..]);
        }
        GgmlType::Q8_0 => {
            for (bi, b) in src.chunks_exact(34).enumerate().take(dst.len() / 32) {
                q8_0_groups(b, |g, w| _mm256_storeu_ps(op.add(32 * bi + 8 * g), w));
            }
        }
        GgmlType::Q2K => {
            for (bi, b) in src.chunks_exact(84).enumerate().take(dst.len() / 256) {
                q2_k_groups(b, |g, w| _mm256_storeu_ps(op.add(256 * bi + 8 * g), w));
            }
        }
        GgmlType::Q4K => {
            for (bi, b) in src.chunks_exact(144).enumerate().take(dst.len() / 256) {
                q4_k_groups(b, |g, w| _mm256_storeu_ps(op.add(256 * bi + 8 * g), w));
            }
        }
        GgmlType::Iq2Xxs => {
            for (bi, b) in src.chunks_exact(66).enumerate().take(dst.len() / 256) {
                iq2_xxs_groups(b, |g, w| _mm256_storeu_ps(op.add(256 * bi + 8 * g), w));
            }
        }
        GgmlType::Q8K => {
            for (b, o) in src.chunks_exact(292).zip(dst.chunks_exact_mut(256)) {
                super::blocks::q8_k(b, o);
            }
        }
        GgmlType::I32 => unreachable!("I32 has no decoder"),
    }
}

/// `acc[i % 32] += w[i] * x[i]` (matmul inner step), same roundings as the scalar loop.
#[target_feature(enable = "avx2")]
pub unsafe fn acc_chunk(acc: &mut [f32; LANES], w: &[f32], x: &[f32]) {
    let n = w.len();
    let x = &x[..n];
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

/// [`acc_chunk`] for two tokens sharing the weights (one weight load per two products).
#[target_feature(enable = "avx2")]
pub unsafe fn acc_chunk2(acc0: &mut [f32; LANES], acc1: &mut [f32; LANES], w: &[f32], x0: &[f32], x1: &[f32]) {
    let n = w.len();
    let (x0, x1) = (&x0[..n], &x1[..n]);
    let full = n / LANES * LANES;
    let (p0, p1) = (acc0.as_mut_ptr(), acc1.as_mut_ptr());
    let mut a = [_mm256_setzero_ps(); 4];
    let mut b = [_mm256_setzero_ps(); 4];
    for k in 0..4 {
        a[k] = _mm256_loadu_ps(p0.add(8 * k));
        b[k] = _mm256_loadu_ps(p1.add(8 * k));
    }
    let (wp, xp0, xp1) = (w.as_ptr(), x0.as_ptr(), x1.as_ptr());
    let mut i = 0;
    while i < full {
        for k in 0..4 {
            let wv = _mm256_loadu_ps(wp.add(i + 8 * k));
            a[k] = madd(a[k], wv, xp0.add(i + 8 * k));
            b[k] = madd(b[k], wv, xp1.add(i + 8 * k));
        }
        i += LANES;
    }
    for k in 0..4 {
        _mm256_storeu_ps(p0.add(8 * k), a[k]);
        _mm256_storeu_ps(p1.add(8 * k), b[k]);
    }
    for l in 0..n - full {
        acc0[l] += w[full + l] * x0[full + l];
        acc1[l] += w[full + l] * x1[full + l];
    }
}

/// Two rows × `T` tokens of [`acc_chunk`] at once: `acc[r * stride + t] += w_r ⊙ x_t` in the
/// canonical lanes. Lane group k (lanes 8k..8k+8) is done for all 2·T pairs before the next,
/// so the accumulators live in registers and each loaded weight or activation vector feeds T
/// or 2 products. Per lane the additions stay in increasing element order.
#[target_feature(enable = "avx2")]
pub unsafe fn acc_chunk_2xt<const T: usize>(acc: &mut [[f32; LANES]], stride: usize, w: [&[f32]; 2], x: [&[f32]; T]) {
    let n = w[0].len();
    assert!(w[1].len() == n && x.iter().all(|x| x.len() == n) && acc.len() >= stride + T && stride >= T);
    let full = n / LANES * LANES;
    let wp = [w[0].as_ptr(), w[1].as_ptr()];
    let xp: [*const f32; T] = std::array::from_fn(|t| x[t].as_ptr());
    for k in 0..4 {
        let mut c = [[_mm256_setzero_ps(); T]; 2];
        for r in 0..2 {
            for t in 0..T {
                c[r][t] = _mm256_loadu_ps(acc[r * stride + t].as_ptr().add(8 * k));
            }
        }
        let mut i = 8 * k;
        while i < full {
            let wa = _mm256_loadu_ps(wp[0].add(i));
            let wb = _mm256_loadu_ps(wp[1].add(i));
            for t in 0..T {
                let xv = _mm256_loadu_ps(xp[t].add(i));
                c[0][t] = _mm256_add_ps(c[0][t], _mm256_mul_ps(wa, xv));
                c[1][t] = _mm256_add_ps(c[1][t], _mm256_mul_ps(wb, xv));
            }
            i += LANES;
        }
        for r in 0..2 {
            for t in 0..T {
                _mm256_storeu_ps(acc[r * stride + t].as_mut_ptr().add(8 * k), c[r][t]);
            }
        }
    }
    for r in 0..2 {
        for t in 0..T {
            let a = &mut acc[r * stride + t];
            for l in 0..n - full {
                a[l] += w[r][full + l] * x[t][full + l];
            }
        }
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

/// The f16 at byte `at` → f32 (F16C). Written as asm because with the intrinsics LLVM sees that
/// only lane 0 matters and inserts the half into whatever register holds the running sum (a
/// false dependency that serialises the blocks); `vmovd` writes the whole register.
#[inline(always)]
unsafe fn f16c_one(b: &[u8], at: usize) -> f32 {
    let h = u16::from_le_bytes([b[at], b[at + 1]]) as u32;
    let v: __m128;
    std::arch::asm!(
        "vmovd {v}, {h:e}",
        "vcvtph2ps {v}, {v}",
        h = in(reg) h,
        v = out(xmm_reg) v,
        options(pure, nomem, nostack, preserves_flags)
    );
    _mm_cvtss_f32(v)
}

/// The two f16 at bytes `at`, `at + 2` → f32 (F16C). Both lanes are used, so the 32-bit load
/// fills the register (no merge into a live one).
#[inline(always)]
unsafe fn f16c_pair(b: &[u8], at: usize) -> (f32, f32) {
    let v = _mm_cvtph_ps(_mm_cvtsi32_si128(u32_at(b, at) as i32));
    (_mm_cvtss_f32(v), _mm_cvtss_f32(_mm_movehdup_ps(v)))
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
        sum += (f16c_one(b, 0) * xq.d[i]) * isum as f32;
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
                let (d, dmin) = f16c_pair(b, 80);
                sum += (yd * d) * hsum_i32(isum) as f32 - (yd * dmin) * summ as f32;
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
                let (d, dmin) = f16c_pair(b, 0);
                sum += (yd * d) * hsum_i32(isum) as f32 - (yd * dmin) * summ as f32;
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
                sum += (f16c_one(b, 0) * xq.d[i]) * hsum_i32(isum) as f32;
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
