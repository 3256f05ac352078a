//! Random inputs shared by the kernel benchmarks.
#![allow(dead_code)]

use ds4_gguf::GgmlType;

/// xorshift64 bytes: deterministic, fast, no dependency.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// Random but valid blocks: random codes, sane f16 scales.
pub fn weights(ty: GgmlType, rows: usize, cols: usize, seed: u64) -> Vec<u8> {
    let mut w = random_bytes(rows * ty.row_bytes(cols), seed);
    let h = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
    match ty {
        GgmlType::F16 => w.chunks_exact_mut(2).for_each(|c| c.copy_from_slice(&h((c[0] as f32 - 128.0) / 4096.0))),
        GgmlType::Q8_0 => w.chunks_exact_mut(34).for_each(|b| b[..2].copy_from_slice(&h(1e-4))),
        GgmlType::Q2K => w.chunks_exact_mut(84).for_each(|b| {
            b[80..82].copy_from_slice(&h(1e-3));
            b[82..84].copy_from_slice(&h(1e-3));
        }),
        GgmlType::Q4K => w.chunks_exact_mut(144).for_each(|b| {
            b[..2].copy_from_slice(&h(1e-4));
            b[2..4].copy_from_slice(&h(1e-4));
        }),
        GgmlType::Iq2Xxs => w.chunks_exact_mut(66).for_each(|b| b[..2].copy_from_slice(&h(3e-4))),
        _ => unreachable!(),
    }
    w
}
