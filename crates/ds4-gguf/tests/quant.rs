//! Quant formats: bit-exact dequant vs the gguf-py fixtures, matvec/matmul vs f64 references.

mod common;
use common::{random_tensor, read_f32, shared_dir, Rng};
use ds4_gguf::quant::{dequantize, matmul, matvec, QuantError, LANES};
use ds4_gguf::GgmlType;

const WEIGHT_TYPES: [GgmlType; 8] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Bf16,
    GgmlType::Q8_0,
    GgmlType::Q2K,
    GgmlType::Q4K,
    GgmlType::Iq2Xxs,
    GgmlType::Q8K,
];

#[test]
fn dequant_fixtures_bit_exact() {
    let dir = shared_dir().join("fixtures/model/dequant");
    for (name, ty) in [
        ("q8_0", GgmlType::Q8_0),
        ("q2_k", GgmlType::Q2K),
        ("q4_k", GgmlType::Q4K),
        ("iq2_xxs", GgmlType::Iq2Xxs),
        ("f16", GgmlType::F16),
    ] {
        let blocks = std::fs::read(dir.join(format!("{name}.blocks.bin"))).unwrap();
        let want = read_f32(&dir.join(format!("{name}.values.f32.bin")));
        let mut got = vec![0f32; want.len()];
        dequantize(ty, &blocks, &mut got).unwrap();
        let bad: Vec<_> = (0..want.len()).filter(|&i| got[i].to_bits() != want[i].to_bits()).collect();
        assert!(
            bad.is_empty(),
            "{name}: {} of {} values differ, first at {}: got {} want {}",
            bad.len(),
            want.len(),
            bad[0],
            got[bad[0]],
            want[bad[0]]
        );
    }
}

/// The compiled-in IQ2_XXS grid equals the table printed in the spec (Appendix A).
#[test]
fn iq2xxs_grid_matches_spec() {
    let spec = std::fs::read_to_string(shared_dir().join("spec/MODEL.md")).unwrap();
    let a = spec.find("## Appendix A").unwrap();
    let b = spec.find("## Appendix B").unwrap();
    let vals: Vec<u64> = spec[a..b]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() == 18 && w.starts_with("0x"))
        .map(|w| u64::from_str_radix(&w[2..], 16).unwrap())
        .collect();
    assert_eq!(vals.len(), 256);
    // Decode one block per grid entry: index g in slot 0 of sub-block 0, no signs, ls=0, d=1.
    for (g, &want) in vals.iter().enumerate() {
        let mut blk = vec![0u8; 66];
        blk[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        blk[2] = g as u8;
        let mut out = vec![0f32; 256];
        dequantize(GgmlType::Iq2Xxs, &blk, &mut out).unwrap();
        for i in 0..8 {
            let mag = ((want >> (8 * i)) & 255) as f32;
            assert_eq!(out[i], 0.125 * mag, "grid {g} byte {i}");
        }
    }
}

/// Hand-checked block layouts (independent of the fixtures' generator).
#[test]
fn block_layout_by_hand() {
    // Q2_K: qs[32h+l] >> 2s, scale index 8h+2s+(l>=16).
    let mut b = vec![0u8; 84];
    b[80..82].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
    b[82..84].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
    b[8 + 2 * 3 + 1] = 3 | (2 << 4); // j = 15: h=1, s=3, upper half
    b[16 + 32 + 20] = 0b10_00_00_00; // h=1, l=20, s=3 -> q=2
    let mut out = vec![0f32; 256];
    dequantize(GgmlType::Q2K, &b, &mut out).unwrap();
    assert_eq!(out[128 + 96 + 20], 1.0 * 3.0 * 2.0 - 0.5 * 2.0);
    assert_eq!(out[128 + 96 + 21], -1.0);
    assert_eq!(out[0], 0.0);
    // Q4_K: j = 5 uses the packed high bits; odd j reads high nibbles.
    let mut b = vec![0u8; 144];
    b[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
    b[2..4].copy_from_slice(&half::f16::from_f32(0.25).to_bits().to_le_bytes());
    let sc = &mut b[4..16];
    sc[9] = 0x21; // sc_5 low 4 bits = 1, m_5 low 4 bits = 2
    sc[1] = 1 << 6; // sc_5 bits 4-5 = 1 -> sc_5 = 17
    sc[5] = 2 << 6; // m_5 bits 4-5 = 2 -> m_5 = 34
    b[16 + 64 + 7] = 0x90; // j = 5 -> qs[32*2 + l], high nibble = 9
    dequantize(GgmlType::Q4K, &b, &mut out).unwrap();
    assert_eq!(out[160 + 7], 17.0 * 9.0 - 0.25 * 34.0);
    assert_eq!(out[160 + 8], -0.25 * 34.0);
    // IQ2_XXS: signs index s=1 -> element 0 negative and implied 8th sign set.
    let mut b = vec![0u8; 66];
    b[0..2].copy_from_slice(&half::f16::from_f32(2.0).to_bits().to_le_bytes());
    let s: u32 = 1 | (3 << 28);
    b[6..10].copy_from_slice(&s.to_le_bytes());
    dequantize(GgmlType::Iq2Xxs, &b, &mut out).unwrap();
    let db = 2.0 * 3.5 * 0.25;
    assert_eq!(out[0], -db * 8.0);
    assert_eq!(out[1], db * 8.0);
    assert_eq!(out[7], -db * 8.0);
}

#[test]
fn dequantize_rejects_bad_sizes() {
    let mut out = vec![0f32; 256];
    assert_eq!(
        dequantize(GgmlType::Q4K, &[0u8; 143], &mut out),
        Err(QuantError::Size { ty: GgmlType::Q4K, n: 256, want: 144, got: 143 })
    );
    assert!(matches!(dequantize(GgmlType::Q8_0, &[0u8; 34], &mut out[..31]), Err(QuantError::PartialBlock { .. })));
    assert!(matches!(dequantize(GgmlType::I32, &[0u8; 4], &mut out[..1]), Err(QuantError::Unsupported { .. })));
}

fn dequant_all(ty: GgmlType, w: &[u8], n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    dequantize(ty, w, &mut v).unwrap();
    v
}

fn random_x(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.normal() as f32).collect()
}

/// The canonical order of the module docs, written independently from the kernels.
fn canonical_dot(w: &[f32], x: &[f32]) -> f32 {
    let mut a = [0f32; LANES];
    for i in 0..w.len() {
        a[i % LANES] += w[i] * x[i];
    }
    let v: Vec<f32> = (0..8).map(|k| (a[k] + a[k + 8]) + (a[k + 16] + a[k + 24])).collect();
    let w4: Vec<f32> = (0..4).map(|k| v[k] + v[k + 4]).collect();
    (w4[0] + w4[2]) + (w4[1] + w4[3])
}

/// Tolerance: a sum of n f32 products in 32 lanes of ceil(n/32) sequential adds followed by a
/// 5-level tree has |error| <= (n/32 + 6) * 2^-24 * Σ|w_i x_i| (standard recursive-summation
/// bound; the products themselves add one more rounding). We assert 2x that bound.
fn tolerance(w: &[f32], x: &[f32]) -> f64 {
    let abs: f64 = w.iter().zip(x).map(|(&a, &b)| (a as f64 * b as f64).abs()).sum();
    2.0 * ((w.len() as f64 / 32.0).ceil() + 7.0) * 0.5f64.powi(24) * abs + 1e-30
}

#[test]
fn matvec_matches_f64_reference() {
    let mut rng = Rng(0x5eed_1234);
    for ty in WEIGHT_TYPES {
        for &(rows, cols) in &[(7usize, 256usize), (33, 4096), (300, 512), (5, 2048)] {
            let w = random_tensor(&mut rng, ty, rows * cols, 0.05);
            let wf = dequant_all(ty, &w, rows * cols);
            let x = random_x(&mut rng, cols);
            let mut y = vec![0f32; rows];
            matvec(ty, &w, rows, cols, &x, &mut y);
            let mut worst = 0f64;
            for r in 0..rows {
                let wr = &wf[r * cols..(r + 1) * cols];
                let exact: f64 = wr.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
                let tol = tolerance(wr, &x);
                let err = (y[r] as f64 - exact).abs();
                worst = worst.max(err / tol);
                assert!(err <= tol, "{ty} {rows}x{cols} row {r}: got {} want {exact} (err {err:e} > tol {tol:e})", y[r]);
                assert_eq!(y[r].to_bits(), canonical_dot(wr, &x).to_bits(), "{ty} row {r}: not the canonical order");
            }
            assert!(worst < 1.0);
        }
    }
}

#[test]
fn matvec_odd_float_widths() {
    // F16/F32 rows need not be a multiple of 32 (e.g. [4]-wide HC tensors).
    let mut rng = Rng(99);
    for ty in [GgmlType::F32, GgmlType::F16, GgmlType::Bf16] {
        for cols in [1usize, 3, 31, 33, 257, 300] {
            let rows = 5;
            let w = random_tensor(&mut rng, ty, rows * cols, 1.0);
            let wf = dequant_all(ty, &w, rows * cols);
            let x = random_x(&mut rng, cols);
            let mut y = vec![0f32; rows];
            matvec(ty, &w, rows, cols, &x, &mut y);
            for r in 0..rows {
                let wr = &wf[r * cols..(r + 1) * cols];
                assert_eq!(y[r].to_bits(), canonical_dot(wr, &x).to_bits(), "{ty} cols {cols}");
            }
        }
    }
}

#[test]
fn matmul_rows_equal_matvec_bitwise() {
    let mut rng = Rng(42);
    for ty in WEIGHT_TYPES {
        let (rows, cols) = (67, 512);
        let w = random_tensor(&mut rng, ty, rows * cols, 0.05);
        for n in [1usize, 2, 5, 16, 17, 40] {
            let x = random_x(&mut rng, n * cols);
            let mut y = vec![0f32; n * rows];
            matmul(ty, &w, rows, cols, &x, n, &mut y);
            for t in 0..n {
                let mut yv = vec![0f32; rows];
                matvec(ty, &w, rows, cols, &x[t * cols..(t + 1) * cols], &mut yv);
                for r in 0..rows {
                    assert_eq!(y[t * rows + r].to_bits(), yv[r].to_bits(), "{ty} n={n} token {t} row {r}");
                }
            }
        }
    }
}

#[test]
fn results_independent_of_thread_count() {
    let mut rng = Rng(7);
    for ty in WEIGHT_TYPES {
        let (rows, cols) = (700, 1024);
        let w = random_tensor(&mut rng, ty, rows * cols, 0.05);
        let x = random_x(&mut rng, 3 * cols);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut y1 = vec![0f32; rows];
                matvec(ty, &w, rows, cols, &x[..cols], &mut y1);
                let mut y3 = vec![0f32; 3 * rows];
                matmul(ty, &w, rows, cols, &x, 3, &mut y3);
                (y1, y3)
            })
        };
        let a = run(1);
        for threads in [2, 3, 5] {
            let b = run(threads);
            assert!(a.0.iter().zip(&b.0).all(|(p, q)| p.to_bits() == q.to_bits()), "{ty} matvec {threads} threads");
            assert!(a.1.iter().zip(&b.1).all(|(p, q)| p.to_bits() == q.to_bits()), "{ty} matmul {threads} threads");
        }
    }
}

/// The SIMD kernels (when the CPU has them) equal the portable definition bit for bit.
#[test]
fn simd_equals_scalar_bitwise() {
    use ds4_gguf::quant::{dot_row, dot_row_scalar, simd_enabled};
    eprintln!("SIMD kernels enabled: {}", simd_enabled());
    let mut rng = Rng(0xabc);
    for ty in WEIGHT_TYPES {
        let widths: &[usize] = match ty.block_len() {
            1 => &[1, 7, 32, 33, 64, 100, 256, 1000, 4096],
            32 => &[32, 64, 96, 4096],
            _ => &[256, 512, 2048],
        };
        for &cols in widths {
            for _ in 0..3 {
                let w = random_tensor(&mut rng, ty, cols, 0.05);
                let x = random_x(&mut rng, cols);
                assert_eq!(dot_row(ty, &w, &x).to_bits(), dot_row_scalar(ty, &w, &x).to_bits(), "{ty} cols {cols}");
            }
        }
        // Extreme bytes: all-ones / all-zeros blocks (NaN/inf scales are compared as bits too).
        for fillb in [0u8, 0xff, 0x80, 0x7f] {
            let cols = if ty.block_len() == 1 { 64 } else { 2 * ty.block_len() };
            let w = vec![fillb; ty.row_bytes(cols)];
            let x = random_x(&mut rng, cols);
            let (a, b) = (dot_row(ty, &w, &x), dot_row_scalar(ty, &w, &x));
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{ty} fill {fillb:#x}: {a} vs {b}");
        }
    }
}

mod q8 {
    use super::*;
    use ds4_gguf::quant::q8::{dot_row_q8, dot_row_q8_scalar};
    use ds4_gguf::quant::{matmul_q8, matvec_q8, quantize_q8_0, quantize_q8_k, Q8Acts};

    #[test]
    fn q8_k_quantization_follows_the_spec() {
        // Largest magnitude is negative and ties with a later positive value: the first wins.
        let mut x = vec![0.0f32; 256];
        x[3] = -2.0;
        x[10] = 2.0;
        x[20] = 1.0;
        x[21] = 0.5 * 2.0 / 127.0; // exactly half a step: ties to even
        x[22] = 1.5 * 2.0 / 127.0;
        let a = quantize_q8_k(&x);
        let iscale = -127.0f32 / -2.0;
        assert_eq!(a.d[0], 1.0 / iscale);
        assert_eq!(a.q[3], -127);
        assert_eq!(a.q[10], 127);
        assert_eq!(a.q[20], (iscale * 1.0f32).round_ties_even() as i8);
        assert_eq!(a.q[21], (iscale * x[21]).round_ties_even() as i8);
        assert_eq!(a.q[22], (iscale * x[22]).round_ties_even() as i8);
        assert_eq!(a.bsums[0], a.q[..16].iter().map(|&q| q as i16).sum::<i16>());
        assert_eq!(a.bsums[1], a.q[16..32].iter().map(|&q| q as i16).sum::<i16>());
        // Positive vmax gives a negative d; zero block gives zeros.
        let mut y = vec![0.0f32; 512];
        y[0] = 3.0;
        let b = quantize_q8_k(&y);
        assert_eq!(b.q[0], -127);
        assert!(b.d[0] < 0.0);
        assert_eq!((b.d[1], b.q[256..].iter().all(|&q| q == 0), b.bsums[16..].iter().all(|&s| s == 0)), (0.0, true, true));
        // Round trip within half a step.
        let mut rng = Rng(5);
        let x = random_x(&mut rng, 1024);
        let a = quantize_q8_k(&x);
        for (i, &v) in x.iter().enumerate() {
            let d = a.d[i / 256];
            assert!((a.q[i] as f32 * d - v).abs() <= d.abs() * 0.5001, "{i}");
            assert!(a.q[i] > -128);
        }
    }

    #[test]
    fn q8_0_quantization_follows_the_spec() {
        let mut rng = Rng(6);
        let mut x = random_x(&mut rng, 96);
        x[32..64].iter_mut().for_each(|v| *v = 0.0);
        let a = quantize_q8_0(&x);
        for b in 0..3 {
            let blk = &x[32 * b..32 * b + 32];
            let amax = blk.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert_eq!(a.d[b], amax / 127.0);
            let id = if a.d[b] != 0.0 { 1.0 / a.d[b] } else { 0.0 };
            for i in 0..32 {
                assert_eq!(a.q[32 * b + i], (blk[i] * id).round_ties_even() as i8);
            }
        }
        assert!(a.q[32..64].iter().all(|&q| q == 0));
    }

    /// f64 reference: Σ dequant(w)·dequant(xq). The integer inner sums are exact, so only the
    /// per-block f32 outer products and the running f32 sum round: we allow
    /// (blocks + 4)·2^-23·Σ|w·xq| (MODEL.md §8.2 expects ≲ 1e-5 relative).
    #[test]
    fn q8_matvec_matches_f64_and_scalar() {
        let mut rng = Rng(77);
        for ty in [GgmlType::Q8_0, GgmlType::Q2K, GgmlType::Q4K, GgmlType::Iq2Xxs] {
            for &(rows, cols) in &[(9usize, 256usize), (40, 4096), (130, 2048)] {
                let w = random_tensor(&mut rng, ty, rows * cols, 0.05);
                let wf = dequant_all(ty, &w, rows * cols);
                let x = random_x(&mut rng, cols);
                let xq = Q8Acts::for_weights(ty, &x);
                let xd: Vec<f64> = match &xq {
                    Q8Acts::Q8_0(a) => (0..cols).map(|i| a.q[i] as f64 * a.d[i / 32] as f64).collect(),
                    Q8Acts::Q8K(a) => (0..cols).map(|i| a.q[i] as f64 * a.d[i / 256] as f64).collect(),
                };
                let mut y = vec![0f32; rows];
                matvec_q8(ty, &w, rows, cols, &xq, &mut y);
                let blocks = (cols / ty.block_len()) as f64;
                for r in 0..rows {
                    let wr = &wf[r * cols..(r + 1) * cols];
                    let exact: f64 = wr.iter().zip(&xd).map(|(&a, b)| a as f64 * b).sum();
                    let mag: f64 = wr.iter().zip(&xd).map(|(&a, b)| (a as f64 * b).abs()).sum();
                    let tol = (blocks + 4.0) * 2f64.powi(-23) * mag + 1e-30;
                    assert!((y[r] as f64 - exact).abs() <= tol, "{ty} {rows}x{cols} row {r}: {} vs {exact} (tol {tol:e})", y[r]);
                    let row = &w[r * ty.row_bytes(cols)..(r + 1) * ty.row_bytes(cols)];
                    assert_eq!(dot_row_q8(ty, row, &xq, 0).to_bits(), dot_row_q8_scalar(ty, row, &xq, 0).to_bits(), "{ty} simd vs scalar");
                }
            }
        }
    }

    #[test]
    fn q8_matmul_rows_equal_matvec() {
        let mut rng = Rng(78);
        for ty in [GgmlType::Q8_0, GgmlType::Q2K, GgmlType::Q4K, GgmlType::Iq2Xxs] {
            let (rows, cols, n) = (33, 512, 7);
            let w = random_tensor(&mut rng, ty, rows * cols, 0.05);
            let x = random_x(&mut rng, n * cols);
            let xq = Q8Acts::for_weights(ty, &x);
            let mut y = vec![0f32; n * rows];
            matmul_q8(ty, &w, rows, cols, &xq, n, &mut y);
            for t in 0..n {
                let xt = Q8Acts::for_weights(ty, &x[t * cols..(t + 1) * cols]);
                let mut yv = vec![0f32; rows];
                matvec_q8(ty, &w, rows, cols, &xt, &mut yv);
                for r in 0..rows {
                    assert_eq!(y[t * rows + r].to_bits(), yv[r].to_bits(), "{ty} token {t} row {r}");
                }
            }
        }
    }
}
