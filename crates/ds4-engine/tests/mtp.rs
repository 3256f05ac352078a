//! MTP drafter and speculative decoding.
//!
//! * The drafter block equals a decoder layer of the main model when its weights are that
//!   layer's (a one-layer synthetic model; `e_proj`/`h_proj` set to identity or zero so the
//!   MTP input reduces to the layer's input): checks the block reuse, the HC head, the MTP
//!   file image, the ring of 256 rows and the two input paths against the (fixture-verified)
//!   main forward.
//! * Greedy speculative decoding gives exactly the tokens, final logits bits and model state
//!   of plain greedy decoding: with a random synthetic MTP (mostly rejected drafts) in both
//!   pairings, and with an oracle draft hook whose drafts are the true greedy continuation
//!   corrupted at chosen offsets (every acceptance length, full acceptance included), across
//!   ratio-4/128 window closes and the raw-ring wrap; batched, strict and snapshot-fallback
//!   verification.
//! * The CPU backend's rewind lands on exactly the state of a backend that never saw the
//!   dropped tokens, from every point of a batch.

mod common;
use common::*;
use ds4_engine::cpu::CpuBackend;
use ds4_engine::layout::Variant;
use ds4_engine::model::MtpWeights;
use ds4_engine::mtp::{MtpDrafter, Pairing, SpecConfig};
use ds4_engine::sampling::argmax;
use ds4_engine::{synth, Backend, EngineError, KvState, Model, Options, Session};
use ds4_gguf::Gguf;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const EXACT: Options = Options { qat: false };

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn fixture_model(name: &str) -> Arc<Model> {
    Model::load(fixtures().join(format!("{name}/model.gguf"))).unwrap()
}

fn fixture_tokens(model: &str, seq: &str) -> Vec<u32> {
    let man = manifest();
    let m = model_entry(&man, model);
    let s = m["sequences"].as_array().unwrap().iter().find(|s| s["name"] == seq).unwrap();
    tokens(s)
}

/// Expert types of the model (the MTP file gets the same).
fn variant_of(m: &Model) -> Variant {
    let l = m.layers.last().unwrap();
    Variant::Experts { gate_up: l.gate_exps.ty, down: l.down_exps.ty }
}

fn synth_mtp(m: &Model, seed: u64) -> Arc<MtpWeights> {
    let bytes = synth::synth_mtp_bytes(&m.hp, variant_of(m), seed).unwrap();
    Arc::new(MtpWeights::from_gguf(Gguf::from_bytes(bytes).unwrap(), &m.hp).unwrap())
}

/// A GGUF image from (name, dims, type, data) tuples.
/// A one-layer (ratio 0, learned router) model whose embedding rows are ±1 (RMS exactly 1, so
/// the MTP's input norms leave them unchanged up to the epsilon), and MTP files whose block,
/// HC head and final norm are that model's layer 0, output HC and output norm
/// ([`synth::mirror_model_bytes`]): `h_proj` = I and `e_proj` = 0, then the reverse.
fn one_layer_setup() -> (Arc<Model>, Vec<u8>, Vec<u8>) {
    let main = synth::mirror_model_bytes(0x1234_5678_9abc_def0).unwrap();
    let model = Arc::new(Model::from_gguf(Gguf::from_bytes(main).unwrap()).unwrap());
    let g = model.gguf();
    (model.clone(), synth::mirror_mtp_bytes(g, false).unwrap(), synth::mirror_mtp_bytes(g, true).unwrap())
}

#[test]
fn mtp_block_matches_a_main_layer() {
    let (model, mtp_h, mtp_e) = one_layer_setup();
    let hp = model.hp.clone();
    let (v, row) = (hp.n_vocab, hp.n_hc * hp.n_embd);
    // 150 positions: past the 128-row window, so the drafter's 256-row ring and the model's
    // 128-row ring must agree on which rows are visible.
    let toks: Vec<u32> = (0..150u32).map(|i| (i * 97 + 5) % v as u32).collect();
    let mut be = CpuBackend::new(model.clone(), EXACT);
    be.set_capture_hidden(true);
    let want = be.forward_tokens(&toks, true).unwrap();
    let want_h = be.hidden().unwrap().to_vec();
    let embed_streams: Vec<f32> = {
        let g = model.gguf();
        let t = g.tensor("token_embd.weight").unwrap();
        let mut e = vec![0f32; hp.n_embd];
        let mut out = Vec::new();
        for &tok in &toks {
            let rb = t.ty.row_bytes(hp.n_embd);
            ds4_gguf::quant::dequantize(t.ty, &g.tensor_data(t)[tok as usize * rb..(tok as usize + 1) * rb], &mut e).unwrap();
            for _ in 0..hp.n_hc {
                out.extend_from_slice(&e);
            }
        }
        out
    };
    for (label, file, hidden) in [
        ("h path (h_proj = I, e_proj = 0)", &mtp_h, embed_streams.clone()),
        ("e path (e_proj = I, h_proj = 0)", &mtp_e, (0..toks.len() * row).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect()),
    ] {
        let w = Arc::new(MtpWeights::from_gguf(Gguf::from_bytes(file.clone()).unwrap(), &hp).unwrap());
        let mut dr = MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap();
        let (lg, x) = dr.forward(&hidden, &toks, true).unwrap();
        assert_eq!(dr.pos(), toks.len());
        let (mut worst, mut worst_h) = (0f32, 0f32);
        for p in 0..toks.len() {
            let (a, b) = (&lg[p * v..(p + 1) * v], &want[p * v..(p + 1) * v]);
            worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(worst, f32::max);
            assert_eq!(argmax(a), argmax(b), "{label}: argmax at {p}");
        }
        for (a, b) in x.iter().zip(&want_h) {
            worst_h = worst_h.max((a - b).abs() / b.abs().max(1.0));
        }
        eprintln!("{label}: max |logit diff| {worst:.2e}, max stream diff {worst_h:.2e}");
        assert!(worst < 1e-4, "{label}: logits differ by {worst}");
        assert!(worst_h < 1e-5, "{label}: streams differ by {worst_h}");

        // Row by row (the decode shape) gives the batch's bits; so does a split batch.
        let mut d1 = MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap();
        let mut d2 = MtpDrafter::new(model.clone(), w, EXACT).unwrap();
        let (a, _) = d2.forward(&hidden[..77 * row], &toks[..77], true).unwrap();
        let (b, _) = d2.forward(&hidden[77 * row..], &toks[77..], true).unwrap();
        assert_eq!(bits(&[a, b].concat()), bits(&lg), "{label}: split batch");
        for p in 0..toks.len() {
            let (l1, _) = d1.forward(&hidden[p * row..(p + 1) * row], &toks[p..p + 1], false).unwrap();
            assert_eq!(bits(&l1), bits(&lg[p * v..(p + 1) * v]), "{label}: row {p} alone");
        }
    }
}

#[test]
fn synthetic_mtp_files_bind() {
    for name in MODELS {
        let m = fixture_model(name);
        let a = synth::synth_mtp_bytes(&m.hp, variant_of(&m), 3).unwrap();
        assert_eq!(a, synth::synth_mtp_bytes(&m.hp, variant_of(&m), 3).unwrap(), "deterministic");
        let w = MtpWeights::from_gguf(Gguf::from_bytes(a).unwrap(), &m.hp).unwrap();
        assert_eq!(w.block.ratio, 0);
        assert!(w.block.exp_probs_b.is_some());
    }
    let hp = synth::hparams(synth::Preset::Tiny);
    assert!(synth::synth_mtp_bytes(&hp, Variant::Any, 1).is_err());
}

/// Plain greedy decoding of `n` tokens after `prompt`: tokens, final logits, final state.
fn plain_greedy(model: &Arc<Model>, ctx: usize, prompt: &[u32], n: usize, stop: Option<u32>) -> (Vec<u32>, Vec<f32>, KvState) {
    let mut s = Session::new(model.clone(), ctx, EXACT);
    s.sync(prompt, &mut |_| true).unwrap();
    let mut out = Vec::new();
    while out.len() < n {
        let t = argmax(s.logits());
        if Some(t) == stop {
            break;
        }
        s.eval(t).unwrap();
        out.push(t);
    }
    (out, s.logits().to_vec(), s.backend().export_state())
}

/// The same with speculative steps.
fn spec_greedy(s: &mut Session, prompt: &[u32], n: usize, stop: Option<u32>) -> (Vec<u32>, Vec<f32>, KvState) {
    s.sync(prompt, &mut |_| true).unwrap();
    let mut out = Vec::new();
    while out.len() < n {
        let t = argmax(s.logits());
        if Some(t) == stop {
            break;
        }
        let run = s.eval_speculative(t, n - out.len()).unwrap();
        assert!(!run.is_empty() && run[0] == t && out.len() + run.len() <= n);
        out.extend(run);
    }
    (out, s.logits().to_vec(), s.backend().export_state())
}

fn assert_same(label: &str, got: &(Vec<u32>, Vec<f32>, KvState), want: &(Vec<u32>, Vec<f32>, KvState)) {
    assert_eq!(got.0, want.0, "{label}: tokens");
    assert!(bits(&got.1) == bits(&want.1), "{label}: final logits differ");
    assert!(got.2 == want.2, "{label}: model state differs");
}

#[test]
fn random_mtp_speculation_equals_plain_greedy() {
    for name in ["t256-q2", "tiny-f32"] {
        let model = fixture_model(name);
        let prompt = &fixture_tokens(name, "medium")[..100];
        let n = 48;
        let want = plain_greedy(&model, 512, prompt, n, None);
        let w = synth_mtp(&model, 5);
        for pairing in [Pairing::DeepSeek, Pairing::Ds4] {
            let mut s = Session::new(model.clone(), 512, EXACT);
            let dr = MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap();
            let cfg = SpecConfig { max_draft: 4, margin: 0.0, pairing, ..Default::default() };
            s.enable_mtp(dr, cfg).unwrap();
            let got = spec_greedy(&mut s, prompt, n, None);
            let st = s.spec_stats().unwrap();
            eprintln!("{name} {pairing:?}: {st:?}, acceptance {:.3}", st.acceptance());
            assert_same(&format!("{name} {pairing:?}"), &got, &want);
            assert_eq!(st.committed, n as u64);
            if pairing == Pairing::DeepSeek {
                // Margin 0: every step drafts (until the budget's last token).
                assert!(st.verified >= st.steps - 1 && st.drafted > 0, "{st:?}");
            }
        }
        // The default margin (3) gates the random drafter's low-confidence guesses; results
        // are the same either way.
        let mut s = Session::new(model.clone(), 512, EXACT);
        s.enable_mtp(MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap(), SpecConfig { max_draft: 3, ..Default::default() }).unwrap();
        assert_same(&format!("{name} margin 3"), &spec_greedy(&mut s, prompt, n, None), &want);
    }
}

/// Oracle drafts: the true greedy continuation, corrupted at an offset that cycles through
/// every acceptance length (offset == max: nothing corrupted, full acceptance).
struct Oracle {
    prompt_len: usize,
    greedy: Vec<u32>,
    step: usize,
    vocab: u32,
    /// Accepted-length histogram source: offsets handed out.
    offsets: Arc<Mutex<Vec<usize>>>,
}

impl ds4_engine::mtp::DraftHook for Oracle {
    fn draft(&mut self, history: &[u32], next: u32, max: usize) -> Vec<u32> {
        let i = history.len() - self.prompt_len;
        assert_eq!(self.greedy[i], next, "the session commits the greedy token");
        let mut d: Vec<u32> = self.greedy[i + 1..].iter().take(max).copied().collect();
        self.step += 1;
        let off = if self.step % 4 == 0 { max } else { (self.step * 7 + self.step / 3) % (max + 1) };
        if off < d.len() {
            d[off] = (d[off] + 1 + (self.step as u32 % 5)) % self.vocab;
        }
        self.offsets.lock().unwrap().push(off.min(d.len()));
        d
    }
}

/// A backend without speculative rewind (the session must snapshot and replay).
struct NoRewind(CpuBackend);

impl Backend for NoRewind {
    fn name(&self) -> &str {
        "no-rewind"
    }
    fn model(&self) -> &Arc<Model> {
        self.0.model()
    }
    fn pos(&self) -> usize {
        self.0.pos()
    }
    fn forward(&mut self, tokens: &[u32], all: bool) -> Result<Vec<f32>, EngineError> {
        self.0.forward(tokens, all)
    }
    fn reset(&mut self) {
        self.0.reset()
    }
    fn export_state(&self) -> KvState {
        self.0.export_state()
    }
    fn import_state(&mut self, s: &KvState) -> Result<(), EngineError> {
        self.0.import_state(s)
    }
}

#[test]
fn forced_acceptance_equals_plain_greedy() {
    // Prompt 120 tokens, 150 generated: positions 120..270 cross ratio-4 closes in every
    // batch, the ratio-128 closes at 127 and 255, and wrap the 128-row raw ring.
    let name = "t256-q2";
    let model = fixture_model(name);
    let prompt = fixture_tokens(name, "medium")[..120].to_vec();
    let n = 150;
    let want = plain_greedy(&model, 512, &prompt, n, None);
    let v = model.hp.n_vocab as u32;
    let cases: [(&str, usize, bool, bool); 6] = [
        ("batched k=1", 1, false, false),
        ("batched k=3", 3, false, false),
        ("batched k=7", 7, false, false),
        ("batched k=16", 16, false, false),
        ("strict k=5", 5, true, false),
        ("snapshot fallback k=6", 6, false, true),
    ];
    for (label, k, strict, fallback) in cases {
        let offsets = Arc::new(Mutex::new(Vec::new()));
        let oracle = Oracle { prompt_len: prompt.len(), greedy: want.0.clone(), step: 0, vocab: v, offsets: offsets.clone() };
        let mut s = if fallback {
            Session::with_backend(Box::new(NoRewind(CpuBackend::new(model.clone(), EXACT))), 512)
        } else {
            Session::new(model.clone(), 512, EXACT)
        };
        s.set_draft_hook(Box::new(oracle), SpecConfig { max_draft: k, margin: 0.0, strict, ..Default::default() }).unwrap();
        let got = spec_greedy(&mut s, &prompt, n, None);
        let st = s.spec_stats().unwrap();
        assert_same(label, &got, &want);
        let offs = offsets.lock().unwrap().clone();
        // Each verified step accepts exactly the uncorrupted prefix.
        assert_eq!(st.accepted, offs.iter().map(|&o| o as u64).sum::<u64>(), "{label}: {st:?}");
        let mut hist: HashMap<usize, usize> = HashMap::new();
        offs.iter().for_each(|&o| *hist.entry(o).or_default() += 1);
        eprintln!("{label}: {st:?}, accepted-length histogram {hist:?}");
        assert!(hist.contains_key(&0) && hist.contains_key(&k), "{label}: rejections and full acceptances");
        assert!(st.steps < n as u64, "{label}: fewer steps than tokens");
    }
}

#[test]
fn drafts_stop_before_the_stop_token() {
    let name = "tiny-f32";
    let model = fixture_model(name);
    let prompt = fixture_tokens(name, "medium")[..40].to_vec();
    let (g, _, _) = plain_greedy(&model, 256, &prompt, 40, None);
    // A stop token that greedy decoding reaches after a few tokens and is not the first.
    let j = (3..g.len()).find(|&j| !g[..j].contains(&g[j])).unwrap();
    let stop = g[j];
    let want = plain_greedy(&model, 256, &prompt, 40, Some(stop));
    assert_eq!(want.0.len(), j);
    let oracle_all = {
        let greedy = g.clone();
        let pl = prompt.len();
        move |h: &[u32], _next: u32, max: usize| greedy[h.len() - pl + 1..].iter().take(max).copied().collect::<Vec<u32>>()
    };
    let mut s = Session::new(model.clone(), 256, EXACT);
    s.set_draft_hook(Box::new(oracle_all), SpecConfig { max_draft: 8, margin: 0.0, stop_token: Some(stop), ..Default::default() }).unwrap();
    let got = spec_greedy(&mut s, &prompt, 40, Some(stop));
    assert_same("stop token", &got, &want);
    assert!(!got.0.contains(&stop));
}

#[test]
fn speculation_respects_budget_and_context() {
    let name = "tiny-f32";
    let model = fixture_model(name);
    let prompt = fixture_tokens(name, "short");
    let ctx = prompt.len() + 9;
    let (g, _, _) = plain_greedy(&model, ctx, &prompt, 9, None);
    let greedy = g.clone();
    let pl = prompt.len();
    let oracle = move |h: &[u32], _n: u32, max: usize| greedy[h.len() - pl + 1..].iter().take(max).copied().collect::<Vec<u32>>();
    let mut s = Session::new(model.clone(), ctx, EXACT);
    s.set_draft_hook(Box::new(oracle), SpecConfig { max_draft: 16, margin: 0.0, ..Default::default() }).unwrap();
    s.sync(&prompt, &mut |_| true).unwrap();
    // Budget 4: at most 4 tokens in one step.
    let run = s.eval_speculative(argmax(s.logits()), 4).unwrap();
    assert_eq!(run, g[..4]);
    // The context (9 free positions) caps the next run at 5 tokens.
    let run = s.eval_speculative(argmax(s.logits()), 100).unwrap();
    assert_eq!(run, g[4..9]);
    assert_eq!(s.pos(), ctx);
    assert!(matches!(s.eval_speculative(0, 1), Err(EngineError::ContextFull { .. })));
    assert!(matches!(s.eval_speculative(u32::MAX, 1), Err(EngineError::BadToken(..))));
    let bad = SpecConfig { max_draft: 17, ..Default::default() };
    assert!(s.set_spec_config(bad).is_err());
    assert!(s.set_spec_config(SpecConfig { margin: f32::NAN, ..Default::default() }).is_err());
}

#[test]
fn cpu_rewind_restores_the_exact_state() {
    let name = "tiny-f32";
    let model = fixture_model(name);
    let toks = fixture_tokens(name, "medium");
    for qat in [false, true] {
        let opts = Options { qat };
        // Marks just before the 128/256 window closes, inside a ratio-4 window, and at 0.
        for (p, n) in [(0usize, 5usize), (122, 9), (125, 7), (250, 12)] {
            let mut be = CpuBackend::new(model.clone(), opts);
            be.forward_tokens(&toks[..p], false).unwrap_or_default();
            assert!(be.spec_mark(n));
            be.forward_tokens(&toks[p..p + n], true).unwrap();
            // Rewind to every point, from the far end down (the mark stays usable).
            for keep in (0..=n).rev() {
                be.spec_rewind(p + keep).unwrap();
                let mut reference = CpuBackend::new(model.clone(), opts);
                reference.forward_tokens(&toks[..p + keep], false).unwrap_or_default();
                assert!(be.export_state() == reference.export_state(), "qat {qat} mark {p} keep {keep}");
            }
            // After the rewinds the backend continues exactly like the reference.
            let a = be.forward_tokens(&toks[p..p + n + 3], true).unwrap();
            let mut reference = CpuBackend::new(model.clone(), opts);
            reference.forward_tokens(&toks[..p], false).unwrap_or_default();
            let b = reference.forward_tokens(&toks[p..p + n + 3], true).unwrap();
            assert_eq!(bits(&a), bits(&b));
            // Rewinding outside the mark is refused.
            assert!(be.spec_rewind(p + n + 4).is_err());
            be.spec_release();
            assert!(be.spec_rewind(p).is_err());
        }
    }
}

#[test]
fn mtp_requires_matching_model_and_capable_backend() {
    let model = fixture_model("tiny-f32");
    let other = fixture_model("t256-q2");
    let w = synth_mtp(&model, 1);
    let dr = MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap();
    let mut s = Session::new(other.clone(), 64, EXACT);
    assert!(s.enable_mtp(dr, SpecConfig::default()).is_err(), "drafter of another model");
    let mut s = Session::with_backend(Box::new(NoRewind(CpuBackend::new(model.clone(), EXACT))), 64);
    let dr = MtpDrafter::new(model.clone(), w, EXACT).unwrap();
    let e = s.enable_mtp(dr, SpecConfig::default()).unwrap_err();
    assert!(e.to_string().contains("hidden states"), "{e}");
    // MTP weights bound for another width are refused by the drafter.
    let w2 = synth_mtp(&other, 1);
    assert!(MtpDrafter::new(model, w2, EXACT).is_err());
}

#[test]
fn restore_and_plain_steps_keep_speculation_exact() {
    // Speculate, snapshot, wander off with plain decode steps, restore, speculate again: the
    // drafter history is rebuilt from scratch after the restore and results stay exact.
    let name = "t256-q4";
    let model = fixture_model(name);
    let prompt = fixture_tokens(name, "medium")[..60].to_vec();
    let want = plain_greedy(&model, 256, &prompt, 30, None);
    let w = synth_mtp(&model, 9);
    let mut s = Session::new(model.clone(), 256, EXACT);
    let cfg = SpecConfig { max_draft: 3, margin: 0.0, ..Default::default() };
    s.enable_mtp(MtpDrafter::new(model.clone(), w, EXACT).unwrap(), cfg).unwrap();
    let first = spec_greedy(&mut s, &prompt, 12, None);
    assert_eq!(first.0, want.0[..12]);
    let snap = s.snapshot();
    for t in [3u32, 4, 5] {
        s.eval(t).unwrap();
    }
    s.eval_speculative(7, 5).unwrap();
    s.restore(&snap).unwrap();
    let mut out = first.0.clone();
    while out.len() < 30 {
        let t = argmax(s.logits());
        out.extend(s.eval_speculative(t, 30 - out.len()).unwrap());
    }
    assert_eq!(out, want.0);
    assert_eq!(bits(s.logits()), bits(&want.1));
    assert!(s.backend().export_state() == want.2);
}

#[test]
fn mirror_mtp_drafts_are_accepted() {
    // On the one-layer model, the MTP file whose block is the model's layer with e_proj = I
    // (h_proj = 0) recomputes the model itself: with ds4's pairing (row j embeds token j at
    // position j) its rows are the model's layer-0 rows, so every draft is the model's own
    // greedy choice up to float noise; with the DeepSeek pairing its window misses only the
    // oldest token until the 128-row window is full. Real multi-token acceptance through the
    // drafter's recursion, catch-up and truncation, with results identical to plain greedy.
    let (model, _, mtp_e) = one_layer_setup();
    let w = Arc::new(MtpWeights::from_gguf(Gguf::from_bytes(mtp_e).unwrap(), &model.hp).unwrap());
    let v = model.hp.n_vocab as u32;
    let prompt: Vec<u32> = (0..20u32).map(|i| (i * 131 + 7) % v).collect();
    let n = 170;
    let want = plain_greedy(&model, 512, &prompt, n, None);
    for (pairing, min_rate) in [(Pairing::Ds4, 0.95), (Pairing::DeepSeek, 0.5)] {
        let mut s = Session::new(model.clone(), 512, EXACT);
        let cfg = SpecConfig { max_draft: 5, margin: 0.0, pairing, ..Default::default() };
        s.enable_mtp(MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap(), cfg).unwrap();
        let got = spec_greedy(&mut s, &prompt, n, None);
        let st = s.spec_stats().unwrap();
        eprintln!("mirror MTP {pairing:?}: {st:?}, acceptance {:.3}", st.acceptance());
        assert_same(&format!("mirror {pairing:?}"), &got, &want);
        assert!(st.acceptance() >= min_rate, "{pairing:?}: {st:?}");
        assert!(st.steps * 3 < n as u64, "{pairing:?}: multi-token steps: {st:?}");
    }
}

#[test]
fn a_caller_stop_ends_the_run_with_the_plain_state() {
    // The mirror MTP drafts long accepted runs; the caller ends every run at each 5th committed
    // token (a stop string, the end of a tool call). The callback sees exactly the committed
    // run, runs never cross a stop point, and the result is plain greedy decoding's.
    let (model, _, mtp_e) = one_layer_setup();
    let w = Arc::new(MtpWeights::from_gguf(Gguf::from_bytes(mtp_e).unwrap(), &model.hp).unwrap());
    let v = model.hp.n_vocab as u32;
    let prompt: Vec<u32> = (0..20u32).map(|i| (i * 131 + 7) % v).collect();
    let n = 80;
    let want = plain_greedy(&model, 512, &prompt, n, None);
    for strict in [false, true] {
        let mut s = Session::new(model.clone(), 512, EXACT);
        let cfg = SpecConfig { max_draft: 6, margin: 0.0, pairing: Pairing::Ds4, strict, ..Default::default() };
        s.enable_mtp(MtpDrafter::new(model.clone(), w.clone(), EXACT).unwrap(), cfg).unwrap();
        s.sync(&prompt, &mut |_| true).unwrap();
        let mut out: Vec<u32> = Vec::new();
        let mut cut = 0;
        while out.len() < n {
            let t = argmax(s.logits());
            let before = out.len();
            let mut seen = Vec::new();
            let run = s
                .eval_speculative_until(t, n - before, &mut |x| {
                    seen.push(x);
                    (before + seen.len()).is_multiple_of(5)
                })
                .unwrap();
            assert_eq!(run, seen, "strict {strict}: the callback sees the committed run");
            assert!((before + 1..before + run.len()).all(|k| k % 5 != 0), "strict {strict}: run {before}+{} crosses a stop", run.len());
            cut += usize::from((before + run.len()).is_multiple_of(5) && run.len() > 1);
            out.extend(run);
            assert_eq!(s.tokens().len(), prompt.len() + out.len());
        }
        let got = (out, s.logits().to_vec(), s.backend().export_state());
        assert_same(&format!("caller stops, strict {strict}"), &got, &want);
        let st = s.spec_stats().unwrap();
        eprintln!("caller stops, strict {strict}: {st:?}");
        assert!(cut >= 5 && st.steps * 2 < n as u64, "strict {strict}: multi-token runs ended by the caller: {cut}, {st:?}");
    }
}

#[test]
fn sessions_with_speculation_stay_send() {
    fn send<T: Send>() {}
    send::<Session>();
    send::<MtpDrafter>();
}

#[test]
fn speculation_is_exact_with_qat_and_q8_numerics() {
    // The published numerics (FP8 KV, FP4 indexer) and ds4's 8-bit activations: batched
    // verification rows are still bit-identical to decode steps.
    let name = "t256-q4";
    let model = fixture_model(name);
    let prompt = fixture_tokens(name, "medium")[..100].to_vec();
    let n = 60;
    for q8 in [false, true] {
        let opts = Options { qat: true };
        let new = || Session::with_backend(Box::new(CpuBackend::new(model.clone(), opts).with_q8_activations(q8)), 512);
        let mut plain = new();
        plain.sync(&prompt, &mut |_| true).unwrap();
        let mut g = Vec::new();
        for _ in 0..n {
            let t = argmax(plain.logits());
            plain.eval(t).unwrap();
            g.push(t);
        }
        let want = (g.clone(), plain.logits().to_vec(), plain.backend().export_state());
        let offsets = Arc::new(Mutex::new(Vec::new()));
        let oracle = Oracle { prompt_len: prompt.len(), greedy: g, step: 0, vocab: model.hp.n_vocab as u32, offsets };
        let mut s = new();
        s.set_draft_hook(Box::new(oracle), SpecConfig { max_draft: 5, margin: 0.0, ..Default::default() }).unwrap();
        assert_same(&format!("qat, q8 {q8}"), &spec_greedy(&mut s, &prompt, n, None), &want);
        // And with the synthetic MTP drafter (same numerics for the drafter).
        let dr = MtpDrafter::new(model.clone(), synth_mtp(&model, 2), opts).unwrap().with_q8_activations(q8);
        let mut s = new();
        s.enable_mtp(dr, SpecConfig { max_draft: 3, margin: 0.0, ..Default::default() }).unwrap();
        assert_same(&format!("qat, q8 {q8}, MTP"), &spec_greedy(&mut s, &prompt, n, None), &want);
    }
}
