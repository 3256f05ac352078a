//! CPU reference forward pass (MODEL.md §2): float32 activations, float32 KV, weights used
//! through `ds4_gguf::quant` (never dequantized wholesale).
//!
//! The pass is layer-major over a batch of consecutive tokens (§2.8) and reads top to bottom
//! like the model: embed → per layer (hc_pre, attention with compressor / indexer, hc_post,
//! hc_pre, MoE, hc_post) → output head. Work that is independent per token (projections) runs
//! as batched matmuls whose rows are bit-identical to single-token matvecs; state updates
//! (compressor frontiers, emissions) run in position order; attention and indexer scoring run
//! in parallel per (token, head) / token with per-query visibility. Every reduction has a
//! fixed order, so results do not depend on the batch split or the thread count: prefill,
//! chunked prefill and decode produce the same bits.

use crate::backend::{Backend, EngineError, Options};
use crate::hparams::Hparams;
use crate::model::{CompressorWeights, HcWeights, LayerWeights, Mat, Model};
use crate::ops::{self, HcMix, Rope};
use crate::sampling::{near_max_of, top_k_of, NearMax, NEAR_MAX_CAP};
use crate::state::{Frontier, KvState, LayerState};
use ds4_gguf::quant;
use rayon::prelude::*;
use std::sync::Arc;

/// Per-layer, per-position decisions recorded during a forward pass (tests, diagnostics).
#[derive(Clone, Debug, Default)]
pub struct LayerTrace {
    /// `n_expert_used` expert ids per position, ascending.
    pub experts: Vec<u32>,
    /// Final routing weights in the order of `experts`.
    pub weights: Vec<f32>,
    /// Ratio-4 layers: `idx_top_k` visible compressed rows per position, ascending, -1 padded.
    pub indexer: Vec<i32>,
    /// Hyper-connection streams after the layer, `n_hc × n_embd` per position (when enabled).
    pub hc_state: Vec<f32>,
}

/// A discontinuous decision taken within `NEAR_TIE` (relative) of its boundary: a QAT
/// rounding input next to a rounding/scale boundary, or an indexer top-k cut between two
/// nearly equal scores. Two correct float32 implementations may decide these differently.
#[derive(Clone, Debug, PartialEq)]
pub struct NearTie {
    pub layer: usize,
    pub pos: usize,
    pub what: &'static str,
    pub margin: f32,
}

/// Relative margin below which [`NearTie`]s are recorded.
pub const NEAR_TIE: f32 = 1e-5;

#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub record_hc_state: bool,
    pub layers: Vec<LayerTrace>,
    pub near_ties: Vec<NearTie>,
    /// Record near ties below this relative margin (default [`NEAR_TIE`]; at most 1e-3).
    pub tie_threshold: Option<f32>,
    /// Verification only: take the decision nearest to its boundary in this row (layer,
    /// position, kind as in [`NearTie::what`]) the other way — a rounding of a KV / indexer
    /// row or query, or the indexer's top-k cut (the last selected and the best rejected row
    /// swap) — to test whether one flip explains a difference between two runs.
    pub force_flip: Option<(usize, usize, &'static str)>,
}

/// `y = W·x` for `n` token rows through the shared kernels (rows of `y` bit-identical to
/// matvec). With `q8`, weights that have an 8-bit activation path (Q8_0, K-quants, IQ2_XXS)
/// get per-token Q8_0/Q8_K activations, as ds4's CPU path does.
fn mm(data: &[u8], q8: bool, w: &Mat, e: usize, x: &[f32], n: usize) -> Vec<f32> {
    mm_bytes(w.bytes(data, e), q8, w.ty, w.rows, w.cols, x, n)
}

/// Rows `[r0, r1)` of matrix `w` applied to `n` token rows.
fn mm_rows(data: &[u8], q8: bool, w: &Mat, r0: usize, r1: usize, x: &[f32], n: usize) -> Vec<f32> {
    mm_bytes(w.rows_bytes(data, 0, r0, r1), q8, w.ty, r1 - r0, w.cols, x, n)
}

#[allow(clippy::too_many_arguments)]
fn mm_bytes(bytes: &[u8], q8: bool, ty: ds4_gguf::GgmlType, rows: usize, cols: usize, x: &[f32], n: usize) -> Vec<f32> {
    let mut y = vec![0f32; n * rows];
    if q8 && quant::q8::act_format(ty).is_some() {
        let xq = quant::q8::Q8Acts::for_weights(ty, x);
        quant::q8::matmul_q8(ty, bytes, rows, cols, &xq, n, &mut y);
    } else {
        quant::matmul(ty, bytes, rows, cols, x, n, &mut y);
    }
    y
}

/// What the layer functions read besides the layer's weights: the file image the weights point
/// into (the main GGUF, or the MTP GGUF for the drafter block) and the numerics switches.
#[derive(Clone, Copy)]
pub(crate) struct LayerCx<'a> {
    pub hp: &'a Hparams,
    pub data: &'a [u8],
    pub q8: bool,
    pub qat: bool,
}

/// Where a layer's attention keeps its state: the layer's [`LayerState`], the ring capacity,
/// the position of the first token of the batch, and `lo`, the first position whose raw row
/// is valid (0 for the model's layers; the MTP drafter's ring may start later).
pub(crate) struct AttnState<'a> {
    pub ls: &'a mut LayerState,
    pub raw_cap: usize,
    pub p0: usize,
    pub lo: usize,
}

/// Record of a speculative batch that lets [`CpuBackend`] return to any position inside it
/// (MODEL.md §3.4): the state before the batch (raw-ring rows it overwrites, compressor
/// frontiers, row counts), and every frontier row the batch wrote, so the frontier at an
/// accepted position is rebuilt by replaying those rows without any matmul.
struct SpecMark {
    pos: usize,
    max_tokens: usize,
    /// Per layer: ring slots `(pos + i) % raw_cap`, `i < max_tokens`, as they were.
    raw: Vec<Vec<f32>>,
    comp_front: Vec<Option<Frontier>>,
    idx_front: Vec<Option<Frontier>>,
    /// Per layer: the `kv` then `score` row each token wrote into the attention / indexer
    /// compressor frontier (`2·width` floats per token).
    comp_log: Vec<Vec<f32>>,
    idx_log: Vec<Vec<f32>>,
}

/// The CPU reference backend: owns one session's [`KvState`].
pub struct CpuBackend {
    model: Arc<Model>,
    opts: Options,
    state: KvState,
    rope_main: Rope,
    rope_comp: Rope,
    /// When set, decisions of the following forward calls are appended here.
    pub trace: Option<Trace>,
    q8: bool,
    /// Keep the final hyper-connection streams of each forward call (for the MTP drafter).
    capture_hidden: bool,
    hidden: Option<Vec<f32>>,
    spec: Option<SpecMark>,
    /// The logits of the last eval_argmax / eval_near_max step (fetch_logits).
    held: Vec<f32>,
}

impl CpuBackend {
    pub fn new(model: Arc<Model>, opts: Options) -> CpuBackend {
        let hp = &model.hp;
        let rope_main = Rope::plain(hp.rope_freq_base, hp.rope_dim);
        let rope_comp = Rope::yarn(
            hp.compress_rope_freq_base,
            hp.rope_dim,
            hp.rope_scaling_factor,
            hp.rope_orig_ctx,
            hp.yarn_beta_fast,
            hp.yarn_beta_slow,
        );
        let state = KvState::new(hp);
        CpuBackend {
            model,
            opts,
            state,
            rope_main,
            rope_comp,
            trace: None,
            q8: false,
            capture_hidden: false,
            hidden: None,
            spec: None,
            held: Vec::new(),
        }
    }

    /// ds4's CPU numerics instead of the float32 reference: activations of Q8_0 matmuls
    /// (attention projections, shared expert, LM head) quantized to Q8_0 and those of the
    /// routed experts to Q8_K, with exact integer block dots (~1.5x faster kernels). Not
    /// comparable to the fixtures at tight tolerance (their README: int8 activations move
    /// random-model logits by units); the reference path is the default.
    pub fn with_q8_activations(mut self, on: bool) -> CpuBackend {
        self.q8 = on;
        self
    }

    pub fn q8_activations(&self) -> bool {
        self.q8
    }

    pub fn options(&self) -> Options {
        self.opts
    }

    pub fn state(&self) -> &KvState {
        &self.state
    }

    /// Run `tokens` at positions `pos..pos+n`; returns logits for the last token, or for every
    /// token when `all_logits` (token-major `n × vocab`).
    pub fn forward_tokens(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>, EngineError> {
        let model = self.model.clone();
        let hp = &model.hp;
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= hp.n_vocab) {
            return Err(EngineError::BadToken(t, hp.n_vocab));
        }
        let n = tokens.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        if let Some(tr) = &mut self.trace {
            tr.layers.resize_with(hp.n_layer, Default::default);
        }
        // A speculative mark covers a bounded number of tokens; past it the mark is dropped
        // (a later rewind then reports it).
        if self.spec.as_ref().is_some_and(|m| self.state.pos + n > m.pos + m.max_tokens) {
            self.spec = None;
        }
        let cx = LayerCx { hp, data: model.data(), q8: self.q8, qat: self.opts.qat };
        // ---- embedding → n_hc identical streams
        let mut s = embed_streams(&model, tokens);
        let (p0, raw_cap) = (self.state.pos, self.state.raw_cap);
        for (l, lw) in model.layers.iter().enumerate() {
            let rope = if hp.ratio(l) == 0 { &self.rope_main } else { &self.rope_comp };
            let logs = self.spec.as_mut().map(|m| (&mut m.comp_log[l], &mut m.idx_log[l]));
            let st = AttnState { ls: &mut self.state.layers[l], raw_cap, p0, lo: 0 };
            attention_sublayer(&cx, lw, st, rope, &self.rope_comp, &mut s, n, self.trace.as_mut(), logs);
            ffn_sublayer(&cx, lw, &mut s, tokens, self.trace.as_mut());
            if let Some(tr) = &mut self.trace {
                if tr.record_hc_state {
                    tr.layers[l].hc_state.extend_from_slice(&s);
                }
            }
        }
        self.state.pos += n;
        // ---- output head
        let rows: Vec<usize> = if all_logits { (0..n).collect() } else { vec![n - 1] };
        let logits = output_head(&cx, &model, &s, &rows);
        self.hidden = self.capture_hidden.then_some(s);
        Ok(logits)
    }

    /// Start a speculative batch of at most `max_tokens` tokens (≤ the raw ring capacity): save
    /// what the batch will overwrite. See [`Backend::spec_mark`].
    fn mark(&mut self, max_tokens: usize) -> bool {
        let st = &self.state;
        if max_tokens == 0 || max_tokens > st.raw_cap {
            self.spec = None;
            return false;
        }
        let (pos, hd) = (st.pos, st.head_dim);
        let raw = st
            .layers
            .iter()
            .map(|l| {
                let mut v = Vec::with_capacity(max_tokens * hd);
                for i in 0..max_tokens {
                    let sl = (pos + i) % st.raw_cap;
                    v.extend_from_slice(&l.raw[sl * hd..(sl + 1) * hd]);
                }
                v
            })
            .collect();
        let nl = st.layers.len();
        self.spec = Some(SpecMark {
            pos,
            max_tokens,
            raw,
            comp_front: st.layers.iter().map(|l| l.comp_front.clone()).collect(),
            idx_front: st.layers.iter().map(|l| l.idx_front.clone()).collect(),
            comp_log: vec![Vec::new(); nl],
            idx_log: vec![Vec::new(); nl],
        });
        true
    }

    /// Return to position `to` (mark ≤ to ≤ pos) exactly as if only the tokens before it had
    /// been processed: restore the overwritten ring rows of the dropped positions, reset the row
    /// counts, and rebuild each frontier from its saved copy plus the logged rows of the kept
    /// tokens. The mark stays valid (a later rewind to an earlier point still works).
    fn rewind(&mut self, to: usize) -> Result<(), EngineError> {
        let Some(m) = &self.spec else {
            return Err(EngineError::Backend("speculative rewind without a valid mark".into()));
        };
        let st = &mut self.state;
        if to < m.pos || to > st.pos {
            return Err(EngineError::Backend(format!(
                "speculative rewind to {to} outside the marked range {}..={}",
                m.pos, st.pos
            )));
        }
        let (hd, dih, cap) = (st.head_dim, st.idx_head_dim, st.raw_cap);
        for (l, ls) in st.layers.iter_mut().enumerate() {
            for p in to..st.pos {
                let (i, sl) = (p - m.pos, p % cap);
                ls.raw[sl * hd..(sl + 1) * hd].copy_from_slice(&m.raw[l][i * hd..(i + 1) * hd]);
            }
            if ls.ratio == 0 {
                continue;
            }
            ls.comp.truncate(to / ls.ratio * hd);
            if let (Some(f), Some(saved)) = (ls.comp_front.as_mut(), &m.comp_front[l]) {
                f.clone_from(saved);
                frontier_replay(f, ls.ratio, m.pos, to, &m.comp_log[l]);
            }
            if ls.ratio == 4 {
                ls.idx.truncate(to / 4 * dih);
                if let (Some(f), Some(saved)) = (ls.idx_front.as_mut(), &m.idx_front[l]) {
                    f.clone_from(saved);
                    frontier_replay(f, 4, m.pos, to, &m.idx_log[l]);
                }
            }
        }
        st.pos = to;
        // Logged rows past `to` are no longer part of the state.
        let m = self.spec.as_mut().unwrap();
        let keep = to - m.pos;
        for (l, ls) in st.layers.iter().enumerate() {
            if let Some(f) = &ls.comp_front {
                m.comp_log[l].truncate(keep * 2 * f.width);
            }
            if let Some(f) = &ls.idx_front {
                m.idx_log[l].truncate(keep * 2 * f.width);
            }
        }
        Ok(())
    }
}

/// Embedding rows of `tokens` (`n × n_embd`; ids already checked against the vocabulary).
pub(crate) fn embed_rows(m: &Model, tokens: &[u32]) -> Vec<f32> {
    let d = m.hp.n_embd;
    let w = &m.token_embd;
    let mut e = vec![0f32; tokens.len() * d];
    for (&tok, row) in tokens.iter().zip(e.chunks_mut(d)) {
        let tok = tok as usize;
        // Checked at bind time (dims) and by the callers (id range): cannot fail.
        quant::dequantize(w.ty, w.rows_bytes(m.data(), 0, tok, tok + 1), row).expect("embedding row");
    }
    e
}

/// The embedding of each token copied into the `n_hc` streams (`n × n_hc × n_embd`).
fn embed_streams(m: &Model, tokens: &[u32]) -> Vec<f32> {
    let (d, nh) = (m.hp.n_embd, m.hp.n_hc);
    let e = embed_rows(m, tokens);
    let mut s = vec![0f32; tokens.len() * nh * d];
    for (st, er) in s.chunks_mut(nh * d).zip(e.chunks(d)) {
        for stream in st.chunks_mut(d) {
            stream.copy_from_slice(er);
        }
    }
    s
}

/// `hc_pre` for every token: returns the collapsed inputs (n × n_embd) and the mixes.
fn hc_pre(cx: &LayerCx, hc: &HcWeights, s: &[f32], n: usize) -> (Vec<f32>, Vec<HcMix>) {
    let hp = cx.hp;
    let (d, nh) = (hp.n_embd, hp.n_hc);
    let mut flat = s.to_vec();
    for f in flat.chunks_mut(nh * d) {
        ops::rmsnorm_inplace(f, hp.rms_eps);
    }
    let mix = mm(cx.data, cx.q8, &hc.fn_, 0, &flat, n);
    let mut x = vec![0f32; n * d];
    let mut mixes = Vec::with_capacity(n);
    for t in 0..n {
        let mut hm = HcMix::default();
        let pre = ops::hc_split(&mix[t * hc.fn_.rows..(t + 1) * hc.fn_.rows], &hc.scale, &hc.base, nh, hp.sinkhorn_iters, hp.hc_eps, &mut hm);
        ops::hc_collapse(&s[t * nh * d..(t + 1) * nh * d], &pre, &mut x[t * d..(t + 1) * d]);
        mixes.push(hm);
    }
    (x, mixes)
}

fn hc_post_all(hp: &Hparams, s: &mut [f32], y: &[f32], mixes: &[HcMix]) {
    let (d, nh) = (hp.n_embd, hp.n_hc);
    s.par_chunks_mut(nh * d).zip(y.par_chunks(d)).zip(mixes.par_iter()).for_each(|((st, y), mx)| {
        let old = st.to_vec();
        ops::hc_post(&old, y, mx, st);
    });
}

pub(crate) fn norm_rows(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let d = w.len();
    let mut y = vec![0f32; x.len()];
    for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
        ops::rmsnorm_w(xr, w, eps, yr);
    }
    y
}

// ------------------------------------------------------------------------------------
// Attention sublayer (MODEL.md §2.5)
// ------------------------------------------------------------------------------------

/// The attention sublayer of one block for `n` tokens at positions `st.p0..st.p0+n`,
/// updating the streams `s` and the layer state. `rope` is the layer's RoPE (plain for ratio
/// 0, YaRN otherwise), `rope_comp` the compressors'. `logs` receives the frontier rows written
/// (speculative marks).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention_sublayer(
    cx: &LayerCx,
    lw: &LayerWeights,
    st: AttnState,
    rope: &Rope,
    rope_comp: &Rope,
    s: &mut [f32],
    n: usize,
    trace: Option<&mut Trace>,
    logs: Option<(&mut Vec<f32>, &mut Vec<f32>)>,
) {
    let (hp, data, q8) = (cx.hp, cx.data, cx.q8);
    let l = lw.index;
    let AttnState { ls, raw_cap, p0, lo } = st;
    let (hd, nh, rd) = (hp.head_dim, hp.n_head, hp.rope_dim);
    let eps = hp.rms_eps;

    let (a, mixes) = hc_pre(cx, &lw.hc_attn, s, n);
    let xn = norm_rows(&a, &lw.attn_norm, eps);

    // Query path: low rank, norm, per-head unweighted norm, RoPE on the tail.
    let qa = mm(data, q8, &lw.q_a, 0, &xn, n);
    let qr = norm_rows(&qa, &lw.q_a_norm, eps);
    let mut q = mm(data, q8, &lw.q_b, 0, &qr, n);
    q.par_chunks_mut(nh * hd).enumerate().for_each(|(t, qt)| {
        let mut cs = Vec::new();
        rope.cos_sin(p0 + t, &mut cs);
        for qh in qt.chunks_mut(hd) {
            ops::rmsnorm_inplace(qh, eps);
            ops::rope_tail(qh, &cs, false);
        }
    });

    // KV path: projection, norm, RoPE tail, FP8 round trip of the non-rotary dims.
    #[allow(unused_mut)]
    let mut kvp = mm(data, q8, &lw.kv, 0, &xn, n);
    #[cfg(feature = "qat-perturb")]
    perturb::apply(&mut kvp, l, p0);
    let mut kv = norm_rows(&kvp, &lw.kv_norm, eps);
    let mut cs = Vec::new();
    let tracing = trace.is_some();
    let flip = trace.as_ref().and_then(|t| t.force_flip).filter(|f| f.0 == l);
    let flips = move |p: usize, what: &str| flip.is_some_and(|f| f.1 == p && f.2 == what);
    let mut ties = Vec::new();
    for (t, row) in kv.chunks_mut(hd).enumerate() {
        rope.cos_sin(p0 + t, &mut cs);
        ops::rope_tail(row, &cs, false);
        if cx.qat {
            if tracing {
                note_tie(&mut ties, l, p0 + t, "raw kv fp8", ops::fp8_margin(row, hd - rd));
            }
            if flips(p0 + t, "raw kv fp8") {
                ops::fp8_roundtrip_flipped(row, hd - rd);
            } else {
                ops::fp8_roundtrip(row, hd - rd);
            }
        }
    }

    // Compressors (emit rows in position order), then the indexer's per-query selection.
    let qat = cx.qat;
    let (comp_log, idx_log) = match logs {
        Some((c, i)) => (Some(c), Some(i)),
        None => (None, None),
    };
    if let (Some(cw), Some(front)) = (&lw.comp, ls.comp_front.as_mut()) {
        compressor(data, hp, cw, &xn, n, p0, lw.ratio, hd, front, &mut ls.comp, rope_comp, comp_log, |row, p| {
            if qat {
                if tracing {
                    note_tie(&mut ties, l, p, "compressed kv fp8", ops::fp8_margin(row, hd - rd));
                }
                if flips(p, "compressed kv fp8") {
                    ops::fp8_roundtrip_flipped(row, hd - rd);
                } else {
                    ops::fp8_roundtrip(row, hd - rd);
                }
            }
        });
    }
    let mut selection: Vec<Option<Vec<u32>>> = vec![None; n];
    if let (Some(iw), Some(front)) = (&lw.indexer, ls.idx_front.as_mut()) {
        let dih = hp.idx_head_dim;
        compressor(data, hp, &iw.comp, &xn, n, p0, 4, dih, front, &mut ls.idx, rope_comp, idx_log, |row, p| {
            if qat {
                ops::hadamard(row);
                if tracing {
                    note_tie(&mut ties, l, p, "indexer row fp4", ops::fp4_margin(row));
                }
                if flips(p, "indexer row fp4") {
                    ops::fp4_roundtrip_flipped(row);
                } else {
                    ops::fp4_roundtrip(row);
                }
            }
        });
        selection = indexer_select(data, hp, iw, &qr, &xn, n, p0, &ls.idx, rope_comp, qat, l, tracing.then_some(&mut ties), flip.map(|f| (f.1, f.2)));
    }
    if let Some(tr) = trace {
        let thr = tr.tie_threshold.unwrap_or(NEAR_TIE);
        tr.near_ties.extend(ties.drain(..).filter(|t| t.margin < thr));
        if lw.ratio == 4 {
            let tk = hp.idx_top_k;
            for (t, sel) in selection.iter().enumerate() {
                let nvis = (p0 + t + 1) / 4;
                let mut row = vec![-1i32; tk];
                match sel {
                    Some(v) => v.iter().enumerate().for_each(|(i, &c)| row[i] = c as i32),
                    None => (0..nvis.min(tk)).for_each(|c| row[c] = c as i32),
                }
                tr.layers[l].indexer.extend(row);
            }
        }
    }

    // Attention with sink over the raw window and the visible compressed rows.
    let ls_ro: &LayerState = ls;
    let w = hp.sliding_window;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut o = vec![0f32; n * nh * hd];
    let ratio = lw.ratio;
    o.par_chunks_mut(hd).enumerate().for_each(|(i, oh)| {
        let (t, h) = (i / nh, i % nh);
        let p = p0 + t;
        let qh = &q[(t * nh + h) * hd..(t * nh + h + 1) * hd];
        let raw_row = |pos: usize| -> &[f32] {
            if pos >= p0 {
                &kv[(pos - p0) * hd..(pos - p0 + 1) * hd]
            } else {
                let sl = pos % raw_cap;
                &ls_ro.raw[sl * hd..(sl + 1) * hd]
            }
        };
        let first = (p + 1).saturating_sub(w).max(lo.min(p));
        let comp_rows: Vec<usize> = match (ratio, &selection[t]) {
            (0, _) => Vec::new(),
            (_, Some(sel)) => sel.iter().map(|&c| c as usize).collect(),
            (r, None) => (0..(p + 1) / r).collect(),
        };
        let comp_row = |c: usize| &ls_ro.comp[c * hd..(c + 1) * hd];
        let mut sc = Vec::with_capacity(p + 1 - first + comp_rows.len());
        for pos in first..=p {
            sc.push(ops::dot(qh, raw_row(pos)) * scale);
        }
        for &c in &comp_rows {
            sc.push(ops::dot(qh, comp_row(c)) * scale);
        }
        let sink = lw.sinks[h];
        let m = sc.iter().fold(sink, |m, &v| m.max(v));
        let mut den = (sink - m).exp();
        oh.fill(0.0);
        for (j, v) in sc.iter_mut().enumerate() {
            let e = (*v - m).exp();
            den += e;
            let row = if j < p + 1 - first { raw_row(first + j) } else { comp_row(comp_rows[j - (p + 1 - first)]) };
            ops::axpy(e, row, oh);
        }
        let inv = 1.0 / den;
        for v in oh.iter_mut() {
            *v *= inv;
        }
    });
    // Inverse RoPE of every head output's tail.
    o.par_chunks_mut(nh * hd).enumerate().for_each(|(t, ot)| {
        let mut cs = Vec::new();
        rope.cos_sin(p0 + t, &mut cs);
        for oh in ot.chunks_mut(hd) {
            ops::rope_tail(oh, &cs, true);
        }
    });

    // Raw ring update (after attention: earlier rows of this chunk were read from `kv`).
    for t in n.saturating_sub(raw_cap)..n {
        let sl = (p0 + t) % raw_cap;
        ls.raw[sl * hd..(sl + 1) * hd].copy_from_slice(&kv[t * hd..(t + 1) * hd]);
    }

    // Grouped output projection: group g's heads through rows [g·o_lora, (g+1)·o_lora) of
    // attn_output_a, then attn_output_b.
    let (g_n, ol) = (hp.o_groups, hp.o_lora_rank);
    let gdim = hd * hp.heads_per_group();
    let mut low = vec![0f32; n * g_n * ol];
    let mut xg = vec![0f32; n * gdim];
    for g in 0..g_n {
        for t in 0..n {
            xg[t * gdim..(t + 1) * gdim].copy_from_slice(&o[t * nh * hd + g * gdim..t * nh * hd + (g + 1) * gdim]);
        }
        let yg = mm_rows(data, q8, &lw.out_a, g * ol, (g + 1) * ol, &xg, n);
        for t in 0..n {
            low[t * g_n * ol + g * ol..t * g_n * ol + (g + 1) * ol].copy_from_slice(&yg[t * ol..(t + 1) * ol]);
        }
    }
    let y = mm(data, q8, &lw.out_b, 0, &low, n);
    hc_post_all(hp, s, &y, &mixes);
}

// ------------------------------------------------------------------------------------
// FFN (MoE) sublayer (MODEL.md §2.6)
// ------------------------------------------------------------------------------------

/// The FFN (MoE) sublayer of one block for `tokens` (their ids drive hash routing).
pub(crate) fn ffn_sublayer(cx: &LayerCx, lw: &LayerWeights, s: &mut [f32], tokens: &[u32], trace: Option<&mut Trace>) {
    let (hp, data, q8) = (cx.hp, cx.data, cx.q8);
    let n = tokens.len();
    let d = hp.n_embd;
    let (k, ne) = (hp.n_expert_used, hp.n_expert);
    let (a, mixes) = hc_pre(cx, &lw.hc_ffn, s, n);
    let xn = norm_rows(&a, &lw.ffn_norm, hp.rms_eps);

    // Router: sqrt(softplus(logit)); hash table or biased top-k; normalized weights.
    let logits = mm(data, q8, &lw.gate_inp, 0, &xn, n);
    let mut sel = vec![0u32; n * k];
    let mut wts = vec![0f32; n * k];
    for t in 0..n {
        let probs: Vec<f32> = logits[t * ne..(t + 1) * ne].iter().map(|&x| ops::softplus(x).sqrt()).collect();
        let st = &mut sel[t * k..(t + 1) * k];
        if let Some(tab) = &lw.tid2eid {
            let tok = tokens[t] as usize;
            st.copy_from_slice(&tab[tok * k..(tok + 1) * k]);
        } else {
            let biased: Vec<f32> = match &lw.exp_probs_b {
                Some(b) => probs.iter().zip(b).map(|(p, b)| p + b).collect(),
                None => probs.clone(),
            };
            let mut idx: Vec<u32> = (0..ne as u32).collect();
            // Descending score, ties toward the smaller id (total order on floats).
            idx.sort_by(|&x, &y| biased[y as usize].total_cmp(&biased[x as usize]).then(x.cmp(&y)));
            st.copy_from_slice(&idx[..k]);
        }
        let sum: f32 = st.iter().map(|&e| probs[e as usize]).sum();
        for i in 0..k {
            let p = probs[st[i] as usize];
            wts[t * k + i] = if hp.expert_weights_norm { p / sum } else { p } * hp.expert_weights_scale;
        }
    }
    if let Some(tr) = trace {
        let lt = &mut tr.layers[lw.index];
        for t in 0..n {
            let mut pairs: Vec<(u32, f32)> = (0..k).map(|i| (sel[t * k + i], wts[t * k + i])).collect();
            pairs.sort_by_key(|p| p.0);
            lt.experts.extend(pairs.iter().map(|p| p.0));
            lt.weights.extend(pairs.iter().map(|p| p.1));
        }
    }

    // Routed experts, grouped by expert (ascending id); each token accumulates its experts'
    // outputs in ascending-id order, which depends only on its own selection.
    let ff = hp.expert_ff;
    let mut out = vec![0f32; n * d];
    for e in 0..ne {
        let users: Vec<(usize, f32)> = (0..n * k).filter(|&j| sel[j] as usize == e).map(|j| (j / k, wts[j])).collect();
        if users.is_empty() {
            continue;
        }
        let m = users.len();
        let mut xe = vec![0f32; m * d];
        for (i, &(t, _)) in users.iter().enumerate() {
            xe[i * d..(i + 1) * d].copy_from_slice(&xn[t * d..(t + 1) * d]);
        }
        let g = mm(data, q8, &lw.gate_exps, e, &xe, m);
        let u = mm(data, q8, &lw.up_exps, e, &xe, m);
        let mut mid = vec![0f32; m * ff];
        for (i, &(_, w)) in users.iter().enumerate() {
            swiglu(&g[i * ff..(i + 1) * ff], &u[i * ff..(i + 1) * ff], lw.clamp, w, &mut mid[i * ff..(i + 1) * ff]);
        }
        let y = mm(data, q8, &lw.down_exps, e, &mid, m);
        for (i, &(t, _)) in users.iter().enumerate() {
            for (o, &v) in out[t * d..(t + 1) * d].iter_mut().zip(&y[i * d..(i + 1) * d]) {
                *o += v;
            }
        }
    }
    // Shared expert (same clamp), then ffn_out = routed + shared.
    let gs = mm(data, q8, &lw.gate_sh, 0, &xn, n);
    let us = mm(data, q8, &lw.up_sh, 0, &xn, n);
    let mut ms = vec![0f32; n * ff];
    for t in 0..n {
        swiglu(&gs[t * ff..(t + 1) * ff], &us[t * ff..(t + 1) * ff], lw.clamp_sh, 1.0, &mut ms[t * ff..(t + 1) * ff]);
    }
    let ys = mm(data, q8, &lw.down_sh, 0, &ms, n);
    for (o, &v) in out.iter_mut().zip(&ys) {
        *o += v;
    }
    hc_post_all(hp, s, &out, &mixes);
}

// ------------------------------------------------------------------------------------
// Output head (MODEL.md §2.7)
// ------------------------------------------------------------------------------------

/// Collapse the streams of the selected token `rows` with an HC head (`hc`, whose matrix lives
/// in `cx.data`) and apply the final norm: `rows.len() × n_embd`. The model's output head and
/// the MTP drafter's head differ only in these weights.
pub(crate) fn hc_head(cx: &LayerCx, hc: &HcWeights, norm: &[f32], s: &[f32], rows: &[usize]) -> Vec<f32> {
    let hp = cx.hp;
    let (d, nh) = (hp.n_embd, hp.n_hc);
    let r = rows.len();
    let mut flat = Vec::with_capacity(r * nh * d);
    for &t in rows {
        flat.extend_from_slice(&s[t * nh * d..(t + 1) * nh * d]);
    }
    let orig = flat.clone();
    for f in flat.chunks_mut(nh * d) {
        ops::rmsnorm_inplace(f, hp.rms_eps);
    }
    let mix = mm(cx.data, cx.q8, &hc.fn_, 0, &flat, r);
    let mut yn = vec![0f32; r * d];
    let mut y = vec![0f32; d];
    for i in 0..r {
        let pre: Vec<f32> = (0..nh).map(|j| ops::sigmoid(mix[i * nh + j] * hc.scale[0] + hc.base[j]) + hp.hc_eps).collect();
        ops::hc_collapse(&orig[i * nh * d..(i + 1) * nh * d], &pre, &mut y);
        ops::rmsnorm_w(&y, norm, hp.rms_eps, &mut yn[i * d..(i + 1) * d]);
    }
    yn
}

/// LM head (`output.weight` of the main model) on normalized rows.
pub(crate) fn lm_head(m: &Model, q8: bool, yn: &[f32]) -> Vec<f32> {
    let r = yn.len() / m.hp.n_embd;
    mm(m.data(), q8, &m.output, 0, yn, r)
}

/// The model's output head on token `rows` of the streams.
fn output_head(cx: &LayerCx, m: &Model, s: &[f32], rows: &[usize]) -> Vec<f32> {
    let yn = hc_head(cx, &m.output_hc, &m.output_norm, s, rows);
    lm_head(m, cx.q8, &yn)
}

/// `y = W·x` for `n` token rows with a matrix of another file image (the MTP block's
/// projections).
pub(crate) fn matmul(data: &[u8], q8: bool, w: &Mat, x: &[f32], n: usize) -> Vec<f32> {
    mm(data, q8, w, 0, x, n)
}

/// `mid = silu(min(g, c)) · clamp(u, −c, c) · w`.
fn swiglu(g: &[f32], u: &[f32], c: f32, w: f32, mid: &mut [f32]) {
    for ((m, &g), &u) in mid.iter_mut().zip(g).zip(u) {
        *m = ops::silu(g.min(c)) * u.clamp(-c, c) * w;
    }
}

/// One compressor over a batch (MODEL.md §2.5.5): per token write the frontier row; when a
/// window closes, pool per dimension, norm, RoPE at the window start, apply `finish` (FP8 or
/// Hadamard+FP4 when QAT is on) and append to `rows`.
#[allow(clippy::too_many_arguments)]
fn compressor(
    data: &[u8],
    hp: &Hparams,
    cw: &CompressorWeights,
    xn: &[f32],
    n: usize,
    p0: usize,
    ratio: usize,
    d: usize,
    front: &mut Frontier,
    rows: &mut Vec<f32>,
    rope: &Rope,
    mut log: Option<&mut Vec<f32>>,
    mut finish: impl FnMut(&mut [f32], usize),
) {
    let w = cw.width;
    let kv = mm(data, false, &cw.kv, 0, xn, n);
    let sc = mm(data, false, &cw.gate, 0, xn, n);
    let mut pooled = vec![0f32; d];
    let mut out = vec![0f32; d];
    let mut cs = Vec::new();
    for t in 0..n {
        let p = p0 + t;
        let pm = p % ratio;
        let row = frontier_row(ratio, p);
        front.kv[row * w..(row + 1) * w].copy_from_slice(&kv[t * w..(t + 1) * w]);
        let ape = &cw.ape[pm * w..(pm + 1) * w];
        for ((f, &s), &a) in front.score[row * w..(row + 1) * w].iter_mut().zip(&sc[t * w..(t + 1) * w]).zip(ape) {
            *f = s + a;
        }
        if let Some(log) = log.as_deref_mut() {
            log.extend_from_slice(&front.kv[row * w..(row + 1) * w]);
            log.extend_from_slice(&front.score[row * w..(row + 1) * w]);
        }
        if (p + 1) % ratio != 0 {
            continue;
        }
        // Candidates per dim i: ratio 4 → previous window's first lane then the current
        // window's second lane; ratio 128 → the 128 rows.
        let cand = |j: usize, i: usize| -> usize {
            if ratio == 4 {
                if j < 4 {
                    j * w + i
                } else {
                    j * w + d + i
                }
            } else {
                j * w + i
            }
        };
        let nc = if ratio == 4 { 8 } else { ratio };
        for (i, pv) in pooled.iter_mut().enumerate() {
            let m = (0..nc).map(|j| front.score[cand(j, i)]).fold(f32::NEG_INFINITY, f32::max);
            if m <= -0.5e30 {
                *pv = 0.0;
                continue;
            }
            let (mut num, mut den) = (0f32, 0f32);
            for j in 0..nc {
                let e = (front.score[cand(j, i)] - m).exp();
                den += e;
                num += e * front.kv[cand(j, i)];
            }
            *pv = num / den;
        }
        ops::rmsnorm_w(&pooled, &cw.norm, hp.rms_eps, &mut out);
        rope.cos_sin(p + 1 - ratio, &mut cs);
        ops::rope_tail(&mut out, &cs, false);
        finish(&mut out, p);
        rows.extend_from_slice(&out);
        if ratio == 4 {
            frontier_shift(front);
        }
    }
}

/// Frontier row of position `p`: ratio 4 keeps the current window in rows 4..8 (the previous
/// one in 0..4), ratio 128 one row per position of the window.
fn frontier_row(ratio: usize, p: usize) -> usize {
    if ratio == 4 {
        4 + p % 4
    } else {
        p % ratio
    }
}

/// Ratio 4, after a window closed: the current window becomes the previous one.
fn frontier_shift(front: &mut Frontier) {
    let w = front.width;
    front.kv.copy_within(4 * w..8 * w, 0);
    front.score.copy_within(4 * w..8 * w, 0);
}

/// Bring a frontier saved at position `from` to position `to` with the rows logged by
/// [`compressor`] (the same writes and shifts, without the emissions, which the row counts
/// keep or drop).
fn frontier_replay(front: &mut Frontier, ratio: usize, from: usize, to: usize, log: &[f32]) {
    let w = front.width;
    for (i, p) in (from..to).enumerate() {
        let row = frontier_row(ratio, p);
        let rec = &log[i * 2 * w..(i + 1) * 2 * w];
        front.kv[row * w..(row + 1) * w].copy_from_slice(&rec[..w]);
        front.score[row * w..(row + 1) * w].copy_from_slice(&rec[w..]);
        if ratio == 4 && (p + 1) % 4 == 0 {
            frontier_shift(front);
        }
    }
}

/// Lightning indexer (MODEL.md §2.5.6): for each query with more than `top_k` visible rows,
/// the `top_k` best-scoring rows (ascending); `None` = all visible rows.
#[allow(clippy::too_many_arguments)]
fn indexer_select(
    data: &[u8],
    hp: &Hparams,
    iw: &crate::model::IndexerWeights,
    qr: &[f32],
    xn: &[f32],
    n: usize,
    p0: usize,
    idx_rows: &[f32],
    rope: &Rope,
    qat: bool,
    layer: usize,
    ties: Option<&mut Vec<NearTie>>,
    flip: Option<(usize, &'static str)>,
) -> Vec<Option<Vec<u32>>> {
    let tk = hp.idx_top_k;
    let (hi, di) = (hp.idx_heads, hp.idx_head_dim);
    // Queries needing selection form a suffix of the batch (visibility grows with position).
    let first = (0..n).find(|&t| (p0 + t + 1) / 4 > tk).unwrap_or(n);
    let mut out = vec![None; n];
    if first == n {
        return out;
    }
    let m = n - first;
    let ql = hp.q_lora_rank;
    let d = hp.n_embd;
    let mut qi = mm(data, false, &iw.q_b, 0, &qr[first * ql..], m);
    let wt = mm(data, false, &iw.proj, 0, &xn[first * d..], m);
    let wscale = (1.0 / ((di * hi) as f64).sqrt()) as f32;
    let tracing = ties.is_some();
    let mut margins = vec![(f32::INFINITY, f32::INFINITY); m];
    out[first..].par_iter_mut().zip(margins.par_iter_mut()).zip(qi.par_chunks_mut(hi * di)).zip(wt.par_chunks(hi)).enumerate().for_each(
        |(j, (((o, mg), q), wt))| {
            let p = p0 + first + j;
            let nvis = (p + 1) / 4;
            let mut cs = Vec::new();
            rope.cos_sin(p, &mut cs);
            // verification (Trace::force_flip): this query's nearest FP4 decision, in the head
            // that holds it, taken the other way
            let flip_q = flip == Some((p, "indexer query fp4"));
            let flip_head = if flip_q && qat {
                let mut best = (f32::INFINITY, usize::MAX);
                for (h, qh) in q.chunks(di).enumerate() {
                    let mut t = qh.to_vec();
                    ops::rope_tail(&mut t, &cs, false);
                    ops::hadamard(&mut t);
                    let m = ops::fp4_margin(&t);
                    if m < best.0 {
                        best = (m, h);
                    }
                }
                best.1
            } else {
                usize::MAX
            };
            for (h, qh) in q.chunks_mut(di).enumerate() {
                ops::rope_tail(qh, &cs, false);
                if qat {
                    ops::hadamard(qh);
                    if tracing {
                        mg.0 = mg.0.min(ops::fp4_margin(qh));
                    }
                    if h == flip_head {
                        ops::fp4_roundtrip_flipped(qh);
                    } else {
                        ops::fp4_roundtrip(qh);
                    }
                }
            }
            let w: Vec<f32> = wt.iter().map(|&x| x * wscale).collect();
            // Rows in parallel too: a single decode query may score ~n/4 rows.
            let q = &*q;
            let scores: Vec<f32> = (0..nvis)
                .into_par_iter()
                .with_min_len(256)
                .map(|c| {
                    let kc = &idx_rows[c * di..(c + 1) * di];
                    let mut s = 0f32;
                    for h in 0..hi {
                        s += w[h] * ops::dot(&q[h * di..(h + 1) * di], kc).max(0.0);
                    }
                    s
                })
                .collect();
            let mut order: Vec<u32> = (0..nvis as u32).collect();
            let cmp = |a: &u32, b: &u32| scores[*b as usize].total_cmp(&scores[*a as usize]).then(a.cmp(b));
            order.select_nth_unstable_by(tk - 1, cmp);
            if tracing {
                // Gap between the last selected score and the best rejected one.
                let cut = scores[order[tk - 1] as usize];
                let next = order[tk..].iter().map(|&c| scores[c as usize]).fold(f32::NEG_INFINITY, f32::max);
                mg.1 = (cut - next).abs() / cut.abs().max(next.abs()).max(f32::MIN_POSITIVE);
            }
            let mut sel = order[..tk].to_vec();
            if flip == Some((p, "indexer top-k cut")) && nvis > tk {
                // verification: the last selected row and the best rejected one swap places
                let last = (0..tk).min_by(|&a, &b| cmp(&order[b], &order[a])).unwrap_or(tk - 1);
                let best_rej = order[tk..].iter().copied().min_by(cmp).unwrap_or(order[tk - 1]);
                sel[last] = best_rej;
            }
            sel.sort_unstable();
            *o = Some(sel);
        },
    );
    if let Some(ties) = ties {
        for (j, &(q, cut)) in margins.iter().enumerate() {
            note_tie(ties, layer, p0 + first + j, "indexer query fp4", q);
            note_tie(ties, layer, p0 + first + j, "indexer top-k cut", cut);
        }
    }
    out
}

/// Experiment only (cargo feature `qat-perturb`, never in normal builds): relative noise of size
/// `DS4_PERTURB=seed,eps` on the KV projection, to measure how float-level differences between
/// two correct implementations move the QAT rounding decisions (tests/qat_perturb.rs).
#[cfg(feature = "qat-perturb")]
mod perturb {
    pub fn apply(v: &mut [f32], layer: usize, p0: usize) {
        let Ok(s) = std::env::var("DS4_PERTURB") else { return };
        let mut it = s.split(',');
        let (Some(Ok(seed)), Some(Ok(eps))) = (it.next().map(str::parse::<u64>), it.next().map(str::parse::<f32>)) else { return };
        for (i, x) in v.iter_mut().enumerate() {
            // splitmix-style hash of (seed, layer, position, index): a fixed noise per element
            let mut h = seed ^ ((layer as u64) << 40) ^ (((p0 * 100_000 + i) as u64) << 1);
            h ^= h >> 33;
            h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
            h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
            h ^= h >> 33;
            let u = (h >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0;
            *x *= 1.0 + eps * u;
        }
    }
}

/// Verification: look for ONE QAT rounding decision of this reference (within `window`
/// positions before or at `p`, relative margin below 1e-3, nearest first, at most `max_tries`)
/// whose flip makes the reference reproduce `other` — another implementation's logits for
/// `tokens[..=p]`, row-major — within `tol` on every row, while moving the reference's own
/// rows by more than `tol` (the flip matters). Returns the decision and the largest remaining
/// difference. A deviation explained this way is a rounding flip between two
/// correct float32 implementations, not a computational difference.
pub fn explain_by_one_flip(model: &Arc<Model>, tokens: &[u32], other: &[f32], p: usize, tol: f32, window: usize, max_tries: usize) -> Option<(NearTie, f32)> {
    let v = model.hp.n_vocab;
    let n = p + 1;
    if tokens.len() < n || other.len() < n * v {
        return None;
    }
    let run = |flip: Option<(usize, usize, &'static str)>, thr: Option<f32>| -> Option<(Vec<f32>, Vec<NearTie>)> {
        let mut be = CpuBackend::new(model.clone(), Options { qat: true });
        be.trace = Some(Trace { tie_threshold: thr, force_flip: flip, ..Default::default() });
        let lg = be.forward_tokens(&tokens[..n], true).ok()?;
        Some((lg, be.trace.take().map(|t| t.near_ties).unwrap_or_default()))
    };
    let (base, ties) = run(None, Some(MAX_TIE_RECORD))?;
    let mut cands: Vec<NearTie> = ties
        .into_iter()
        .filter(|t| t.pos + window >= p && t.pos <= p)
        .collect();
    cands.sort_by(|a, b| a.margin.total_cmp(&b.margin));
    for c in cands.into_iter().take(max_tries) {
        let (lg, _) = run(Some((c.layer, c.pos, c.what)), None)?;
        let maxdiff = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        let d = maxdiff(&lg, &other[..n * v]);
        // the flip must be what moves the rows (not a decision too small to matter), and then
        // account for the other run
        if d <= tol && maxdiff(&lg, &base) > tol {
            return Some((c, d));
        }
    }
    None
}

/// Candidates are kept up to this margin; the trace's threshold filters them.
const MAX_TIE_RECORD: f32 = 1e-3;

fn note_tie(ties: &mut Vec<NearTie>, layer: usize, pos: usize, what: &'static str, margin: f32) {
    if margin < MAX_TIE_RECORD {
        ties.push(NearTie { layer, pos, what, margin });
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }
    fn model(&self) -> &Arc<Model> {
        &self.model
    }
    fn pos(&self) -> usize {
        self.state.pos
    }
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>, EngineError> {
        self.forward_tokens(tokens, all_logits)
    }
    // The decode-run steps the CUDA backend runs on the device, here on the host logits: no
    // transfer to save, but every CPU run (CI's tests of the CLI and the server included) then
    // goes through the same deferred-logits path of `Session::decode_run` as a GPU.
    fn eval_argmax(&mut self, token: u32) -> Option<Result<u32, EngineError>> {
        Some(self.forward_tokens(&[token], false).map(|lg| {
            self.held = lg;
            crate::sampling::argmax(&self.held)
        }))
    }
    fn eval_near_max(&mut self, token: u32, temperature: f32, floor: f32, with_sum: bool) -> Option<Result<Option<NearMax>, EngineError>> {
        Some(self.forward_tokens(&[token], false).map(|lg| {
            self.held = lg;
            near_max_of(&self.held, temperature, floor, NEAR_MAX_CAP, with_sum)
        }))
    }
    fn eval_top_k(&mut self, token: u32, k: usize) -> Option<Result<Option<NearMax>, EngineError>> {
        Some(self.forward_tokens(&[token], false).map(|lg| {
            self.held = lg;
            top_k_of(&self.held, k)
        }))
    }
    fn fetch_logits(&mut self) -> Result<Vec<f32>, EngineError> {
        Ok(self.held.clone())
    }
    fn reset(&mut self) {
        self.state.reset();
        self.spec = None;
        self.hidden = None;
    }
    fn export_state(&self) -> KvState {
        self.state.clone()
    }
    fn import_state(&mut self, state: &KvState) -> Result<(), EngineError> {
        let fresh = KvState::new(&self.model.hp);
        let same_shape = state.raw_cap == fresh.raw_cap
            && state.head_dim == fresh.head_dim
            && state.idx_head_dim == fresh.idx_head_dim
            && state.layers.len() == fresh.layers.len()
            && state.layers.iter().zip(&fresh.layers).all(|(a, b)| shape_eq(a, b));
        if !same_shape {
            return Err(EngineError::Backend("state does not match this model's layout".into()));
        }
        self.state.clone_from(state);
        self.spec = None;
        self.hidden = None;
        Ok(())
    }
    fn set_capture_hidden(&mut self, on: bool) -> bool {
        self.capture_hidden = on;
        if !on {
            self.hidden = None;
        }
        true
    }
    fn hidden(&self) -> Option<&[f32]> {
        self.hidden.as_deref()
    }
    fn spec_mark(&mut self, max_tokens: usize) -> bool {
        self.mark(max_tokens)
    }
    fn spec_rewind(&mut self, pos: usize) -> Result<(), EngineError> {
        self.rewind(pos)?;
        self.hidden = None;
        Ok(())
    }
    fn spec_release(&mut self) {
        self.spec = None;
    }
}

fn shape_eq(a: &LayerState, b: &LayerState) -> bool {
    let f = |x: &Option<Frontier>, y: &Option<Frontier>| match (x, y) {
        (Some(x), Some(y)) => x.rows == y.rows && x.width == y.width && x.kv.len() == y.kv.len() && x.score.len() == y.score.len(),
        (None, None) => true,
        _ => false,
    };
    a.ratio == b.ratio && a.raw.len() == b.raw.len() && f(&a.comp_front, &b.comp_front) && f(&a.idx_front, &b.idx_front)
}
