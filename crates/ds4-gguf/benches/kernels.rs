//! Single-core kernel throughput with cache-resident weights: the compute cost of each format's
//! f32-activation matvec/matmul, free of memory bandwidth. Each figure is the minimum time over
//! many short repetitions, so it stays meaningful on a shared, busy machine (the `matvec` bench
//! gives the streaming, all-cores figures).
//!
//! Run: `cargo bench -p ds4-gguf --bench kernels` (`DS4_NO_SIMD=1` for the portable path,
//! `DS4_BENCH_TYPE=IQ2_XXS` for one type, e.g. under a profiler).

use ds4_gguf::quant::{self, Q8Acts};
use ds4_gguf::GgmlType;
use std::hint::black_box;
use std::time::{Duration, Instant};

mod common;
use common::{random_bytes, weights};

const TOKENS: usize = 16;


/// Minimum seconds of `f` over repetitions filling about `budget`.
fn min_time(budget: Duration, mut f: impl FnMut()) -> f64 {
    f();
    let t0 = Instant::now();
    let mut best = f64::INFINITY;
    while t0.elapsed() < budget {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    println!("single-core kernels, SIMD {}; weights cache-resident (256 KiB-1 MiB)", if quant::simd_enabled() { "on" } else { "off" });
    println!(
        "{:<8} {:>10} {:>14} {:>14} {:>16} {:>14} {:>16}",
        "type",
        "shape",
        "matvec GB/s",
        "Gvalues/s",
        format!("matmul{TOKENS} GB/s"),
        "Gvalues/s",
        "q8 matvec GB/s"
    );
    let budget = Duration::from_millis(400);
    let only = std::env::var("DS4_BENCH_TYPE").ok();
    for (ty, rows, cols) in [
        (GgmlType::Q8_0, 128, 4096),
        (GgmlType::Iq2Xxs, 256, 4096),
        (GgmlType::Iq2Xxs, 512, 2048),
        (GgmlType::Q2K, 256, 2048),
        (GgmlType::Q4K, 128, 4096),
        (GgmlType::F16, 64, 4096),
    ] {
        if only.as_deref().is_some_and(|o| !o.eq_ignore_ascii_case(ty.name())) {
            continue;
        }
        let w = weights(ty, rows, cols, 5);
        let x: Vec<f32> = random_bytes(TOKENS * cols, 9).iter().map(|&b| (b as f32 - 128.0) / 64.0).collect();
        let mut y = vec![0f32; TOKENS * rows];
        let tv = pool.install(|| {
            min_time(budget, || quant::matvec(ty, black_box(&w), rows, cols, black_box(&x[..cols]), &mut y[..rows]))
        });
        let tm = pool.install(|| min_time(budget, || quant::matmul(ty, black_box(&w), rows, cols, black_box(&x), TOKENS, &mut y)));
        let tq = quant::act_format(ty).map(|_| {
            pool.install(|| {
                min_time(budget, || {
                    let xq = Q8Acts::for_weights(ty, black_box(&x[..cols]));
                    quant::matvec_q8(ty, black_box(&w), rows, cols, &xq, &mut y[..rows])
                })
            })
        });
        let (bytes, vals) = (w.len() as f64, (rows * cols) as f64);
        println!(
            "{:<8} {:>10} {:>14.2} {:>14.2} {:>16.2} {:>14.2} {:>16}",
            ty.name(),
            format!("{rows}x{cols}"),
            bytes / tv / 1e9,
            vals / tv / 1e9,
            TOKENS as f64 * bytes / tm / 1e9,
            TOKENS as f64 * vals / tm / 1e9,
            tq.map_or("-".into(), |t| format!("{:.2}", bytes / t / 1e9))
        );
    }
}
