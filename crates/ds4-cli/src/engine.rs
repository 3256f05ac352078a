//! Model loading (file or `--demo`) and the live session over an engine
//! backend.

use anyhow::{anyhow, bail, Context, Result};
use ds4_engine::{Backend, CpuBackend, EngineError, Model, Options};
use ds4_gguf::Gguf;
use ds4_tok::Tokenizer;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::args::BackendChoice;
use crate::session::LiveSession;

/// Seed of the built-in demo model (fixed: the demo is the same everywhere).
pub const DEMO_SEED: u64 = 4;

/// Default prefill chunk (tokens per forward call).
pub const DEFAULT_PREFILL_CHUNK: usize = 2048;

pub struct Loaded {
    pub model: Arc<Model>,
    pub tok: Tokenizer,
    /// What to call the model in messages.
    pub name: String,
    pub demo: bool,
}

/// The message for a missing model file: how to get one.
pub fn missing_model_message(path: &Path) -> String {
    format!(
        "model file not found: {}\n\
         ds4: get DeepSeek V4 Flash with ./download_model.sh q2-imatrix (about 81 GB; it links ./ds4flash.gguf),\n\
         ds4: pass another file with -m FILE, or try ds4 --demo (a tiny random-weight model, no download)",
        path.display()
    )
}

/// Open the GGUF of the run: the file, or the demo model built in memory.
pub fn open_gguf(model: &Path, demo: bool) -> Result<(Gguf, String)> {
    if demo {
        let bytes = ds4_engine::synth::synth_tiny(DEMO_SEED);
        let g = Gguf::from_bytes(bytes).map_err(|e| anyhow!("demo model: {e}"))?;
        return Ok((g, "demo (tiny random weights)".into()));
    }
    if !model.exists() {
        bail!("{}", missing_model_message(model));
    }
    let g = Gguf::open(model).map_err(|e| anyhow!("{}: {e}", model.display()))?;
    Ok((g, model.display().to_string()))
}

pub fn tokenizer(g: &Gguf) -> Result<Tokenizer> {
    Tokenizer::from_gguf(g).map_err(|e| anyhow!("{e}"))
}

pub fn load(model: &Path, demo: bool) -> Result<Loaded> {
    let (g, name) = open_gguf(model, demo)?;
    let tok = tokenizer(&g)?;
    let model = Model::from_gguf(g).map_err(|e| anyhow!("{name}: {e}"))?;
    if model.hp.n_vocab != tok.vocab_size() {
        bail!("{name}: the tokenizer has {} tokens but the model's vocabulary is {}", tok.vocab_size(), model.hp.n_vocab);
    }
    Ok(Loaded { model: Arc::new(model), tok, name, demo })
}

/// Which backend a run uses.
pub fn pick_backend(choice: BackendChoice) -> Result<BackendChoice> {
    match choice {
        BackendChoice::Cpu => Ok(BackendChoice::Cpu),
        BackendChoice::Auto => Ok(BackendChoice::Cpu),
        BackendChoice::Cuda => bail!("the CUDA backend is not wired into ds4 yet; use --cpu"),
    }
}

/// Rough f32 context-state bytes for `ctx` positions: the raw window, the
/// compressed rows and the indexer rows of every layer.
pub fn context_bytes(hp: &ds4_engine::Hparams, ctx: usize) -> usize {
    let mut f = 0usize;
    for &r in &hp.compress_ratios {
        f += hp.sliding_window.min(ctx) * hp.head_dim;
        if r != 0 {
            f += ctx / r * hp.head_dim;
            let coff = if r == 4 { 2 } else { 1 };
            f += 2 * coff * r * coff * hp.head_dim;
        }
        if r == 4 {
            f += ctx / 4 * hp.idx_head_dim + 2 * 2 * 4 * 2 * hp.idx_head_dim;
        }
    }
    f * 4
}

pub fn memory_note(hp: &ds4_engine::Hparams, ctx: usize, backend: &str, chunk: usize) -> String {
    format!(
        "context buffers {:.2} MiB (ctx={ctx}, backend={backend}, prefill_chunk={chunk})",
        context_bytes(hp, ctx) as f64 / (1024.0 * 1024.0)
    )
}

/// A live session over a backend: extends the KV when the live tokens are a
/// prefix of the requested prompt, otherwise rebuilds from position 0.
pub struct BackendSession {
    backend: Box<dyn Backend>,
    ctx: usize,
    chunk: usize,
    toks: Vec<u32>,
    logits: Vec<f32>,
}

impl BackendSession {
    pub fn new(backend: Box<dyn Backend>, ctx: usize, chunk: usize) -> Self {
        BackendSession { backend, ctx, chunk: chunk.max(1), toks: Vec::new(), logits: Vec::new() }
    }

    pub fn cpu(model: Arc<Model>, qat: bool, ctx: usize, chunk: usize) -> Self {
        Self::new(Box::new(CpuBackend::new(model, Options { qat })), ctx, chunk)
    }

    /// Feed `tokens` in chunks of the prefill size; with `all`, return the
    /// logits of every token (`n × vocab`).
    pub fn extend(
        &mut self,
        tokens: &[u32],
        all: bool,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<Vec<f32>> {
        if self.toks.len() + tokens.len() > self.ctx {
            return Err(EngineError::ContextFull { need: self.toks.len() + tokens.len(), ctx: self.ctx }.into());
        }
        let mut out = Vec::new();
        let mut done = 0;
        for chunk in tokens.chunks(self.chunk) {
            let l = self.backend.forward(chunk, all)?;
            self.toks.extend_from_slice(chunk);
            done += chunk.len();
            let v = l.len() / if all { chunk.len() } else { 1 };
            self.logits.clear();
            self.logits.extend_from_slice(&l[l.len() - v..]);
            if all {
                out.extend_from_slice(&l);
            }
            if !progress(done, tokens.len()) && done < tokens.len() {
                return Err(EngineError::Cancelled.into());
            }
        }
        Ok(out)
    }
}

impl LiveSession for BackendSession {
    fn ctx(&self) -> usize {
        self.ctx
    }

    fn tokens(&self) -> &[u32] {
        &self.toks
    }

    fn sync(&mut self, prompt: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
        if prompt.is_empty() {
            bail!("empty prompt");
        }
        if prompt.len() > self.ctx {
            return Err(EngineError::ContextFull { need: prompt.len(), ctx: self.ctx }.into());
        }
        let live = self.toks.len();
        let reuse = if live <= prompt.len() && prompt[..live] == self.toks[..] && !(live == prompt.len() && self.logits.is_empty()) {
            live
        } else {
            self.invalidate();
            0
        };
        if reuse < prompt.len() {
            self.extend(&prompt[reuse..], false, progress)?;
        }
        Ok(reuse)
    }

    fn eval(&mut self, token: u32) -> Result<()> {
        self.extend(&[token], false, &mut |_, _| true).map(|_| ())
    }

    fn logits(&self) -> &[f32] {
        &self.logits
    }

    fn invalidate(&mut self) {
        self.backend.reset();
        self.toks.clear();
        self.logits.clear();
    }
}

/// Creates CPU sessions for the interactive chat.
pub struct CpuFactory {
    pub model: Arc<Model>,
    pub qat: bool,
    pub chunk: usize,
}

impl crate::repl::SessionFactory for CpuFactory {
    fn create(&mut self, ctx: usize) -> Result<Box<dyn LiveSession>> {
        Ok(Box::new(BackendSession::cpu(self.model.clone(), self.qat, ctx, self.chunk)))
    }

    fn memory_note(&self, ctx: usize) -> String {
        memory_note(&self.model.hp, ctx, "cpu", self.chunk)
    }
}

/// Read a prompt file byte for byte.
pub fn read_prompt_file(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("failed to read prompt file {}", path.display()))
}
