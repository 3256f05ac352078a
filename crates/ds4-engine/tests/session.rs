//! Session semantics: extend / rebuild / restore / payload round trip give identical logits;
//! cancellation; corrupt payloads are refused without panics.

mod common;
use common::*;
use ds4_engine::{EngineError, Model, Options, Session};
use std::sync::Arc;

fn setup() -> (Arc<Model>, Vec<u32>) {
    let model = Model::load(fixtures().join("t256-q2/model.gguf")).unwrap();
    let man = manifest();
    let m = model_entry(&man, "t256-q2");
    let seq = m["sequences"].as_array().unwrap().iter().find(|s| s["name"] == "medium").unwrap();
    (model, tokens(seq))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn go(_: ds4_engine::Progress) -> bool {
    true
}

#[test]
fn extend_rebuild_restore_give_identical_logits() {
    let (model, toks) = setup();
    let n = toks.len();
    let ctx = 512;
    // Reference: one sync of the whole prompt.
    let mut a = Session::new(model.clone(), ctx, Options::default());
    let out = a.sync(&toks, &mut go).unwrap();
    assert_eq!(out, ds4_engine::SyncOutcome { reused: 0, evaluated: n, rebuilt: false });
    let want = bits(a.logits());
    assert_eq!(a.tokens(), &toks[..]);

    // Extend: a prefix (not aligned to 4 or 128), then the rest, with a small odd chunk.
    let mut b = Session::new(model.clone(), ctx, Options::default());
    b.set_prefill_chunk(37);
    b.sync(&toks[..131], &mut go).unwrap();
    let out = b.sync(&toks, &mut go).unwrap();
    assert_eq!(out, ds4_engine::SyncOutcome { reused: 131, evaluated: n - 131, rebuilt: false });
    assert_eq!(bits(b.logits()), want, "extend");

    // Same prompt again: nothing to do.
    let out = b.sync(&toks, &mut go).unwrap();
    assert_eq!(out.evaluated, 0);

    // Rebuild: a diverging prompt first.
    let mut c = Session::new(model.clone(), ctx, Options::default());
    let mut other = toks[..200].to_vec();
    other[150] = (other[150] + 1) % 384;
    c.sync(&other, &mut go).unwrap();
    let out = c.sync(&toks, &mut go).unwrap();
    assert!(out.rebuilt && out.reused == 0);
    assert_eq!(bits(c.logits()), want, "rebuild");

    // Restore: snapshot at 131, wander off (decode other tokens), restore, continue by eval.
    let mut d = Session::new(model.clone(), ctx, Options::default());
    d.sync(&toks[..131], &mut go).unwrap();
    let snap = d.snapshot();
    for &t in &other[131..190] {
        d.eval(t).unwrap();
    }
    assert_ne!(bits(d.logits()), bits(&snap.logits));
    d.restore(&snap).unwrap();
    assert_eq!(d.tokens(), &toks[..131]);
    for &t in &toks[131..] {
        d.eval(t).unwrap();
    }
    assert_eq!(bits(d.logits()), want, "restore + decode");
    eprintln!("extend / rebuild / restore+decode: {} logits bit-identical", want.len());
}

#[test]
fn cancel_keeps_a_valid_prefix() {
    let (model, toks) = setup();
    let mut s = Session::new(model.clone(), 512, Options::default());
    s.set_prefill_chunk(64);
    let mut calls = 0;
    let err = s.sync(&toks, &mut |p| {
        calls += 1;
        assert_eq!(p.total, toks.len());
        p.done < 128
    });
    assert!(matches!(err, Err(EngineError::Cancelled)), "{err:?}");
    assert_eq!(s.tokens(), &toks[..128]);
    assert_eq!(calls, 2);
    let out = s.sync(&toks, &mut go).unwrap();
    assert_eq!(out.reused, 128);
    let mut r = Session::new(model, 512, Options::default());
    r.sync(&toks, &mut go).unwrap();
    assert_eq!(bits(s.logits()), bits(r.logits()));
}

/// Several chunks per forward call (`set_prefill_batch`): every batch ends on a multiple of
/// the chunk or at the input's end and holds at most the batch size (or the one partial chunk
/// up to the first boundary), batches are as large as those rules allow, and the logits equal
/// a one-chunk-per-call session's (the CPU path's numerics do not depend on the split).
#[test]
fn grouped_chunks_keep_the_chunk_schedule() {
    let (model, toks) = setup();
    let (chunk, batch) = (37usize, 100usize);
    let mut one = Session::new(model.clone(), 512, Options::default());
    one.set_prefill_chunk(chunk);
    one.sync(&toks, &mut go).unwrap();
    for start in [0usize, 5, 74] {
        let mut s = Session::new(model.clone(), 512, Options::default());
        s.set_prefill_chunk(chunk);
        s.sync(&toks[..start], &mut go).unwrap();
        s.set_prefill_batch(batch);
        assert_eq!(s.prefill_batch(), batch);
        let mut ends = vec![start];
        s.sync(&toks, &mut |p| {
            ends.push(start + p.done);
            true
        })
        .unwrap();
        assert_eq!(*ends.last().unwrap(), toks.len());
        for w in ends.windows(2) {
            let (a, b) = (w[0], w[1]);
            let first = chunk - a % chunk;
            assert!(b == toks.len() || b % chunk == 0, "start {start}: batch end {b} off the chunk schedule");
            assert!(b - a <= batch.max(first), "start {start}: batch {a}..{b} larger than {batch}");
            // maximal: one more chunk would not have fit (or the input ended)
            assert!(b == toks.len() || b + chunk - a > batch.max(first), "start {start}: batch {a}..{b} could have taken another chunk");
        }
        assert!(ends.len() < toks.len().div_ceil(chunk), "start {start}: no chunks were grouped ({ends:?})");
        assert_eq!(bits(s.logits()), bits(one.logits()), "start {start}");
    }
}

/// The CPU reference with the decode-run steps switched: with `argmax` it takes the argmax
/// itself, with `near_cap` it gathers near-max sets of at most that many logits (as the CUDA
/// backend does on the device; the CPU backend's own do both, with a cap of 1024), its logits
/// kept back until fetched; without them the session evaluates and chooses on its own.
struct ArgmaxBackend {
    inner: ds4_engine::CpuBackend,
    held: Vec<f32>,
    argmax: bool,
    near_cap: Option<usize>,
}

impl ds4_engine::Backend for ArgmaxBackend {
    fn name(&self) -> &str {
        "argmax-test"
    }
    fn model(&self) -> &Arc<Model> {
        self.inner.model()
    }
    fn pos(&self) -> usize {
        self.inner.pos()
    }
    fn forward(&mut self, tokens: &[u32], all: bool) -> Result<Vec<f32>, EngineError> {
        self.inner.forward(tokens, all)
    }
    fn reset(&mut self) {
        self.inner.reset()
    }
    fn export_state(&self) -> ds4_engine::state::KvState {
        self.inner.export_state()
    }
    fn import_state(&mut self, st: &ds4_engine::state::KvState) -> Result<(), EngineError> {
        self.inner.import_state(st)
    }
    fn eval_argmax(&mut self, token: u32) -> Option<Result<u32, EngineError>> {
        if !self.argmax {
            return None;
        }
        Some(self.inner.forward(&[token], false).map(|lg| {
            self.held = lg;
            ds4_engine::sampling::argmax(&self.held)
        }))
    }
    fn eval_near_max(&mut self, token: u32, t: f32, floor: f32, with_sum: bool) -> Option<Result<Option<ds4_engine::sampling::NearMax>, EngineError>> {
        let cap = self.near_cap?;
        Some(self.inner.forward(&[token], false).map(|lg| {
            self.held = lg;
            ds4_engine::sampling::near_max_of(&self.held, t, floor, cap, with_sum)
        }))
    }
    fn eval_top_k(&mut self, token: u32, k: usize) -> Option<Result<Option<ds4_engine::sampling::NearMax>, EngineError>> {
        self.near_cap?;
        Some(self.inner.forward(&[token], false).map(|lg| {
            self.held = lg;
            ds4_engine::sampling::top_k_of(&self.held, k)
        }))
    }
    fn fetch_logits(&mut self) -> Result<Vec<f32>, EngineError> {
        Ok(self.held.clone())
    }
}

/// `Session::greedy_run`, choosing on fetched logits and through a backend's own argmax: the tokens
/// of eval + argmax per step, `go`'s refusals respected (the refused token not evaluated), and
/// the session's logits those after the last evaluated token.
#[test]
fn greedy_run_equals_eval_and_argmax() {
    let (model, toks) = setup();
    let prompt = &toks[..100];
    let mut want = Session::new(model.clone(), 512, Options::default());
    want.sync(prompt, &mut go).unwrap();
    let first = ds4_engine::sampling::argmax(want.logits());
    let mut seq = vec![first];
    for _ in 0..9 {
        want.eval(*seq.last().unwrap()).unwrap();
        seq.push(ds4_engine::sampling::argmax(want.logits()));
    }
    for own in [false, true] {
        let b = ArgmaxBackend { inner: ds4_engine::CpuBackend::new(model.clone(), Options::default()), held: Vec::new(), argmax: own, near_cap: None };
        let mut s = Session::with_backend(Box::new(b), 512);
        s.sync(prompt, &mut go).unwrap();
        // refuse the 6th token: five evaluated
        let mut seen = Vec::new();
        let run = s
            .greedy_run(first, 50, &mut |t| {
                seen.push(t);
                seen.len() < 5
            })
            .unwrap();
        assert_eq!(run, seq[..5], "own argmax {own}");
        assert_eq!(seen, seq[1..6], "own argmax {own}");
        assert_eq!(s.tokens().len(), 105);
        let mut r = Session::new(model.clone(), 512, Options::default());
        r.sync(&[prompt, &seq[..5]].concat(), &mut go).unwrap();
        assert_eq!(bits(s.logits()), bits(r.logits()), "own argmax {own}: logits after the run");
        // the token cap
        let run = s.greedy_run(seq[5], 3, &mut |_| true).unwrap();
        assert_eq!(run, seq[5..8], "own argmax {own}");
    }
}

#[test]
fn context_and_token_limits() {
    let (model, toks) = setup();
    let mut s = Session::new(model, 100, Options::default());
    assert!(matches!(s.sync(&toks, &mut go), Err(EngineError::ContextFull { need: 300, ctx: 100 })));
    assert!(matches!(s.sync(&[1, 2, 999], &mut go), Err(EngineError::BadToken(999, 384))));
    assert!(s.tokens().is_empty());
    s.sync(&toks[..100], &mut go).unwrap();
    assert!(matches!(s.eval(5), Err(EngineError::ContextFull { .. })));
}

#[test]
fn payload_round_trip_is_exact() {
    let (model, toks) = setup();
    let ctx = 1024;
    for (cut, qat) in [(131usize, true), (256, false), (3, true)] {
        let mut a = Session::new(model.clone(), ctx, Options { qat });
        a.sync(&toks[..cut], &mut go).unwrap();
        let mut buf = Vec::new();
        a.save_payload(&mut buf).unwrap();
        // Size: header, tokens, logits, counts, per layer rows + frontiers (KVCACHE.md §3).
        let hp = &model.hp;
        let r = cut.min(hp.sliding_window);
        let mut want = 4 * (13 + cut + hp.n_vocab + 2 * hp.n_layer);
        for l in 0..hp.n_layer {
            let ratio = hp.ratio(l);
            want += 4 * r * hp.head_dim;
            if ratio != 0 {
                let coff = if ratio == 4 { 2 } else { 1 };
                want += 4 * ((cut / ratio) * hp.head_dim + 2 * coff * ratio * coff * hp.head_dim);
            }
            if ratio == 4 {
                want += 4 * ((cut / 4) * hp.idx_head_dim + 2 * 8 * 2 * hp.idx_head_dim);
            }
        }
        assert_eq!(buf.len(), want);
        let mut b = Session::new(model.clone(), ctx, Options { qat });
        b.load_payload(&mut buf.as_slice()).unwrap();
        assert_eq!(b.tokens(), a.tokens());
        assert_eq!(bits(b.logits()), bits(a.logits()));
        a.sync(&toks, &mut go).unwrap();
        let out = b.sync(&toks, &mut go).unwrap();
        assert_eq!(out.reused, cut);
        assert_eq!(bits(b.logits()), bits(a.logits()), "cut {cut}");
        eprintln!("payload at {cut} tokens: {} bytes, continuation bit-identical", buf.len());
    }
}

#[test]
fn corrupt_payloads_are_refused() {
    let (model, toks) = setup();
    let ctx = 512;
    let mut a = Session::new(model.clone(), ctx, Options::default());
    a.sync(&toks[..150], &mut go).unwrap();
    let mut good = Vec::new();
    a.save_payload(&mut good).unwrap();
    let mut s = Session::new(model.clone(), ctx, Options::default());
    let mut refused = |bytes: &[u8], label: &str| {
        let e = s.load_payload(&mut &bytes[..]).expect_err(label);
        assert!(s.tokens().is_empty());
        e.to_string()
    };
    // Truncation anywhere, trailing bytes.
    for cut in [0, 3, 51, 52, 700, good.len() / 2, good.len() - 1] {
        let e = refused(&good[..cut], "truncated");
        assert!(e.contains("truncated"), "{e}");
    }
    let mut long = good.clone();
    long.push(0);
    assert!(refused(&long, "trailing").contains("trailing"));
    // Every header word altered.
    for w in 0..13 {
        let mut b = good.clone();
        let v = u32::from_le_bytes(b[4 * w..4 * w + 4].try_into().unwrap());
        b[4 * w..4 * w + 4].copy_from_slice(&(v ^ 0x40).to_le_bytes());
        if w == 4 {
            // The writer's ring capacity is informational (ds4 rings are larger than the
            // window); only R <= capacity matters.
            continue;
        }
        let e = refused(&b, "header");
        eprintln!("header word {w}: {e}");
    }
    // Huge counts must not allocate: token count near u32::MAX.
    let mut b = good.clone();
    b[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
    refused(&b, "huge T");
    // Bad token id and inconsistent row count.
    let mut b = good.clone();
    b[52..56].copy_from_slice(&9999u32.to_le_bytes());
    assert!(refused(&b, "token").contains("token id 9999"));
    let off = 52 + 4 * 150 + 4 * 384 + 4 * 2; // n_comp of layer 2
    let mut b = good.clone();
    b[off..off + 4].copy_from_slice(&1000u32.to_le_bytes());
    assert!(refused(&b, "counts").contains("layer 2"));
    // A different geometry: smaller context or another chunk size.
    let mut small = Session::new(model.clone(), 128, Options::default());
    assert!(small.load_payload(&mut good.as_slice()).is_err());
    let mut other_chunk = Session::new(model.clone(), ctx, Options::default());
    other_chunk.set_prefill_chunk(64);
    assert!(other_chunk.load_payload(&mut good.as_slice()).unwrap_err().to_string().contains("prefill chunk"));
    // And the good one still loads.
    s.load_payload(&mut good.as_slice()).unwrap();
    assert_eq!(s.tokens(), &toks[..150]);
}

#[test]
fn memory_estimate() {
    let hp = ds4_engine::Hparams::published();
    let per_token = (ds4_engine::session::memory_bytes(&hp, 1 << 20) - ds4_engine::session::memory_bytes(&hp, 0)) as f64 / (1u64 << 20) as f64;
    // MODEL.md §3.1: 3440 values per token (≈ 13.8 GB at 1M tokens in f32).
    assert!((per_token - 3440.0 * 4.0).abs() < 1.0, "{per_token}");
    let fixed = ds4_engine::session::memory_bytes(&hp, 0);
    eprintln!("published model: {per_token} bytes/token, fixed {fixed} bytes, 1M ctx {:.2} GB", ds4_engine::session::memory_bytes(&hp, 1 << 20) as f64 / 1e9);
}

/// `Session::decode_run` with the sampling switched per token (min_p sampling at several
/// temperatures, greedy, top_p < 1, as the server switches inside DSML): choosing on fetched
/// logits, through a backend's own argmax and near-max sets (a cap of 8 logits, which the flat
/// logits of a random model pass at the higher temperatures: the whole-vocabulary fallback; no
/// cap), and through the CPU backend's own steps: the tokens, the random draws and the final
/// logits of eval + `sampling::sample` per step.
#[test]
fn decode_run_equals_eval_and_sample() {
    use ds4_engine::sampling::{sample, Rng, SamplerParams};
    let (model, toks) = setup();
    let prompt = &toks[..100];
    let temps = [1.0f32, 0.2, 0.05, 0.0, 0.01, 0.7];
    let params = |k: usize| {
        let mut p = SamplerParams { temperature: temps[k % temps.len()], ..Default::default() };
        // (top_p < 1: through the near-max sets with the vocabulary's sum; top_k: through
        // the top-k sets)
        if k == 5 {
            p.top_p = 0.9;
        } else if k == 1 {
            p.top_p = 0.5;
        } else if k == 6 {
            p.top_k = 40;
        } else if k == 8 {
            (p.top_k, p.top_p) = (3, 0.8);
        }
        p
    };
    let n = 9;
    let mut want = Session::new(model.clone(), 512, Options::default());
    want.sync(prompt, &mut go).unwrap();
    let mut rng = Rng::new(11);
    let first = sample(want.logits(), &params(100), &mut rng);
    let mut seq = vec![first];
    for k in 0..n {
        want.eval(seq[k]).unwrap();
        seq.push(sample(want.logits(), &params(k), &mut rng));
    }
    struct Cycle<F: Fn(usize) -> SamplerParams>(usize, usize, F);
    impl<F: Fn(usize) -> SamplerParams> ds4_engine::Decoder for Cycle<F> {
        fn admit(&mut self, _tok: u32) -> bool {
            self.0 < self.1
        }
        fn next_params(&mut self, _tok: u32) -> Option<SamplerParams> {
            self.0 += 1;
            Some((self.2)(self.0 - 1))
        }
    }
    // (None: the session's own choice on fetched logits; Some(0): the CPU backend's steps)
    for cap in [None, Some(8), Some(usize::MAX), Some(0)] {
        let mut s = match cap {
            Some(0) => Session::new(model.clone(), 512, Options::default()),
            _ => {
                let b = ArgmaxBackend { inner: ds4_engine::CpuBackend::new(model.clone(), Options::default()), held: Vec::new(), argmax: cap.is_some(), near_cap: cap };
                Session::with_backend(Box::new(b), 512)
            }
        };
        s.sync(prompt, &mut go).unwrap();
        let mut r = Rng::new(11);
        assert_eq!(sample(s.logits(), &params(100), &mut r), first);
        let run = s.decode_run(first, &mut r, &mut Cycle(0, n, params)).unwrap();
        assert_eq!(run.tokens, seq[..n], "cap {cap:?}");
        assert_eq!(run.declined, Some(seq[n]), "cap {cap:?}");
        assert_eq!(r, rng, "cap {cap:?}: the same random draws");
        assert_eq!(s.tokens().len(), 100 + n);
        assert_eq!(bits(s.logits()), bits(want.logits()), "cap {cap:?}: logits after the run");
    }
}
