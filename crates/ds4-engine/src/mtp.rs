//! MTP speculative decoding (MODEL.md §7, §3.4).
//!
//! * [`MtpDrafter`] — the drafter block on the CPU (§7.2): `X = e_proj·norm(embed(t)) +
//!   h_proj·norm(h[s])`, one ratio-0 decoder block (the engine's own attention / MoE / HC
//!   functions, run on the MTP file's weights) with its own raw-window ring, then the MTP HC
//!   head + norm and the main model's LM head. `X'` feeds the next recursive step.
//! * [`Session::eval_speculative`] — one greedy speculative step: commit the given token plus
//!   the longest prefix of drafted tokens that the main model's argmax agrees with. The
//!   tokens, the model state and the logits afterwards are exactly those of plain greedy
//!   decoding (same bits on the CPU backend): drafts are verified with one batched forward
//!   (rows bit-identical to decode steps), and the rejected tail is dropped with the backend's
//!   speculative rewind (ring rows, row counts and frontiers restored, §3.4) or, on a backend
//!   without one, by re-importing a snapshot and replaying the accepted tokens. `strict`
//!   verifies with ordinary decode steps instead (exact on any backend).
//!
//! # Pairing
//! [`Pairing::DeepSeek`] (the default, MODEL.md §7.3's recommendation): MTP row `j` combines
//! the main model's final streams `h_j` with the embedding of token `j+1` and guesses token
//! `j+2`. The drafter's cache is kept filled with such rows for the last window of committed
//! positions (prompt included), computed lazily from a ring of the main model's last 128
//! hidden states. A step that is given token `x_P` drafts from `(h_{P−1}, x_P)` without another
//! main forward, then verifies `[x_P, d_1..d_k]` in one batch.
//! [`Pairing::Ds4`] (compatibility): row `j` combines `h_j` with token `j` itself; the first MTP
//! output guesses the already known `x_P` and acts as a gate (ds4 stops when it is wrong),
//! drafting then continues from `(X', x_P)`. Deviation from ds4: its drafter never sees the
//! prompt; here both pairings fill the drafter's window from the committed positions.
//!
//! Rows computed from the drafter's own `X'` (speculative) are dropped after each step, so the
//! drafter cache only ever holds rows built from the main model's hidden states.

use crate::backend::{EngineError, Options};
use crate::cpu::{self, AttnState, LayerCx};
use crate::model::{Model, MtpWeights};
use crate::ops::Rope;
use crate::sampling::argmax;
use crate::session::Session;
use crate::state::LayerState;
use std::sync::Arc;

/// Most tokens drafted per step (ds4's limit).
pub const MAX_DRAFT: usize = 16;

/// Rows of the drafter's raw ring: the 128-row window plus room for the speculative rows of
/// one step, so dropping them never needs a copy (§3.4).
pub const MTP_RING: usize = 256;

/// The MTP drafter block with its own raw-window KV ring.
pub struct MtpDrafter {
    model: Arc<Model>,
    mtp: Arc<MtpWeights>,
    state: LayerState,
    /// Next row position; rows `lo..pos` are valid.
    pos: usize,
    lo: usize,
    rope: Rope,
    qat: bool,
    q8: bool,
}

impl MtpDrafter {
    /// A drafter for `model` (the MTP weights must have been bound against its hyperparameters,
    /// [`MtpWeights::load`]). `opts.qat` applies the FP8 KV round trip to its rows as in the
    /// model's layers.
    pub fn new(model: Arc<Model>, mtp: Arc<MtpWeights>, opts: Options) -> Result<MtpDrafter, EngineError> {
        let hp = &model.hp;
        let d = hp.n_embd;
        let ok = mtp.e_proj.cols == d
            && mtp.e_proj.rows == d
            && mtp.h_proj.cols == d
            && mtp.h_proj.rows == d
            && mtp.hc_head.fn_.cols == hp.n_hc * d
            && mtp.block.kv.rows == hp.head_dim
            && mtp.block.ratio == 0;
        if !ok {
            return Err(EngineError::Backend("the MTP weights do not match the model's dimensions".into()));
        }
        let state = LayerState {
            ratio: 0,
            raw: vec![0.0; MTP_RING * hp.head_dim],
            comp: Vec::new(),
            comp_front: None,
            idx: Vec::new(),
            idx_front: None,
        };
        let rope = Rope::plain(hp.rope_freq_base, hp.rope_dim);
        Ok(MtpDrafter { model, mtp, state, pos: 0, lo: 0, rope, qat: opts.qat, q8: false })
    }

    /// 8-bit activations for the block's matmuls (as [`crate::CpuBackend::with_q8_activations`]).
    pub fn with_q8_activations(mut self, on: bool) -> MtpDrafter {
        self.q8 = on;
        self
    }

    /// Position of the next row.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// First valid row.
    pub fn lo(&self) -> usize {
        self.lo
    }

    pub fn reset(&mut self) {
        self.restart(0);
    }

    /// An empty cache whose first row will be at position `pos`.
    pub fn restart(&mut self, pos: usize) {
        self.pos = pos;
        self.lo = pos;
    }

    /// Keep only the rows before `pos` (an exact rewind while the dropped rows are at most
    /// `MTP_RING − window` newer than the kept ones, which one speculative step guarantees).
    pub fn truncate(&mut self, pos: usize) {
        if pos < self.pos {
            if pos < self.lo || self.pos - pos > MTP_RING - self.model.hp.sliding_window {
                self.restart(pos);
            } else {
                self.pos = pos;
            }
        }
    }

    /// Run the block on rows at positions `pos..pos+n`: `hidden` are the streams `h`
    /// (`n × n_hc × n_embd`), `tokens` the embedded tokens. Returns the logits of every row
    /// (`all_logits`) or of the last one, and the output streams `X'` of every row.
    pub fn forward(&mut self, hidden: &[f32], tokens: &[u32], all_logits: bool) -> Result<(Vec<f32>, Vec<f32>), EngineError> {
        let model = self.model.clone();
        let mtp = self.mtp.clone();
        let hp = &model.hp;
        let (d, nh, n) = (hp.n_embd, hp.n_hc, tokens.len());
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= hp.n_vocab) {
            return Err(EngineError::BadToken(t, hp.n_vocab));
        }
        if hidden.len() != n * nh * d {
            return Err(EngineError::Backend(format!("MTP input: {} hidden values for {n} rows of {}", hidden.len(), nh * d)));
        }
        let eps = hp.rms_eps;
        let cx = LayerCx { hp, data: mtp.data(), q8: self.q8, qat: self.qat };
        // Token path (broadcast to every stream) and per-stream hidden path.
        let en = cpu::norm_rows(&cpu::embed_rows(&model, tokens), &mtp.enorm, eps);
        let ep = cpu::matmul(cx.data, cx.q8, &mtp.e_proj, &en, n);
        let hn = cpu::norm_rows(hidden, &mtp.hnorm, eps);
        let mut x = cpu::matmul(cx.data, cx.q8, &mtp.h_proj, &hn, n * nh);
        for (xt, et) in x.chunks_mut(nh * d).zip(ep.chunks(d)) {
            for xs in xt.chunks_mut(d) {
                for (v, &e) in xs.iter_mut().zip(et) {
                    *v += e;
                }
            }
        }
        let st = AttnState { ls: &mut self.state, raw_cap: MTP_RING, p0: self.pos, lo: self.lo };
        cpu::attention_sublayer(&cx, &mtp.block, st, &self.rope, &self.rope, &mut x, n, None, None);
        cpu::ffn_sublayer(&cx, &mtp.block, &mut x, tokens, None);
        self.pos += n;
        let rows: Vec<usize> = if all_logits { (0..n).collect() } else { vec![n - 1] };
        let yn = cpu::hc_head(&cx, &mtp.hc_head, &mtp.norm, &x, &rows);
        Ok((cpu::lm_head(&model, self.q8, &yn), x))
    }
}

/// How MTP rows pair hidden states with tokens (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// `(h_j, x_{j+1}) → x_{j+2}`.
    DeepSeek,
    /// ds4's `(h_j, x_j) → x_{j+1}`.
    Ds4,
}

impl std::str::FromStr for Pairing {
    type Err = String;
    fn from_str(s: &str) -> Result<Pairing, String> {
        match s {
            "deepseek" => Ok(Pairing::DeepSeek),
            "ds4" => Ok(Pairing::Ds4),
            _ => Err(format!("invalid MTP pairing {s:?} (deepseek or ds4)")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpecConfig {
    /// Tokens drafted per step, `1..=MAX_DRAFT` (the CLI only speculates when `--mtp-draft`
    /// is above 1).
    pub max_draft: usize,
    /// Non-strict: a draft is only proposed when its MTP logits' top-1 − top-2 margin reaches
    /// this (ds4's `--mtp-margin`, default 3); a low-confidence first draft means a plain
    /// decode step.
    pub margin: f32,
    /// Verify with one decode step per token (exact on any backend) and no margin gate
    /// (`--quality`).
    pub strict: bool,
    pub pairing: Pairing,
    /// Never draft this token or beyond it (EOS: the caller stops there).
    pub stop_token: Option<u32>,
}

impl Default for SpecConfig {
    fn default() -> Self {
        SpecConfig { max_draft: 1, margin: 3.0, strict: false, pairing: Pairing::DeepSeek, stop_token: None }
    }
}

impl SpecConfig {
    /// The `--mtp-draft N` / `--mtp-margin F` / `--quality` rule of the CLI and the server
    /// (CLI.md §4.1, SERVING.md §10): speculation needs `N > 1` and is off while
    /// `DS4_MTP_SPEC_DISABLE` is set; `--quality` or `DS4_MTP_STRICT` selects strict
    /// verification. Greedy sampling is the caller's condition. The error says why
    /// speculation is off.
    pub fn from_flags(max_draft: usize, margin: f32, quality: bool, pairing: Pairing) -> Result<SpecConfig, &'static str> {
        if std::env::var_os("DS4_MTP_SPEC_DISABLE").is_some() {
            return Err("DS4_MTP_SPEC_DISABLE is set");
        }
        if max_draft < 2 {
            return Err("--mtp-draft is 1 (speculation needs at least 2)");
        }
        Ok(SpecConfig {
            max_draft,
            margin,
            strict: quality || std::env::var_os("DS4_MTP_STRICT").is_some(),
            pairing,
            stop_token: None,
        })
    }
}

/// Counters of the speculative steps of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecStats {
    /// Calls of [`Session::eval_speculative`].
    pub steps: u64,
    /// Steps that verified drafts.
    pub verified: u64,
    pub drafted: u64,
    pub accepted: u64,
    /// Tokens committed (given tokens plus accepted drafts).
    pub committed: u64,
}

impl SpecStats {
    /// Accepted / drafted (0 when nothing was drafted).
    pub fn acceptance(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// The counters accumulated since `earlier` (a reading of the same session).
    pub fn since(&self, earlier: &SpecStats) -> SpecStats {
        SpecStats {
            steps: self.steps - earlier.steps,
            verified: self.verified - earlier.verified,
            drafted: self.drafted - earlier.drafted,
            accepted: self.accepted - earlier.accepted,
            committed: self.committed - earlier.committed,
        }
    }

    /// `A/D drafted tokens accepted (P%), C tokens in S steps (R tokens/step)` (the CLI's and
    /// the server's report).
    pub fn summary(&self) -> String {
        let per_step = if self.steps > 0 { self.committed as f64 / self.steps as f64 } else { 0.0 };
        format!(
            "{}/{} drafted tokens accepted ({:.1}%), {} tokens in {} steps ({:.2} tokens/step)",
            self.accepted,
            self.drafted,
            100.0 * self.acceptance(),
            self.committed,
            self.steps,
            per_step
        )
    }
}

/// A draft source replacing the MTP (tests, experiments): given the committed tokens and the
/// token about to be committed, propose up to `max` tokens to follow it.
pub trait DraftHook: Send {
    fn draft(&mut self, history: &[u32], next: u32, max: usize) -> Vec<u32>;
}

impl<F: FnMut(&[u32], u32, usize) -> Vec<u32> + Send> DraftHook for F {
    fn draft(&mut self, history: &[u32], next: u32, max: usize) -> Vec<u32> {
        self(history, next, max)
    }
}

enum Source {
    Mtp(Box<MtpDrafter>),
    Hook(Box<dyn DraftHook>),
}

/// Per-session speculative state: the draft source, the ring of the main model's last
/// hidden states, counters.
pub(crate) struct Spec {
    cfg: SpecConfig,
    source: Source,
    /// `window` rows of `n_hc·n_embd`; row of position `t` at slot `t % window`.
    hist: Vec<f32>,
    row: usize,
    window: usize,
    /// Valid hidden states: positions `hist_lo..hist_hi`.
    hist_lo: usize,
    hist_hi: usize,
    stats: SpecStats,
}

impl Spec {
    fn new(model: &Model, cfg: SpecConfig, source: Source) -> Spec {
        let hp = &model.hp;
        let (row, window) = (hp.n_hc * hp.n_embd, hp.sliding_window);
        let hist = if matches!(source, Source::Mtp(_)) { vec![0.0; row * window] } else { Vec::new() };
        Spec { cfg, source, hist, row, window, hist_lo: 0, hist_hi: 0, stats: SpecStats::default() }
    }

    /// The hidden states of `n` tokens just evaluated at `p0..p0+n` (None: not available).
    pub(crate) fn record(&mut self, hidden: Option<&[f32]>, p0: usize, n: usize) {
        let end = p0 + n;
        match hidden {
            Some(h) if !self.hist.is_empty() && h.len() >= n * self.row => {
                if p0 != self.hist_hi {
                    self.hist_lo = p0;
                }
                for t in n.saturating_sub(self.window)..n {
                    let sl = (p0 + t) % self.window;
                    self.hist[sl * self.row..(sl + 1) * self.row].copy_from_slice(&h[t * self.row..(t + 1) * self.row]);
                }
                self.hist_hi = end;
                self.hist_lo = self.hist_lo.max(end.saturating_sub(self.window));
            }
            _ => {
                self.hist_lo = end;
                self.hist_hi = end;
            }
        }
    }

    /// The session's state was replaced (reset, restore, payload): history and drafter cache
    /// no longer describe it.
    pub(crate) fn invalidate(&mut self, pos: usize) {
        self.hist_lo = pos;
        self.hist_hi = pos;
        if let Source::Mtp(d) = &mut self.source {
            d.restart(pos);
        }
    }

    /// Up to `k` drafts to follow `next`, given the committed `tokens` (module docs).
    fn draft(&mut self, tokens: &[u32], next: u32, k: usize, vocab: usize) -> Result<Vec<u32>, EngineError> {
        let cfg = self.cfg;
        let stop = |d: u32| Some(d) == cfg.stop_token || d as usize >= vocab;
        let mut out = Vec::new();
        let drafter = match &mut self.source {
            Source::Hook(h) => {
                for d in h.draft(tokens, next, k).into_iter().take(k) {
                    if stop(d) {
                        break;
                    }
                    out.push(d);
                }
                return Ok(out);
            }
            Source::Mtp(d) => d,
        };
        let p = tokens.len();
        // The newest true row is position p−1: it needs h_{p−1}.
        if p == 0 || self.hist_hi != p || self.hist_lo >= p {
            return Ok(out);
        }
        let last = p - 1;
        let first = last.saturating_sub(self.window - 1).max(self.hist_lo);
        if drafter.pos() > last {
            drafter.truncate(last);
        }
        if drafter.pos() < first || drafter.lo() > drafter.pos() {
            drafter.restart(first);
        }
        let j0 = drafter.pos();
        let tok = |j: usize| -> u32 {
            let t = match cfg.pairing {
                Pairing::DeepSeek => j + 1,
                Pairing::Ds4 => j,
            };
            if t < p {
                tokens[t]
            } else {
                next
            }
        };
        let toks: Vec<u32> = (j0..=last).map(tok).collect();
        let mut hid = Vec::with_capacity(toks.len() * self.row);
        for j in j0..=last {
            let sl = j % self.window;
            hid.extend_from_slice(&self.hist[sl * self.row..(sl + 1) * self.row]);
        }
        let row = self.row;
        let last_row = |x: &[f32]| x[x.len() - row..].to_vec();
        let (mut lg, x) = drafter.forward(&hid, &toks, false)?;
        let mut h = last_row(&x);
        if cfg.pairing == Pairing::Ds4 {
            // ds4's first output guesses `next`, which the main model already chose.
            if argmax(&lg) != next {
                return Ok(out);
            }
            let (l2, x2) = drafter.forward(&h, &[next], false)?;
            lg = l2;
            h = last_row(&x2);
        }
        while out.len() < k {
            if !cfg.strict && margin(&lg) < cfg.margin {
                break;
            }
            let d = argmax(&lg);
            if stop(d) {
                break;
            }
            out.push(d);
            if out.len() == k {
                break;
            }
            let (l2, x2) = drafter.forward(&h, &[d], false)?;
            lg = l2;
            h = last_row(&x2);
        }
        Ok(out)
    }

    /// After a step that started at position `p`: drop the drafter's speculative rows.
    fn end_step(&mut self, p: usize) {
        if let Source::Mtp(d) = &mut self.source {
            d.truncate(p);
        }
    }
}

/// Top-1 minus top-2 logit (infinite for a single logit).
fn margin(logits: &[f32]) -> f32 {
    let (mut a, mut b) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    for &v in logits {
        if v > a {
            b = a;
            a = v;
        } else if v > b {
            b = v;
        }
    }
    a - b
}

impl Session {
    /// Speculate with the MTP drafter. The backend must expose its hidden states (the CPU
    /// backend does); enable before the prompt is processed so the drafter's window can be
    /// filled from it.
    pub fn enable_mtp(&mut self, drafter: MtpDrafter, cfg: SpecConfig) -> Result<(), EngineError> {
        if !Arc::ptr_eq(&drafter.model, &self.model) {
            return Err(EngineError::Backend("the MTP drafter was built for another model".into()));
        }
        if !self.backend.set_capture_hidden(true) {
            return Err(EngineError::Backend(format!(
                "the {} backend does not expose hidden states: MTP drafting needs the CPU backend",
                self.backend.name()
            )));
        }
        let mut sp = Spec::new(&self.model, check_cfg(cfg)?, Source::Mtp(Box::new(drafter)));
        sp.invalidate(self.tokens.len());
        self.spec = Some(Box::new(sp));
        Ok(())
    }

    /// Speculate with drafts from `hook` instead of the MTP (tests, experiments).
    pub fn set_draft_hook(&mut self, hook: Box<dyn DraftHook>, cfg: SpecConfig) -> Result<(), EngineError> {
        self.backend.set_capture_hidden(false);
        self.spec = Some(Box::new(Spec::new(&self.model, check_cfg(cfg)?, Source::Hook(hook))));
        Ok(())
    }

    /// Back to plain decoding.
    pub fn disable_speculation(&mut self) {
        if self.spec.take().is_some() {
            self.backend.set_capture_hidden(false);
        }
    }

    pub fn spec_config(&self) -> Option<SpecConfig> {
        self.spec.as_ref().map(|s| s.cfg)
    }

    pub fn set_spec_config(&mut self, cfg: SpecConfig) -> Result<(), EngineError> {
        let cfg = check_cfg(cfg)?;
        if let Some(s) = self.spec.as_deref_mut() {
            s.cfg = cfg;
        }
        Ok(())
    }

    pub fn spec_stats(&self) -> Option<SpecStats> {
        self.spec.as_ref().map(|s| s.stats)
    }

    /// One greedy speculative step: commit `token` (the argmax of [`Session::logits`], not the
    /// stop token) and the drafted tokens that follow it as long as each is the main model's
    /// argmax after its predecessor; at most `max_new` tokens (≥ 1) and never past the
    /// context. Returns the committed run (`token` first). Afterwards the session holds exactly
    /// what plain decoding of that run produces; [`Session::logits`] predicts the next token.
    /// Without speculation enabled this is [`Session::eval`].
    pub fn eval_speculative(&mut self, token: u32, max_new: usize) -> Result<Vec<u32>, EngineError> {
        self.eval_speculative_until(token, max_new, &mut |_| false)
    }

    /// [`Session::eval_speculative`] for a caller that may end the run early (a stop string,
    /// the end of a tool call): `stop_after(t)` is called for each token of the run in order,
    /// `token` first, and returning true commits nothing after `t` — the session then holds
    /// exactly what plain decoding up to `t` produces. The tokens it sees are the run unless
    /// an error is returned (then nothing of the step is committed).
    pub fn eval_speculative_until(&mut self, token: u32, max_new: usize, stop_after: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>, EngineError> {
        let v = self.model.hp.n_vocab;
        if token as usize >= v {
            return Err(EngineError::BadToken(token, v));
        }
        let p = self.tokens.len();
        if p + 1 > self.ctx {
            return Err(EngineError::ContextFull { need: p + 1, ctx: self.ctx });
        }
        let Some(sp) = self.spec.as_deref_mut() else {
            self.eval(token)?;
            stop_after(token);
            return Ok(vec![token]);
        };
        let k = sp.cfg.max_draft.min(max_new.saturating_sub(1)).min(self.ctx - p - 1);
        let drafts = if k > 0 {
            match sp.draft(&self.tokens, token, k, v) {
                Ok(d) => d,
                Err(e) => {
                    sp.end_step(p);
                    return Err(e);
                }
            }
        } else {
            Vec::new()
        };
        sp.stats.steps += 1;
        let strict = sp.cfg.strict;
        let mut batch = Vec::with_capacity(1 + drafts.len());
        batch.push(token);
        batch.extend_from_slice(&drafts);
        let res = if drafts.is_empty() {
            self.eval(token).map(|_| {
                stop_after(token);
                batch
            })
        } else if strict {
            self.verify_sequential(&batch, stop_after)
        } else {
            self.verify_batched(&batch, stop_after)
        };
        let sp = self.spec.as_deref_mut().expect("speculation enabled");
        sp.end_step(p);
        let run = res?;
        if !drafts.is_empty() {
            sp.stats.verified += 1;
            sp.stats.drafted += drafts.len() as u64;
            sp.stats.accepted += (run.len() - 1) as u64;
        }
        sp.stats.committed += run.len() as u64;
        Ok(run)
    }

    /// Decode `batch` one token at a time, stopping after the first token whose successor is
    /// not the argmax (or that `stop_after` ends the run at).
    fn verify_sequential(&mut self, batch: &[u32], stop_after: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>, EngineError> {
        let mut out = Vec::with_capacity(batch.len());
        for (i, &t) in batch.iter().enumerate() {
            self.eval(t)?;
            out.push(t);
            if stop_after(t) || (i + 1 < batch.len() && argmax(&self.logits) != batch[i + 1]) {
                break;
            }
        }
        Ok(out)
    }

    /// One batched forward of `batch` with every row's logits; keep the agreeing prefix (up to
    /// where `stop_after` ends the run) and rewind the backend past it.
    fn verify_batched(&mut self, batch: &[u32], stop_after: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>, EngineError> {
        let v = self.model.hp.n_vocab;
        let p = self.tokens.len();
        let n = batch.len();
        let marked = self.backend.spec_mark(n);
        let saved = if marked { None } else { Some(self.backend.export_state()) };
        let lg = match self.backend.forward(batch, true) {
            Ok(lg) => lg,
            Err(e) => {
                self.recover(p, saved.as_ref());
                return Err(e);
            }
        };
        let mut agree = 1;
        while agree < n && argmax(&lg[(agree - 1) * v..agree * v]) == batch[agree] {
            agree += 1;
        }
        let mut keep = 0;
        while keep < agree {
            keep += 1;
            if stop_after(batch[keep - 1]) {
                break;
            }
        }
        let hidden = self.spec.as_ref().and_then(|s| {
            let row = s.row;
            self.backend.hidden().filter(|h| h.len() >= keep * row).map(|h| h[..keep * row].to_vec())
        });
        if keep < n {
            let r = match &saved {
                None => self.backend.spec_rewind(p + keep),
                Some(st) => self.backend.import_state(st).and_then(|_| self.backend.forward(&batch[..keep], false).map(|_| ())),
            };
            if let Err(e) = r {
                self.recover(p, saved.as_ref());
                return Err(e);
            }
        }
        self.backend.spec_release();
        self.tokens.extend_from_slice(&batch[..keep]);
        self.logits.clear();
        self.logits.extend_from_slice(&lg[(keep - 1) * v..keep * v]);
        if let Some(sp) = self.spec.as_deref_mut() {
            sp.record(hidden.as_deref(), p, keep);
        }
        Ok(batch[..keep].to_vec())
    }

    /// After a failed verification: back to position `p` (the tokens and logits were not
    /// touched), or to an empty session if that fails too.
    fn recover(&mut self, p: usize, saved: Option<&crate::state::KvState>) {
        let ok = match saved {
            None => self.backend.spec_rewind(p).is_ok(),
            Some(st) => self.backend.import_state(st).is_ok(),
        };
        self.backend.spec_release();
        if ok {
            if let Some(sp) = self.spec.as_deref_mut() {
                sp.invalidate(p);
            }
        } else {
            self.reset();
        }
    }
}

fn check_cfg(cfg: SpecConfig) -> Result<SpecConfig, EngineError> {
    if cfg.max_draft == 0 || cfg.max_draft > MAX_DRAFT {
        return Err(EngineError::Backend(format!("MTP draft count {} outside 1..={MAX_DRAFT}", cfg.max_draft)));
    }
    if cfg.margin.is_nan() || cfg.margin < 0.0 {
        return Err(EngineError::Backend(format!("MTP margin {} must be a number ≥ 0", cfg.margin)));
    }
    Ok(cfg)
}
