//! Speculative decoding costs on the fixture models (CPU reference backend, QAT on):
//! plain decode; one verification batch of n tokens (all logits) plus the rewind that drops
//! all but the first; greedy generation through `eval_speculative` with an oracle drafter at
//! full and at zero acceptance; one MTP drafter row (random synthetic MTP file).
//! `cargo bench -p ds4-engine --bench mtp -- NAME` for one model. Env: DS4_BENCH_DECODE
//! (generated tokens, default 64).

use ds4_engine::layout::Variant;
use ds4_engine::model::MtpWeights;
use ds4_engine::mtp::{MtpDrafter, SpecConfig};
use ds4_engine::sampling::argmax;
use ds4_engine::{synth, Backend, CpuBackend, Model, Options, Session};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let fixtures = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model"));
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let n_gen: usize = std::env::var("DS4_BENCH_DECODE").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let opts = Options::default();
    println!("threads: {}", rayon::current_num_threads());
    for name in ["vocab-f16", "t256-q4", "t256-q2", "tiny-f32"] {
        if !args.is_empty() && !args.iter().any(|a| name.contains(a.as_str())) {
            continue;
        }
        let model = Model::load(fixtures.join(name).join("model.gguf")).expect("fixture model");
        let v = model.hp.n_vocab as u32;
        let prompt: Vec<u32> = (0..128u32).map(|i| (i.wrapping_mul(2654435761) >> 7) % v).collect();
        let ctx = prompt.len() + n_gen + 64;

        // Plain greedy generation (the reference sequence for the oracle).
        let mut s = Session::new(model.clone(), ctx, opts);
        s.sync(&prompt, &mut |_| true).unwrap();
        let t0 = Instant::now();
        let mut greedy = Vec::new();
        for _ in 0..n_gen {
            let t = argmax(s.logits());
            s.eval(t).unwrap();
            greedy.push(t);
        }
        let plain = t0.elapsed().as_secs_f64() / n_gen as f64;
        println!("{name:10} plain decode: {:.2} ms/token", plain * 1e3);

        // One verification batch of n tokens, then a rewind to its first token.
        let mut line = format!("{name:10} verify n tokens + rewind to 1 (ms):");
        for n in [2usize, 5, 9, 17] {
            let mut be = CpuBackend::new(model.clone(), opts);
            be.forward_tokens(&prompt, false).unwrap();
            let reps = 8;
            let t0 = Instant::now();
            for _ in 0..reps {
                be.spec_mark(n);
                be.forward_tokens(&greedy[..n], true).unwrap();
                be.spec_rewind(prompt.len() + 1).unwrap();
                be.spec_rewind(prompt.len()).unwrap();
                be.spec_release();
            }
            line += &format!("  n={n}: {:.2}", t0.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        println!("{line}");

        // Oracle drafts: the true continuation (full acceptance) or a wrong one (none).
        for (label, wrong) in [("full acceptance", false), ("zero acceptance", true)] {
            let mut line = format!("{name:10} speculative greedy, {label}:");
            for k in [2usize, 4, 8] {
                let g = greedy.clone();
                let pl = prompt.len();
                let hook = move |h: &[u32], _next: u32, max: usize| -> Vec<u32> {
                    let i = h.len() - pl + 1;
                    g[i.min(g.len())..].iter().take(max).map(|&t| if wrong { (t + 1) % v } else { t }).collect()
                };
                let mut s = Session::new(model.clone(), ctx, opts);
                s.set_draft_hook(Box::new(hook), SpecConfig { max_draft: k, margin: 0.0, ..Default::default() }).unwrap();
                s.sync(&prompt, &mut |_| true).unwrap();
                let t0 = Instant::now();
                let mut out = Vec::new();
                while out.len() < n_gen {
                    let t = argmax(s.logits());
                    out.extend(s.eval_speculative(t, n_gen - out.len()).unwrap());
                }
                assert_eq!(out, greedy, "speculative decoding diverged");
                let per = t0.elapsed().as_secs_f64() / n_gen as f64;
                line += &format!("  k={k}: {:.2} ms/token ({:.2}x plain)", per * 1e3, plain / per);
            }
            println!("{line}");
        }

        // One MTP drafter row (the recursive draft step).
        let l = model.layers.last().unwrap();
        let variant = Variant::Experts { gate_up: l.gate_exps.ty, down: l.down_exps.ty };
        let bytes = synth::synth_mtp_bytes(&model.hp, variant, 1).unwrap();
        let w = Arc::new(MtpWeights::from_gguf(ds4_gguf::Gguf::from_bytes(bytes).unwrap(), &model.hp).unwrap());
        let mut dr = MtpDrafter::new(model.clone(), w, opts).unwrap();
        let row = model.hp.n_hc * model.hp.n_embd;
        let h: Vec<f32> = (0..row).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
        let reps = 32;
        let t0 = Instant::now();
        for i in 0..reps {
            dr.forward(&h, &[i as u32 % v], false).unwrap();
        }
        println!("{name:10} MTP drafter: {:.2} ms/row", t0.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
}
