//! How fragile is the official-numerics comparison under float-level noise? Runs the CPU
//! reference with relative noise of size EPS (default 1e-6) on the KV projection (12 seeds per
//! sequence) and counts, per sequence: no deviation from the fixture within the reference's
//! own horizon, a deviation at a position where a near tie (< 1e-5) was recorded (the rule of
//! `forward.rs::official` accepts it), and a deviation WITHOUT a tie at that position (the rule
//! fails). A correct implementation whose sums differ from the reference at the 1e-6..1e-5
//! level lands in the last column this often. Experiment, not part of CI:
//! `EPS=1e-5 cargo test --release -p ds4-engine --features qat-perturb --test qat_perturb -- --ignored --nocapture`
#![cfg(feature = "qat-perturb")]
mod common;
use common::*;
use ds4_engine::cpu::{CpuBackend, Trace};
use ds4_engine::Options;

#[test]
#[ignore]
fn official_comparison_under_noise() {
    let man = manifest();
    let eps = std::env::var("EPS").unwrap_or_else(|_| "1e-6".into());
    let models = std::env::var("MODELS").unwrap_or_else(|_| "t256-q4,t256-q2,tiny-f32".into());
    for mname in models.split(',') {
        let m = model_entry(&man, mname);
        let model = ds4_engine::Model::load(fixtures().join(mname).join("model.gguf")).unwrap();
        let v = model.hp.n_vocab;
        for seq in m["sequences"].as_array().unwrap() {
            let sname = seq["name"].as_str().unwrap();
            let Some(e) = seq["expected"].get("prefill_official") else { continue };
            let exp = Expected::load(mname, e);
            let toks = tokens(seq);
            let horizon = seq["noise"]["official_f32_vs_f64"]["first_position_above_1e-3"].as_u64().map_or(toks.len(), |x| x as usize);
            let (mut clean, mut cut, mut fail, mut explained) = (0, 0, 0, 0);
            for s in 1..=12u64 {
                std::env::set_var("DS4_PERTURB", format!("{s},{eps}"));
                let mut be = CpuBackend::new(model.clone(), Options { qat: true });
                be.trace = Some(Trace::default());
                let lg = be.forward_tokens(&toks, true).unwrap();
                let ties = be.trace.take().unwrap().near_ties;
                let first_bad = (0..horizon.min(exp.rows())).find(|&p| compare(&lg[p * v..], v, &exp.row(p), 1).max > 2e-3);
                match first_bad {
                    None => clean += 1,
                    Some(p) if ties.iter().any(|t| t.pos == p) => cut += 1,
                    Some(p) => {
                        fail += 1;
                        // provenance: does one flipped rounding decision of the clean reference
                        // reproduce this run up to p?
                        std::env::remove_var("DS4_PERTURB");
                        let why = ds4_engine::cpu::explain_by_one_flip(&model, &toks, &lg, p, 2e-3, 8, 40);
                        explained += why.is_some() as usize;
                        eprintln!("  {mname}/{sname} seed {s}: deviation at {p}, no near tie there; one flip: {why:?}");
                    }
                }
            }
            std::env::remove_var("DS4_PERTURB");
            eprintln!("{mname}/{sname} eps {eps}: clean {clean}, cut at a tie {cut}, deviation without a tie {fail} (explained by one flip: {explained})");
        }
    }
}
