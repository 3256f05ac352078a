//! Forward pass against the reference fixtures (README "How to test an engine", steps 4-6).

mod common;
use common::*;
use ds4_engine::cpu::{CpuBackend, Trace};
use ds4_engine::{Model, Options};
use std::sync::Arc;

const MAX_ABS: f64 = 0.002;
const MEAN_ABS: f64 = 1e-4;

fn exact() -> Options {
    Options { qat: false }
}

fn check(label: &str, st: &Stats, max_abs: f64, mean_abs: f64) {
    eprintln!(
        "{label}: max|d| {:.3e} at (pos {}, id {}), mean {:.3e}, argmax mismatches {:?}",
        st.max,
        st.max_row,
        if st.max_col == usize::MAX { "lse".to_string() } else { st.max_col.to_string() },
        st.mean(),
        st.argmax_mismatch
    );
    assert!(st.max <= max_abs, "{label}: max |d| {} > {max_abs}", st.max);
    assert!(st.mean() <= mean_abs, "{label}: mean |d| {} > {mean_abs}", st.mean());
    assert!(st.argmax_mismatch.is_empty(), "{label}: argmax differs at {:?}", st.argmax_mismatch);
}

fn load(name: &str) -> Arc<Model> {
    Model::load(fixtures().join(name).join("model.gguf")).unwrap()
}

/// Exact prefill of every sequence, with the decision traces.
fn exact_prefill(name: &str) {
    let man = manifest();
    let m = model_entry(&man, name);
    let model = load(name);
    let hp = model.hp.clone();
    for seq in m["sequences"].as_array().unwrap() {
        let sname = seq["name"].as_str().unwrap();
        let toks = tokens(seq);
        let mut be = CpuBackend::new(model.clone(), exact());
        let record_hc = seq["traces"].get("hc_state").is_some();
        be.trace = Some(Trace { record_hc_state: record_hc, layers: Vec::new() });
        let t0 = std::time::Instant::now();
        let logits = be.forward_tokens(&toks, true).unwrap();
        let dt = t0.elapsed();
        let exp = Expected::load(name, &seq["expected"]["prefill_exact"]);
        let st = compare(&logits, hp.n_vocab, &exp, usize::MAX);
        check(&format!("{name}/{sname} exact prefill ({} tokens, {dt:.2?})", toks.len()), &st, MAX_ABS, MEAN_ABS);

        // Decisions: routing (ids ascending + weights) and indexer selections.
        let tr = be.trace.take().unwrap();
        let n = toks.len();
        let k = hp.n_expert_used;
        let want_e = read_i32(&fixtures().join(seq["traces"]["routing_experts"]["file"].as_str().unwrap()));
        let want_w = read_f32(&fixtures().join(seq["traces"]["routing_weights"]["file"].as_str().unwrap()));
        let mut max_w = 0f32;
        for l in 0..hp.n_layer {
            for p in 0..n {
                let got = &tr.layers[l].experts[p * k..(p + 1) * k];
                let want = &want_e[(l * n + p) * k..(l * n + p + 1) * k];
                assert!(got.iter().zip(want).all(|(&g, &w)| g as i32 == w), "{name}/{sname}: experts layer {l} pos {p}: {got:?} vs {want:?}");
                for i in 0..k {
                    max_w = max_w.max((tr.layers[l].weights[p * k + i] - want_w[(l * n + p) * k + i]).abs());
                }
            }
        }
        assert!(max_w < 1e-4, "routing weights differ by {max_w}");
        let it = &seq["traces"]["indexer_topk"];
        let want_i = read_i32(&fixtures().join(it["file"].as_str().unwrap()));
        let tk = hp.idx_top_k;
        let mut selecting = 0;
        for (li, l) in it["layers"].as_array().unwrap().iter().enumerate() {
            let l = l.as_u64().unwrap() as usize;
            for p in 0..n {
                let got = &tr.layers[l].indexer[p * tk..(p + 1) * tk];
                let want = &want_i[(li * n + p) * tk..(li * n + p + 1) * tk];
                assert_eq!(got, want, "{name}/{sname}: indexer layer {l} pos {p}");
                if (p + 1) / 4 > tk {
                    selecting += 1;
                }
            }
        }
        eprintln!("{name}/{sname}: routing identical (max weight diff {max_w:.1e}), indexer identical ({selecting} selecting queries)");

        // Tiny model: compressed rows and residual streams.
        if let Some(hc) = seq["traces"].get("hc_state") {
            let want = read_f32(&fixtures().join(hc["file"].as_str().unwrap()));
            let np = hc["shape"][1].as_u64().unwrap() as usize;
            let per = hp.n_hc * hp.n_embd;
            let mut worst = 0f64;
            for l in 0..hp.n_layer {
                for p in 0..np {
                    let g = &tr.layers[l].hc_state[p * per..(p + 1) * per];
                    let w = &want[(l * np + p) * per..(l * np + p + 1) * per];
                    worst = worst.max(rel(g, w));
                }
            }
            eprintln!("{name}/{sname}: hc_state max relative error {worst:.2e}");
            assert!(worst < 1e-4);
        }
        let st = be.state();
        for l in 0..hp.n_layer {
            for (key, rows, width) in [
                (format!("compressed_kv_layer{l}"), &st.layers[l].comp, hp.head_dim),
                (format!("indexer_kv_layer{l}"), &st.layers[l].idx, hp.idx_head_dim),
            ] {
                let Some(e) = seq["traces"].get(&key) else { continue };
                let want = read_f32(&fixtures().join(e["file"].as_str().unwrap()));
                assert_eq!(rows.len(), want.len(), "{key}: row count");
                let mut worst = 0f64;
                for (g, w) in rows.chunks(width).zip(want.chunks(width)) {
                    worst = worst.max(rel(g, w));
                }
                eprintln!("{name}/{sname}: {key}: {} rows, max relative error {worst:.2e}", rows.len() / width);
                assert!(worst < 1e-4);
            }
        }
    }
}

/// Relative error of a vector: max |g - w| / max |w|.
fn rel(g: &[f32], w: &[f32]) -> f64 {
    let scale = w.iter().fold(0f64, |m, &x| m.max(x.abs() as f64)).max(1e-30);
    g.iter().zip(w).fold(0f64, |m, (&a, &b)| m.max((a as f64 - b as f64).abs())) / scale
}

#[test]
fn exact_prefill_tiny_f32() {
    exact_prefill("tiny-f32");
}

#[test]
fn exact_prefill_t256_q2() {
    exact_prefill("t256-q2");
}

#[test]
fn exact_prefill_t256_q4() {
    exact_prefill("t256-q4");
}

#[test]
fn exact_prefill_vocab_f16() {
    exact_prefill("vocab-f16");
}
