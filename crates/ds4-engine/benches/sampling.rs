//! Host cost of one sampling step over the published vocabulary (129,280 logits), against
//! an argmax over the same logits (the greedy step) measured in the same run: flat logits
//! (what the random-weight synthetic models give) and peaked ones (a few tokens well above a
//! wide tail, as a trained model gives), with the CLI / server defaults (T 1, top_p 1, min_p
//! 0.05) and a typical client setting (T 0.7, top_p 0.95). `cargo bench -p ds4-engine --bench
//! sampling`.

use ds4_engine::sampling::{argmax, Rng, Sampler, SamplerParams};
use std::time::Instant;

fn main() {
    let n = 129_280;
    let mut rng = Rng::new(7);
    // flat: uniform in [-1, 1]; peaked: a Gaussian tail (std 2.5, Box-Muller) with 20 tokens
    // 8-14 above the tail's mean
    let flat: Vec<f32> = (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect();
    let mut peaked: Vec<f32> = (0..n)
        .map(|_| {
            let (u, v) = (rng.next_f32().max(1e-7), rng.next_f32());
            2.5 * (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
        })
        .collect();
    for k in 0..20 {
        peaked[(k * 6007) % n] = 8.0 + 0.3 * k as f32;
    }
    let reps = 200;
    for (name, logits) in [("flat", &flat), ("peaked", &peaked)] {
        let t0 = Instant::now();
        let mut acc = 0u64;
        for _ in 0..reps {
            acc += argmax(std::hint::black_box(logits)) as u64;
        }
        let base = t0.elapsed().as_secs_f64() / reps as f64;
        println!("{name:6} argmax            {:8.1} us  (checksum {acc})", base * 1e6);
        for (label, p) in [
            ("T1 top_p 1 min_p .05", SamplerParams { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.05 }),
            ("T.7 top_p .95 min_p .05", SamplerParams { temperature: 0.7, top_k: 0, top_p: 0.95, min_p: 0.05 }),
        ] {
            let mut s = Sampler::new(p, 1);
            let t0 = Instant::now();
            let mut acc = 0u64;
            for _ in 0..reps {
                acc += s.sample(std::hint::black_box(logits)) as u64;
            }
            let dt = t0.elapsed().as_secs_f64() / reps as f64;
            println!("{name:6} {label:24} {:8.1} us  {:6.1}x argmax  (checksum {acc})", dt * 1e6, dt / base);
        }
    }
}
