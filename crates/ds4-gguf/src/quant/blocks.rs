//! Per-block decoders (MODEL.md §5). Each writes exactly `block_len` f32 values.
//!
//! The arithmetic order of every value is fixed here (`d*sc` first, then `*q`, then `- dmin*m`)
//! because the SIMD kernels reproduce it lane by lane and the dequant fixtures (gguf-py, numpy
//! float32, no FMA) were produced with the same order.

use super::grid::IQ2XXS_GRID;
use half::{bf16, f16};

/// f16 → f32 without `half`'s runtime-dispatched call (which costs more than the conversion in
/// these loops). Normal values: integer exponent rebias; subnormals: `man · 2^-24` (both exact,
/// no subnormal operand, so flush-to-zero modes cannot matter); infinities and NaNs go
/// through `half` as before. Same bits as `half`/F16C.
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let e = h & 0x7c00;
    if e == 0x7c00 {
        return f16::from_bits(h).to_f32();
    }
    let mag = if e == 0 {
        (h & 0x3ff) as f32 * f32::from_bits(0x3380_0000) // 2^-24
    } else {
        f32::from_bits((((h & 0x7fff) as u32) << 13) + (112 << 23))
    };
    f32::from_bits(mag.to_bits() | ((h as u32 & 0x8000) << 16))
}

#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

#[inline(always)]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `KSIGNS[s]`: 7 explicit sign bits plus the implied 8th making the popcount even.
pub(crate) static KSIGNS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut s = 0;
    while s < 128 {
        t[s] = (s as u8) | ((((s as u32).count_ones() & 1) as u8) << 7);
        s += 1;
    }
    t
};

pub(crate) fn f32_values(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

pub(crate) fn f16_values(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = f16_to_f32(u16::from_le_bytes([c[0], c[1]]));
    }
}

pub(crate) fn bf16_values(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
    }
}

/// Q8_0: `{ f16 d; i8 q[32] }`, value = d·q.
#[inline]
pub(crate) fn q8_0(b: &[u8], out: &mut [f32]) {
    let d = f16_at(b, 0);
    for i in 0..32 {
        out[i] = d * (b[2 + i] as i8 as f32);
    }
}

/// Q8_K: `{ f32 d; i8 q[256]; i16 bsums[16] }`, value = d·q.
#[inline]
pub(crate) fn q8_k(b: &[u8], out: &mut [f32]) {
    let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for i in 0..256 {
        out[i] = d * (b[4 + i] as i8 as f32);
    }
}

/// Q2_K: `{ u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }`.
#[inline]
pub(crate) fn q2_k(b: &[u8], out: &mut [f32]) {
    let d = f16_at(b, 80);
    let dmin = f16_at(b, 82);
    for h in 0..2 {
        for s in 0..4 {
            for half in 0..2 {
                let j = 8 * h + 2 * s + half;
                let dl = d * (b[j] & 15) as f32;
                let ml = dmin * (b[j] >> 4) as f32;
                for l in 16 * half..16 * half + 16 {
                    let q = (b[16 + 32 * h + l] >> (2 * s)) & 3;
                    out[128 * h + 32 * s + l] = dl * q as f32 - ml;
                }
            }
        }
    }
}

/// 6-bit (scale, min) of sub-block `j` of a Q4_K block (`sc` = the 12 scale bytes).
#[inline(always)]
pub(crate) fn q4k_scale_min(sc: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (sc[j] & 63, sc[j + 4] & 63)
    } else {
        ((sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4))
    }
}

/// Q4_K: `{ f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }`.
#[inline]
pub(crate) fn q4_k(b: &[u8], out: &mut [f32]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let sc = &b[4..16];
    let qs = &b[16..144];
    for j in 0..8 {
        let (s, m) = q4k_scale_min(sc, j);
        let dl = d * s as f32;
        let ml = dmin * m as f32;
        let shift = 4 * (j & 1);
        for l in 0..32 {
            let q = (qs[32 * (j / 2) + l] >> shift) & 15;
            out[32 * j + l] = dl * q as f32 - ml;
        }
    }
}

/// IQ2_XXS: `{ f16 d; u16 qs[32] }`, 8 sub-blocks of 32 (grid indices + signs + 4-bit scale).
#[inline]
pub(crate) fn iq2_xxs(b: &[u8], out: &mut [f32]) {
    let d = f16_at(b, 0);
    for sb in 0..8 {
        let a = u32_at(b, 2 + 8 * sb);
        let s = u32_at(b, 6 + 8 * sb);
        let db = d * (0.5 + (s >> 28) as f32) * 0.25;
        for k in 0..4 {
            let grid = IQ2XXS_GRID[((a >> (8 * k)) & 255) as usize].to_le_bytes();
            let signs = KSIGNS[((s >> (7 * k)) & 127) as usize];
            for i in 0..8 {
                // `-v` as a sign-bit flip: the same bits, without a data-dependent branch.
                let v = db * grid[i] as f32;
                out[32 * sb + 8 * k + i] = f32::from_bits(v.to_bits() ^ (((signs >> i) & 1) as u32) << 31);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The inlined conversion equals `half`'s for every f16 (NaNs: both NaN).
    #[test]
    fn f16_to_f32_all_values() {
        for h in 0..=u16::MAX {
            let (a, b) = (super::f16_to_f32(h), half::f16::from_bits(h).to_f32());
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{h:#06x}: {a} vs {b}");
        }
    }
}
