//! An inference session (MODEL.md §3): the token history, the next-token logits and the model
//! state held by a [`Backend`]. Prompts are synced by extending the live state when it is a
//! prefix of the new prompt and rebuilding otherwise; long inputs are prefilled in chunks with
//! a progress callback that can cancel. Snapshots restore a previous state exactly (rewind,
//! speculative decoding); payloads persist it in ds4's DSV4 format.

use crate::backend::{Backend, EngineError, Options};
use crate::cpu::CpuBackend;
use crate::hparams::Hparams;
use crate::model::Model;
use crate::payload::{self, Geometry};
use crate::sampling::{Rng, Sampler, SamplerParams};
use crate::state::KvState;
use std::io::{Read, Write};
use std::sync::Arc;

/// `DS4_HOST_SAMPLE=1` (or the older `DS4_HOST_ARGMAX=1`): decode runs read every step's
/// logits back and choose on the host, as before they chose where the logits are (A/B runs).
fn host_sampling() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| ["DS4_HOST_SAMPLE", "DS4_HOST_ARGMAX"].iter().any(|k| std::env::var_os(k).is_some_and(|v| v == "1")))
}

/// ds4's default prefill chunk: 2048 tokens for contexts above 2048, else the context size.
pub fn default_prefill_chunk(ctx: usize) -> usize {
    if ctx > 2048 {
        2048
    } else {
        ctx.max(1)
    }
}

/// Tokens of the next prefill batch at position `pos`: up to the next multiple of `chunk`, plus
/// as many whole chunks as keep the batch within `batch` tokens.
fn aligned_batch(pos: usize, chunk: usize, batch: usize) -> usize {
    let first = chunk - pos % chunk;
    first + batch.saturating_sub(first) / chunk * chunk
}

/// Progress of a prefill: `done` of `total` tokens of this call processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// What [`Session::sync`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncOutcome {
    /// Tokens of the prompt that were already live and reused.
    pub reused: usize,
    /// Tokens evaluated by this call.
    pub evaluated: usize,
    /// The live state was discarded (the prompt did not extend it).
    pub rebuilt: bool,
}

/// A complete in-memory copy of a session (tokens, logits, model state).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub tokens: Vec<u32>,
    pub logits: Vec<f32>,
    pub state: KvState,
}

/// What a decode run ([`Session::decode_run`]) asks of its caller, token by token.
pub trait Decoder {
    /// Whether to evaluate `tok` (the run's first token, or the one just chosen); false ends
    /// the run before it.
    fn admit(&mut self, tok: u32) -> bool;
    /// `tok` is evaluated next: the sampling that chooses the token after it, or None to end
    /// the run once `tok` is evaluated.
    fn next_params(&mut self, tok: u32) -> Option<SamplerParams>;
}

/// A decode run's bookkeeping.
#[derive(Default)]
struct RunState {
    /// The logits after the last evaluated token are on the backend only.
    deferred: bool,
    /// A step ran outside `extend`, which feeds the MTP drafter its hidden states.
    past_drafter: bool,
}

/// The outcome of a [`Session::decode_run`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// The tokens evaluated, the run's first included.
    pub tokens: Vec<u32>,
    /// The token chosen last that the decoder did not admit (not evaluated).
    pub declined: Option<u32>,
}

pub struct Session {
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) model: Arc<Model>,
    pub(crate) ctx: usize,
    chunk: usize,
    /// Most tokens per backend `forward` call: whole chunks (see `set_prefill_batch`).
    batch: usize,
    pub(crate) tokens: Vec<u32>,
    pub(crate) logits: Vec<f32>,
    /// Speculative decoding state ([`crate::mtp`]); None = plain decoding.
    pub(crate) spec: Option<Box<crate::mtp::Spec>>,
}

impl Session {
    /// A session on the CPU reference backend.
    pub fn new(model: Arc<Model>, ctx: usize, opts: Options) -> Session {
        Self::with_backend(Box::new(CpuBackend::new(model, opts)), ctx)
    }

    /// A session on any backend (must be at position 0).
    pub fn with_backend(mut backend: Box<dyn Backend>, ctx: usize) -> Session {
        backend.reset();
        let model = backend.model().clone();
        let ctx = ctx.max(1);
        let chunk = default_prefill_chunk(ctx);
        Session { backend, model, ctx, chunk, batch: chunk, tokens: Vec::new(), logits: Vec::new(), spec: None }
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }
    /// Tokens processed so far (the authoritative history).
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
    /// Logits of the next token (after the last processed token); empty before the first.
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }
    pub fn pos(&self) -> usize {
        self.tokens.len()
    }
    pub fn ctx(&self) -> usize {
        self.ctx
    }
    pub fn prefill_chunk(&self) -> usize {
        self.chunk
    }
    /// Tokens per prefill batch (any size ≥ 1; results do not depend on it on the CPU path).
    /// One chunk per `forward` call again (`set_prefill_batch` after this groups them).
    pub fn set_prefill_chunk(&mut self, n: usize) {
        self.chunk = n.max(1);
        self.batch = self.chunk;
    }
    /// Most tokens per prefill `forward` call (at least one chunk).
    pub fn prefill_batch(&self) -> usize {
        self.batch.max(self.chunk)
    }
    /// Let one `forward` call take several consecutive chunks, up to `n` tokens: a backend
    /// that batches better with more tokens (the CUDA prefill: its expert GEMMs need many
    /// tokens per expert) gets them, while every batch still ends on a multiple of the chunk
    /// (or the input's end), so the chunk schedule that the KV cache's checkpoints align to
    /// (KVCACHE.md §4.1) and the payload's chunk field do not change.
    pub fn set_prefill_batch(&mut self, n: usize) {
        self.batch = n.max(1);
    }

    /// Back to an empty session.
    pub fn reset(&mut self) {
        self.backend.reset();
        self.tokens.clear();
        self.logits.clear();
        if let Some(sp) = self.spec.as_deref_mut() {
            sp.invalidate(0);
        }
    }

    /// Make the session hold exactly `prompt`: extend the live state if it is a prefix of
    /// `prompt`, otherwise rebuild from position 0. `progress` is called after every chunk and
    /// returns false to cancel; a cancelled sync leaves a valid session holding the tokens
    /// processed so far and returns [`EngineError::Cancelled`].
    pub fn sync(&mut self, prompt: &[u32], progress: &mut dyn FnMut(Progress) -> bool) -> Result<SyncOutcome, EngineError> {
        if prompt.len() > self.ctx {
            return Err(EngineError::ContextFull { need: prompt.len(), ctx: self.ctx });
        }
        let common = self.tokens.iter().zip(prompt).take_while(|(a, b)| a == b).count();
        let rebuilt = common < self.tokens.len();
        if rebuilt {
            self.reset();
        }
        let reused = self.tokens.len();
        let rest = &prompt[reused..];
        if !rest.is_empty() {
            self.extend(rest, false, progress)?;
        }
        Ok(SyncOutcome { reused, evaluated: rest.len(), rebuilt })
    }

    /// Evaluate `tokens` after the live ones (chunked prefill). Returns the logits of every
    /// token when `all_logits` (`n × vocab`, token-major), else an empty vector; the session's
    /// next-token logits are updated either way.
    pub fn extend(&mut self, tokens: &[u32], all_logits: bool, progress: &mut dyn FnMut(Progress) -> bool) -> Result<Vec<f32>, EngineError> {
        let need = self.tokens.len() + tokens.len();
        if need > self.ctx {
            return Err(EngineError::ContextFull { need, ctx: self.ctx });
        }
        let v = self.model.hp.n_vocab;
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= v) {
            return Err(EngineError::BadToken(t, v));
        }
        let mut out = Vec::new();
        let mut done = 0;
        while done < tokens.len() {
            // Chunk boundaries at multiples of the chunk size (ds4's alignment, so batched
            // backends group floating-point work as in a cold prefill).
            let pos = self.tokens.len();
            let n = aligned_batch(pos, self.chunk, self.prefill_batch()).min(tokens.len() - done);
            let batch = &tokens[done..done + n];
            let lg = self.backend.forward(batch, all_logits)?;
            if let Some(sp) = self.spec.as_deref_mut() {
                sp.record(self.backend.hidden(), pos, n);
            }
            if all_logits {
                out.extend_from_slice(&lg);
            }
            if lg.len() == v {
                // (one token's logits: taken, not copied)
                self.logits = lg;
            } else {
                self.logits.clear();
                self.logits.extend_from_slice(&lg[lg.len() - v..]);
            }
            self.tokens.extend_from_slice(batch);
            done += n;
            if !progress(Progress { done, total: tokens.len() }) && done < tokens.len() {
                return Err(EngineError::Cancelled);
            }
        }
        Ok(out)
    }

    /// One decode step: evaluate `token` at the next position; `logits()` then predicts the
    /// token after it.
    pub fn eval(&mut self, token: u32) -> Result<(), EngineError> {
        self.extend(&[token], false, &mut |_| true).map(|_| ())
    }

    /// Greedy generation (MTP off): evaluate `first`, then, while fewer than `max` tokens were
    /// evaluated and `go(next)` accepts the argmax `next` of the newest logits, evaluate it. A
    /// refused token (EOS, a stop, an interrupt) is not evaluated. Returns the evaluated tokens,
    /// `first` included. Same tokens and logits as `eval` plus `sampling::argmax` per step.
    pub fn greedy_run(&mut self, first: u32, max: usize, go: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>, EngineError> {
        // (a greedy step draws no random number)
        self.sample_run(first, max, &mut Sampler::new(SamplerParams::greedy(), 0), go)
    }

    /// [`Session::greedy_run`] with `sampler` choosing: its params for every token, its random
    /// stream drawn as `sampler.sample` over `logits()` per step would draw it (a
    /// [`Session::decode_run`] with fixed params).
    pub fn sample_run(&mut self, first: u32, max: usize, sampler: &mut Sampler, go: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>, EngineError> {
        struct Fixed<'a> {
            n: usize,
            max: usize,
            params: SamplerParams,
            go: &'a mut dyn FnMut(u32) -> bool,
        }
        impl Decoder for Fixed<'_> {
            fn admit(&mut self, tok: u32) -> bool {
                if self.n > 0 && !(self.go)(tok) {
                    return false;
                }
                self.n += 1;
                true
            }
            fn next_params(&mut self, _tok: u32) -> Option<SamplerParams> {
                (self.n < self.max).then_some(self.params)
            }
        }
        let mut d = Fixed { n: 0, max: max.max(1), params: sampler.params, go };
        self.decode_run(first, &mut sampler.rng, &mut d).map(|r| r.tokens)
    }

    /// Decoding with the choice of each next token where the logits are: evaluate `first`;
    /// then, token by token, choose the next one with the sampling `d` gives for it and
    /// evaluate it if `d` admits it. Same tokens, logits and random draws as `eval` plus
    /// `sampling::sample` over `logits()` per step, but on a backend that chooses where the
    /// logits are (CUDA: [`Backend::eval_argmax`] at temperature 0, [`Backend::eval_near_max`]
    /// for min_p sampling, top_p too, [`Backend::eval_top_k`] with a top_k) they come to the
    /// host once, at the end of the run, instead of after every token. On an error the session holds the tokens evaluated before it.
    pub fn decode_run(&mut self, first: u32, rng: &mut Rng, d: &mut dyn Decoder) -> Result<Run, EngineError> {
        let mut run = Run { tokens: Vec::new(), declined: None };
        let mut tok = first;
        let mut st = RunState::default();
        // (the backend's eval_argmax / eval_near_max and `eval` refuse a token past the context)
        let res = loop {
            if !d.admit(tok) {
                run.declined = Some(tok);
                break Ok(());
            }
            let params = d.next_params(tok);
            match self.step(tok, params.as_ref(), rng, &mut st) {
                Ok(next) => {
                    run.tokens.push(tok);
                    match next {
                        Some(n) => tok = n,
                        None => break Ok(()),
                    }
                }
                Err(e) => break Err(e),
            }
        };
        if let (true, Some(sp)) = (st.past_drafter, self.spec.as_deref_mut()) {
            // (the drafter saw none of those tokens' hidden states)
            sp.invalidate(self.tokens.len());
        }
        if st.deferred {
            // the session's logits are those after the last evaluated token
            self.logits = self.backend.fetch_logits()?;
        }
        res.map(|()| run)
    }

    /// Evaluate `tok` and choose the token after it with `params` (None: choose nothing).
    fn step(&mut self, tok: u32, params: Option<&SamplerParams>, rng: &mut Rng, st: &mut RunState) -> Result<Option<u32>, EngineError> {
        use crate::sampling::{argmax, near_max_cut, near_max_wants_sum, sample, sample_near_max, sample_top_k, top_k_cut};
        // (`eval` checks this too; the backend's own steps below may not know the context)
        if self.tokens.len() >= self.ctx {
            return Err(EngineError::ContextFull { need: self.tokens.len() + 1, ctx: self.ctx });
        }
        let Some(p) = params else {
            self.eval(tok)?;
            st.deferred = false;
            return Ok(None);
        };
        if host_sampling() {
            // (fall through to the plain path)
        } else if p.is_greedy() {
            if let Some(r) = self.backend.eval_argmax(tok) {
                return self.deferred_step(tok, r, st).map(Some);
            }
        } else if let Some((t, floor)) = near_max_cut(p, self.model.hp.n_vocab) {
            let n_vocab = self.model.hp.n_vocab;
            if let Some(r) = self.backend.eval_near_max(tok, t, floor, near_max_wants_sum(p)) {
                if let Some(near) = self.deferred_step(tok, r, st)? {
                    if let Some(next) = sample_near_max(&near, p, n_vocab, rng) {
                        return Ok(Some(next));
                    }
                }
                // (too many candidates, a non-finite logit, or a nucleus too close to top_p
                // to decide from the set: the whole vocabulary decides)
                self.logits = self.backend.fetch_logits()?;
                st.deferred = false;
                return Ok(Some(sample(&self.logits, p, rng)));
            }
        } else if let Some(k) = top_k_cut(p, self.model.hp.n_vocab) {
            if let Some(r) = self.backend.eval_top_k(tok, k) {
                if let Some(set) = self.deferred_step(tok, r, st)? {
                    return Ok(Some(sample_top_k(&set, p, rng)));
                }
                // (a non-finite logit: the whole vocabulary decides)
                self.logits = self.backend.fetch_logits()?;
                st.deferred = false;
                return Ok(Some(sample(&self.logits, p, rng)));
            }
        }
        self.eval(tok)?;
        st.deferred = false;
        Ok(Some(if p.is_greedy() { argmax(&self.logits) } else { sample(&self.logits, p, rng) }))
    }

    /// The outcome of a backend step that kept its logits: on success (or a failure after the
    /// step ran) `tok` is evaluated and the session's logits are the backend's.
    fn deferred_step<T>(&mut self, tok: u32, r: Result<T, EngineError>, st: &mut RunState) -> Result<T, EngineError> {
        if r.is_ok() || self.backend.pos() == self.tokens.len() + 1 {
            self.tokens.push(tok);
            st.deferred = true;
            st.past_drafter = true;
        }
        r
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { tokens: self.tokens.clone(), logits: self.logits.clone(), state: self.backend.export_state() }
    }

    pub fn restore(&mut self, snap: &Snapshot) -> Result<(), EngineError> {
        if snap.state.pos != snap.tokens.len() || snap.tokens.len() > self.ctx {
            return Err(EngineError::Backend("snapshot is inconsistent or exceeds the context".into()));
        }
        self.backend.import_state(&snap.state)?;
        self.tokens.clone_from(&snap.tokens);
        self.logits.clone_from(&snap.logits);
        if let Some(sp) = self.spec.as_deref_mut() {
            sp.invalidate(self.tokens.len());
        }
        Ok(())
    }

    fn geometry(&self) -> Geometry {
        Geometry { ctx: self.ctx, prefill_chunk: self.chunk, raw_cap: self.model.hp.sliding_window }
    }

    /// Write the DSV4 payload of the current state (KVCACHE.md §3).
    pub fn save_payload(&self, w: &mut dyn Write) -> Result<(), EngineError> {
        let st = self.backend.export_state();
        payload::write(w, &self.model.hp, self.geometry(), &self.tokens, &self.logits, &st)
    }

    /// Replace the session by a DSV4 payload. `r` must end where the payload ends. On error the
    /// session is left empty (reset).
    pub fn load_payload(&mut self, r: &mut dyn Read) -> Result<(), EngineError> {
        self.reset();
        let fresh = KvState::new(&self.model.hp);
        let (tokens, logits, st) = payload::read(r, &self.model.hp, self.geometry(), fresh)?;
        self.backend.import_state(&st)?;
        self.tokens = tokens;
        self.logits = if self.tokens.is_empty() { Vec::new() } else { logits };
        if let Some(sp) = self.spec.as_deref_mut() {
            sp.invalidate(self.tokens.len());
        }
        Ok(())
    }

    /// Estimated bytes of model state for this session's context size.
    pub fn memory_bytes(&self) -> usize {
        memory_bytes(&self.model.hp, self.ctx)
    }
}

/// Estimated bytes of the model state (KV cache) of a `ctx`-token session on the f32 reference
/// layout: raw window rings, compressed and indexer rows at full context, compressor frontiers
/// and the logits row (what ds4 reports as its KV cache size, at f32).
pub fn memory_bytes(hp: &Hparams, ctx: usize) -> usize {
    let mut floats = hp.n_vocab;
    for &r in &hp.compress_ratios {
        floats += hp.sliding_window * hp.head_dim;
        if r != 0 {
            let coff = if r == 4 { 2 } else { 1 };
            floats += (ctx / r) * hp.head_dim + 2 * (coff * r) * (coff * hp.head_dim);
        }
        if r == 4 {
            floats += (ctx / 4) * hp.idx_head_dim + 2 * 8 * 2 * hp.idx_head_dim;
        }
    }
    floats * 4
}
