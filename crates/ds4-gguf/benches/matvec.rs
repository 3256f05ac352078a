//! CPU matvec throughput in weight bytes per second, against a plain parallel memory read of
//! the same number of bytes measured in the same run. Matrices have realistic shapes (one
//! routed expert: 4096→2048 gate/up, 2048→4096 down; Q8_0 4096→2048 like the shared expert)
//! and each type cycles through a pool larger than the caches, as decode streams weights.
//!
//! `matmul` (f32 activations, a batch of `MM_TOKENS` tokens as in prefill or a routed expert's
//! token group) is reported as token·weight bytes per second: the matvec throughput it is
//! equivalent to.
//!
//! Run: `cargo bench -p ds4-gguf --bench matvec` (set `DS4_NO_SIMD=1` for the portable path,
//! `RAYON_NUM_THREADS=1` for one core, `DS4_BENCH_TYPE=Q8_0` for one type).

use ds4_gguf::quant::{self, Q8Acts};
use ds4_gguf::GgmlType;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

mod common;
use common::{random_bytes, weights};

const POOL_BYTES: usize = 96 << 20;
const RUN: Duration = Duration::from_millis(500);
const MM_TOKENS: usize = 16;


/// Parallel read of every byte (u64 sums), chunked like the kernels' row tasks.
fn memread(buf: &[u8]) -> u64 {
    buf.par_chunks(1 << 16)
        .map(|c| c.chunks_exact(8).fold(0u64, |a, w| a.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()))))
        .reduce(|| 0, u64::wrapping_add)
}

/// Run `f` over the pool repeatedly for about `RUN`; returns bytes/s.
fn measure(bytes_per_call: usize, calls: usize, mut f: impl FnMut(usize)) -> f64 {
    for i in 0..calls {
        f(i); // warm-up pass (page faults, thread pool)
    }
    let t0 = Instant::now();
    let mut n = 0usize;
    while t0.elapsed() < RUN {
        f(n % calls);
        n += 1;
    }
    (n * bytes_per_call) as f64 / t0.elapsed().as_secs_f64()
}

fn main() {
    let threads = rayon::current_num_threads();
    println!("matvec benchmark: {threads} threads, SIMD kernels {}", if quant::simd_enabled() { "on" } else { "off" });
    let base_buf = random_bytes(POOL_BYTES, 1);
    let base = measure(POOL_BYTES, 1, |_| {
        black_box(memread(black_box(&base_buf)));
    });
    println!("memory read baseline: {:.2} GB/s ({} MiB buffer)\n", base / 1e9, POOL_BYTES >> 20);
    println!(
        "{:<8} {:>11} {:>13} {:>8} {:>13} {:>8} {:>14} {:>8}",
        "type",
        "shape",
        "f32 act GB/s",
        "vs read",
        "q8 act GB/s",
        "vs read",
        format!("matmul{MM_TOKENS} GB/s"),
        "vs read"
    );
    let cases = [
        (GgmlType::Q8_0, 2048, 4096),
        (GgmlType::Iq2Xxs, 2048, 4096),
        (GgmlType::Q2K, 4096, 2048),
        (GgmlType::Q4K, 2048, 4096),
        (GgmlType::F16, 2048, 4096),
    ];
    let only = std::env::var("DS4_BENCH_TYPE").ok();
    for (ty, rows, cols) in cases {
        if only.as_deref().is_some_and(|o| !o.eq_ignore_ascii_case(ty.name())) {
            continue;
        }
        let mbytes = rows * ty.row_bytes(cols);
        let n_mats = POOL_BYTES.div_ceil(mbytes).max(2);
        let mats: Vec<Vec<u8>> = (0..n_mats).map(|i| weights(ty, rows, cols, 100 + i as u64)).collect();
        let x: Vec<f32> = random_bytes(cols, 9).iter().map(|&b| (b as f32 - 128.0) / 64.0).collect();
        let mut y = vec![0f32; rows];
        let f32_bps = measure(mbytes, n_mats, |i| {
            quant::matvec(ty, &mats[i], rows, cols, black_box(&x), &mut y);
            black_box(&y);
        });
        let q8 = quant::act_format(ty).map(|_| {
            measure(mbytes, n_mats, |i| {
                // The activation quantization is part of the cost (done once per matvec).
                let xq = Q8Acts::for_weights(ty, black_box(&x));
                quant::matvec_q8(ty, &mats[i], rows, cols, &xq, &mut y);
                black_box(&y);
            })
        });
        let xs: Vec<f32> = random_bytes(MM_TOKENS * cols, 11).iter().map(|&b| (b as f32 - 128.0) / 64.0).collect();
        let mut ys = vec![0f32; MM_TOKENS * rows];
        let mm_bps = measure(mbytes * MM_TOKENS, n_mats, |i| {
            quant::matmul(ty, &mats[i], rows, cols, black_box(&xs), MM_TOKENS, &mut ys);
            black_box(&ys);
        });
        let (q8s, q8r) = match q8 {
            Some(b) => (format!("{:.2}", b / 1e9), format!("{:.2}", b / base)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<8} {:>11} {:>13.2} {:>8.2} {:>13} {:>8} {:>14.2} {:>8.2}",
            ty.name(),
            format!("{rows}x{cols}"),
            f32_bps / 1e9,
            f32_bps / base,
            q8s,
            q8r,
            mm_bps / 1e9,
            mm_bps / base
        );
    }
}
