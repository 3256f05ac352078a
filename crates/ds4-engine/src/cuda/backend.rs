//! The CUDA backend behind the engine's [`Backend`] trait (selected at run time like `cpu`).

use super::{CudaModel, CudaSession, Gpu, Precision, SessionOptions};
use crate::backend::{Backend, EngineError, Options};
use crate::model::Model;
use crate::sampling::NearMax;
use crate::state::KvState;
use std::sync::Arc;

pub struct CudaBackend {
    model: Arc<Model>,
    sess: CudaSession,
}

fn be(e: super::CudaError) -> EngineError {
    EngineError::Backend(e.to_string())
}

impl CudaBackend {
    /// Upload `model`'s weights to GPU `ordinal` and open a session of `ctx` tokens.
    /// `progress(done, total)` follows the weight upload.
    pub fn new(
        model: Arc<Model>,
        opts: Options,
        ctx: usize,
        precision: Precision,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CudaBackend, EngineError> {
        let gpu = Arc::new(Gpu::new(0).map_err(be)?);
        let cm = Arc::new(CudaModel::upload(gpu, model.gguf(), progress).map_err(be)?);
        Self::with_weights(model, cm, opts, ctx, precision)
    }

    /// A session over weights already on the GPU (several sessions can share them).
    pub fn with_weights(model: Arc<Model>, weights: Arc<CudaModel>, opts: Options, ctx: usize, precision: Precision) -> Result<CudaBackend, EngineError> {
        let so = SessionOptions { ctx, qat: opts.qat, precision, max_chunk: crate::cuda::session::default_max_chunk(ctx), graphs: true, near_ties: false, step_max: crate::cuda::session::default_step_max() };
        Ok(Self::from_session(model, CudaSession::open(weights, so).map_err(be)?))
    }

    /// Wrap a session built over `model`'s weights.
    pub fn from_session(model: Arc<Model>, sess: CudaSession) -> CudaBackend {
        CudaBackend { model, sess }
    }

    pub fn session(&mut self) -> &mut CudaSession {
        &mut self.sess
    }

    /// The engine's errors for tokens a forward call cannot take (ids past the vocabulary, no
    /// room in the context, none at all).
    fn check(&self, tokens: &[u32]) -> Result<(), EngineError> {
        let vocab = self.model.hp.n_vocab;
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(EngineError::BadToken(t, vocab));
        }
        let need = self.sess.tokens().len() + tokens.len();
        if need > self.sess.ctx() {
            return Err(EngineError::ContextFull { need, ctx: self.sess.ctx() });
        }
        if tokens.is_empty() {
            return Err(EngineError::Backend("forward needs at least one token".into()));
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &str {
        "cuda"
    }
    fn model(&self) -> &Arc<Model> {
        &self.model
    }
    fn pos(&self) -> usize {
        self.sess.tokens().len()
    }
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>, EngineError> {
        self.check(tokens)?;
        if all_logits {
            return self.sess.prefill_all_logits(tokens).map_err(be);
        }
        if tokens.len() == 1 {
            self.sess.eval(tokens[0]).map_err(be)?;
        } else {
            self.sess.prefill(tokens).map_err(be)?;
        }
        Ok(self.sess.logits().map_err(be)?.to_vec())
    }
    fn eval_argmax(&mut self, token: u32) -> Option<Result<u32, EngineError>> {
        Some(self.check(&[token]).and_then(|()| self.sess.eval_argmax(token).map_err(be)))
    }
    fn eval_near_max(&mut self, token: u32, temperature: f32, floor: f32, with_sum: bool) -> Option<Result<Option<NearMax>, EngineError>> {
        Some(self.check(&[token]).and_then(|()| self.sess.eval_near_max(token, temperature, floor, with_sum).map_err(be)))
    }
    fn eval_top_k(&mut self, token: u32, k: usize) -> Option<Result<Option<NearMax>, EngineError>> {
        Some(self.check(&[token]).and_then(|()| self.sess.eval_top_k(token, k).map_err(be)))
    }
    fn fetch_logits(&mut self) -> Result<Vec<f32>, EngineError> {
        Ok(self.sess.logits().map_err(be)?.to_vec())
    }
    fn reset(&mut self) {
        // a failed reset leaves a session that reports errors on the next call
        let _ = self.sess.reset();
    }
    fn export_state(&self) -> KvState {
        self.sess.export_state().unwrap_or_else(|_| KvState::new(&self.model.hp))
    }
    fn import_state(&mut self, state: &KvState) -> Result<(), EngineError> {
        self.sess.import_state(state).map_err(be)
    }
}
