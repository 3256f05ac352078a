//! The backend interface: one object per session that owns the model state and runs the
//! forward pass for a batch of consecutive tokens. The CPU reference ([`crate::cpu`]) and the
//! CUDA backend (`crate::cuda`) implement it; [`crate::Session`] drives either.
//!
//! Contract for implementers:
//! * `forward(tokens, all)` processes `tokens` at positions `pos()..pos()+n` (any `n ≥ 1`; the
//!   session chunks long prompts) and advances `pos()`; it returns the logits of the last token
//!   (`vocab` floats) or, when `all`, of every token (`n × vocab`, token-major). Results must not
//!   depend on how a sequence is split into calls (beyond floating-point tolerance for GPU
//!   paths).
//! * `export_state` / `import_state` convert to and from the canonical CPU state
//!   ([`KvState`], f32) used for snapshots and payload files; `import_state` replaces the whole
//!   state (including `pos`).

use crate::model::Model;
use crate::sampling::NearMax;
use crate::state::KvState;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("token id {0} is outside the vocabulary (0..{1})")]
    BadToken(u32, usize),
    #[error("context full: {need} tokens exceed the context size {ctx}")]
    ContextFull { need: usize, ctx: usize },
    #[error("cancelled")]
    Cancelled,
    #[error("session payload: {0}")]
    Payload(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("backend: {0}")]
    Backend(String),
}

/// Numerics options shared by all backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The model's quantization-aware rounding steps (FP8 KV round trip, indexer
    /// Hadamard + FP4). On by default; `--no-qat` turns them off for tight comparisons.
    pub qat: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { qat: true }
    }
}

pub trait Backend: Send {
    fn name(&self) -> &str;
    fn model(&self) -> &Arc<Model>;
    /// Number of tokens processed (position of the next token).
    fn pos(&self) -> usize;
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>, EngineError>;
    /// Back to the empty state.
    fn reset(&mut self);
    fn export_state(&self) -> KvState;
    fn import_state(&mut self, state: &KvState) -> Result<(), EngineError>;

    /// Greedy decoding where the logits are: evaluate `token` and return the argmax of the new
    /// logits (first index of the largest; `sampling::argmax`), leaving the logits there until
    /// [`Backend::fetch_logits`]. None: not supported (the default; the caller evaluates with
    /// `forward` and takes the argmax itself). The CUDA backend reads back 4 bytes per token
    /// instead of the vocabulary's logits.
    fn eval_argmax(&mut self, token: u32) -> Option<Result<u32, EngineError>> {
        let _ = token;
        None
    }
    /// Sampling where the logits are: evaluate `token` and return the new logits near the
    /// largest, those with `(v - max) / temperature >= floor` ([`NearMax`], from
    /// `sampling::near_max_cut`), with the whole vocabulary's softmax sum when `with_sum`
    /// (`sampling::near_max_wants_sum`), leaving all of them there until [`Backend::fetch_logits`].
    /// `Some(Ok(None))`: the step ran, but the set is not available (more logits than the
    /// backend returns at once, or a non-finite one): fetch the logits. None: not supported
    /// (the default). The CUDA backend reads back a few KB per token instead of the
    /// vocabulary's logits.
    fn eval_near_max(&mut self, token: u32, temperature: f32, floor: f32, with_sum: bool) -> Option<Result<Option<NearMax>, EngineError>> {
        let _ = (token, temperature, floor, with_sum);
        None
    }
    /// Sampling with a top_k where the logits are: evaluate `token` and return the `k` largest
    /// new logits (`sampling::top_k_of`'s set), leaving all of them there until
    /// [`Backend::fetch_logits`]. `Some(Ok(None))`: the step ran, but the set is not
    /// available (a non-finite logit, or a `k` the backend does not gather): fetch the logits.
    /// None: not supported (the default).
    fn eval_top_k(&mut self, token: u32, k: usize) -> Option<Result<Option<NearMax>, EngineError>> {
        let _ = (token, k);
        None
    }
    /// The next-token logits after an [`Backend::eval_argmax`], [`Backend::eval_near_max`] or
    /// [`Backend::eval_top_k`].
    fn fetch_logits(&mut self) -> Result<Vec<f32>, EngineError> {
        Err(EngineError::Backend(format!("the {} backend keeps no logits to fetch", self.name())))
    }

    // ---- speculative decoding support (MODEL.md §3.4, §7); optional ----

    /// Keep the final hyper-connection streams of each later `forward` call (the MTP
    /// drafter's input), readable through [`Backend::hidden`]. Returns false when the backend
    /// cannot (then nothing can be drafted with MTP; verification still works).
    fn set_capture_hidden(&mut self, on: bool) -> bool {
        let _ = on;
        false
    }
    /// The streams of the last `forward` call: `n × n_hc × n_embd`, token-major, taken after
    /// the last layer (before the output head).
    fn hidden(&self) -> Option<&[f32]> {
        None
    }
    /// Mark the current position before a speculative batch of at most `max_tokens` tokens so
    /// that [`Backend::spec_rewind`] to any position from here to the end of that batch is
    /// exact (the state equals one that never saw the dropped tokens) and cheap. Returns false
    /// when unsupported; the session then falls back to export/import of the whole state.
    fn spec_mark(&mut self, max_tokens: usize) -> bool {
        let _ = max_tokens;
        false
    }
    /// Drop the tokens after position `pos` (mark ≤ pos ≤ `self.pos()`).
    fn spec_rewind(&mut self, pos: usize) -> Result<(), EngineError> {
        Err(EngineError::Backend(format!("the {} backend cannot rewind to {pos}", self.name())))
    }
    /// End of the speculative step: forget the mark.
    fn spec_release(&mut self) {}
}
