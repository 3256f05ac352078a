//! Shared test helpers: a seeded RNG and random valid quant blocks.
#![allow(dead_code)]

use ds4_gguf::GgmlType;
use std::path::PathBuf;

pub fn shared_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

/// xorshift64*: deterministic, dependency-free.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Roughly normal (sum of 4 uniforms, unit variance).
    pub fn normal(&mut self) -> f64 {
        let s: f64 = (0..4).map(|_| self.uniform()).sum();
        (s - 2.0) * 3f64.sqrt()
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

fn put_f16(b: &mut [u8], at: usize, v: f64) {
    b[at..at + 2].copy_from_slice(&half::f16::from_f64(v).to_bits().to_le_bytes());
}

/// `n` random values of type `ty` (n a multiple of the block), scales around `scale`.
pub fn random_tensor(rng: &mut Rng, ty: GgmlType, n: usize, scale: f64) -> Vec<u8> {
    let bl = ty.block_len();
    let bb = ty.block_bytes();
    assert_eq!(n % bl, 0);
    match ty {
        GgmlType::F32 => (0..n).flat_map(|_| ((rng.normal() * scale) as f32).to_le_bytes()).collect(),
        GgmlType::F16 => (0..n).flat_map(|_| half::f16::from_f64(rng.normal() * scale).to_bits().to_le_bytes()).collect(),
        GgmlType::Bf16 => (0..n).flat_map(|_| half::bf16::from_f64(rng.normal() * scale).to_bits().to_le_bytes()).collect(),
        _ => {
            let mut out = rng.bytes(n / bl * bb);
            for blk in out.chunks_exact_mut(bb) {
                let d = scale * (0.5 + rng.uniform());
                match ty {
                    GgmlType::Q8_0 => put_f16(blk, 0, d / 127.0),
                    GgmlType::Q2K => {
                        put_f16(blk, 80, d / 20.0);
                        put_f16(blk, 82, d / 15.0);
                    }
                    GgmlType::Q4K => {
                        put_f16(blk, 0, d / 300.0);
                        put_f16(blk, 2, d / 150.0);
                    }
                    GgmlType::Iq2Xxs => put_f16(blk, 0, d / 60.0),
                    GgmlType::Q8K => blk[0..4].copy_from_slice(&((d / 127.0) as f32).to_le_bytes()),
                    _ => unreachable!(),
                }
            }
            out
        }
    }
}

pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}
