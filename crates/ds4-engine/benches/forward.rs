//! Prefill and decode throughput of the CPU reference forward pass on the fixture models
//! (default: all four; `cargo bench -p ds4-engine --bench forward -- NAME` for one).
//! Modes: reference (f32 activations) with and without QAT, and ds4's 8-bit activations (q8).
//! Env: DS4_BENCH_PREFILL (tokens, default 512), DS4_BENCH_DECODE (steps, default 64).

use ds4_engine::{CpuBackend, Model, Options, Session};
use std::time::Instant;

fn main() {
    let fixtures = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model"));
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (n_prefill, n_decode) = (env("DS4_BENCH_PREFILL", 512), env("DS4_BENCH_DECODE", 64));
    println!("threads: {}", rayon::current_num_threads());
    for name in ["vocab-f16", "t256-q4", "t256-q2", "tiny-f32"] {
        if !args.is_empty() && !args.iter().any(|a| name.contains(a.as_str())) {
            continue;
        }
        let model = Model::load(fixtures.join(name).join("model.gguf")).expect("fixture model");
        let v = model.hp.n_vocab as u32;
        // Deterministic pseudo-random tokens (the content does not change the work).
        let toks: Vec<u32> = (0..(n_prefill + n_decode) as u32).map(|i| (i.wrapping_mul(2654435761) >> 7) % v).collect();
        for (qat, q8) in [(true, false), (false, false), (true, true)] {
            let be = CpuBackend::new(model.clone(), Options { qat }).with_q8_activations(q8);
            let mut s = Session::with_backend(Box::new(be), n_prefill + n_decode + 1);
            let t0 = Instant::now();
            s.sync(&toks[..n_prefill], &mut |_| true).unwrap();
            let tp = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            for &t in &toks[n_prefill..] {
                s.eval(t).unwrap();
            }
            let td = t1.elapsed().as_secs_f64();
            println!(
                "{name:10} qat={qat:5} q8={q8:5}: prefill {n_prefill} tokens {:8.1} tok/s ({tp:.2} s) | decode {n_decode} tokens {:7.1} tok/s ({:.2} ms/token)",
                n_prefill as f64 / tp,
                n_decode as f64 / td,
                td * 1e3 / n_decode as f64
            );
        }
    }
}
