//! Model loading (file or `--demo`) and the live session over an engine
//! backend.

use anyhow::{anyhow, bail, Context, Result};
use ds4_engine::backend_select::{self, Device, LoadEvent, MtpConfig};
use ds4_engine::cuda::Precision;
use ds4_engine::model::MtpWeights;
use ds4_engine::mtp::{SpecConfig, SpecStats};
use ds4_engine::sampling::Sampler;
use ds4_engine::{Model, Session};
use ds4_gguf::Gguf;
use ds4_tok::Tokenizer;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::args::BackendChoice;
use crate::session::LiveSession;

/// Seed of the built-in demo model (fixed: the demo is the same everywhere).
pub const DEMO_SEED: u64 = 4;

pub struct Loaded {
    pub model: Arc<Model>,
    pub tok: Tokenizer,
    /// What to call the model in messages.
    pub name: String,
    pub demo: bool,
    /// The backend the run uses (with CUDA: the weights on the GPU).
    pub device: Device,
    /// The `--mtp` drafter weights.
    pub mtp: Option<Arc<MtpWeights>>,
}

/// Per-session knobs shared by every session of a run.
#[derive(Clone, Copy, Debug)]
pub struct SessionConfig {
    /// FP8 KV / FP4 indexer rounding (false = `--no-qat`).
    pub qat: bool,
    /// `--prefill-chunk`; None = the default for the context.
    pub chunk: Option<usize>,
    /// `--quality`: exact kernels on CUDA (f32 activations in prefill too).
    pub quality: bool,
    /// Speculative greedy decoding with the loaded MTP drafter (CLI.md §4.1).
    pub spec: Option<SpecConfig>,
}

impl SessionConfig {
    pub fn chunk_for(&self, ctx: usize) -> usize {
        self.chunk.unwrap_or_else(|| default_prefill_chunk(ctx))
    }
}

pub use ds4_engine::session::default_prefill_chunk;

impl Loaded {
    pub fn backend_name(&self) -> &'static str {
        self.device.name()
    }

    pub fn new_session(&self, ctx: usize, cfg: SessionConfig) -> Result<Box<dyn LiveSession>> {
        // The drafter runs only where the backend exposes hidden states (the CPU); the caller
        // said so when --mtp was loaded.
        let mtp = match (cfg.spec, &self.mtp) {
            (Some(spec), Some(w)) if self.device.supports_mtp() => {
                Some(MtpConfig { weights: w.clone(), spec: SpecConfig { stop_token: Some(self.tok.special().eos), ..spec } })
            }
            _ => None,
        };
        let ec = backend_select::SessionConfig {
            qat: cfg.qat,
            precision: if cfg.quality { Precision::Reference } else { Precision::Fast },
            prefill_chunk: cfg.chunk,
            graphs: true,
            mtp,
            warm_up: false,
        };
        // On the CPU only the drafter can fail.
        let s = self.device.session(ctx, &ec).map_err(|e| if ec.mtp.is_some() { anyhow!("--mtp: {e}") } else { anyhow!("{e}") })?;
        Ok(Box::new(EngineLive(s)))
    }

    pub fn memory_note(&self, ctx: usize, cfg: &SessionConfig) -> String {
        memory_note(&self.model.hp, ctx, self.backend_name(), cfg.chunk_for(ctx))
    }
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

/// Load the model (and, with CUDA, upload it to the GPU).
pub fn load(model: &Path, demo: bool, backend: BackendChoice) -> Result<Loaded> {
    // Resolve the backend first: `--cuda` without a device fails before loading anything.
    let use_cuda = backend.use_cuda()?;
    let (g, name) = open_gguf(model, demo)?;
    let tok = tokenizer(&g)?;
    let model = Model::from_gguf(g).map_err(|e| anyhow!("{name}: {e}"))?;
    if model.hp.n_vocab != tok.vocab_size() {
        bail!("{name}: the tokenizer has {} tokens but the model's vocabulary is {}", tok.vocab_size(), model.hp.n_vocab);
    }
    let model = Arc::new(model);
    let device = if use_cuda { open_cuda(&model)? } else { Device::cpu(model.clone()) };
    Ok(Loaded { model, tok, name, demo, device, mtp: None })
}

/// Bind the `--mtp` file against the loaded model (MODEL.md §4.4).
pub fn load_mtp(l: &mut Loaded, path: &Path) -> Result<()> {
    if !path.exists() {
        bail!("--mtp: file not found: {}", path.display());
    }
    let w = MtpWeights::load(path, &l.model.hp).map_err(|e| anyhow!("--mtp {}: {e}", path.display()))?;
    l.mtp = Some(Arc::new(w));
    Ok(())
}

/// Open the GPU and upload the weights, with a byte progress bar.
fn open_cuda(model: &Arc<Model>) -> Result<Device> {
    let mut bar: Option<crate::progress::ByteBar> = None;
    let dev = Device::open(model.clone(), BackendChoice::Cuda, &mut |ev| match ev {
        LoadEvent::Gpu(gpu) => eprintln!("ds4: GPU {} ({:.1} GiB)", gpu.name, gpu.total_mem as f64 / (1u64 << 30) as f64),
        LoadEvent::Upload { done, total } => bar.get_or_insert_with(|| crate::progress::ByteBar::new(total, "uploading weights")).set(done),
    })?;
    if let Some(b) = bar {
        b.finish();
    }
    Ok(dev)
}

/// The context-memory line (ds4 logs it when a session is created), from
/// the engine's estimate of the model state for `ctx` positions.
pub fn memory_note(hp: &ds4_engine::Hparams, ctx: usize, backend: &str, chunk: usize) -> String {
    format!(
        "context buffers {:.2} MiB (ctx={ctx}, backend={backend}, prefill_chunk={chunk})",
        ds4_engine::session::memory_bytes(hp, ctx) as f64 / (1024.0 * 1024.0)
    )
}

/// The engine's session (on any backend) as the CLI's live session.
pub struct EngineLive(pub Session);

impl LiveSession for EngineLive {
    fn ctx(&self) -> usize {
        self.0.ctx()
    }

    fn tokens(&self) -> &[u32] {
        self.0.tokens()
    }

    fn sync(&mut self, prompt: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
        if prompt.is_empty() {
            bail!("empty prompt");
        }
        Ok(self.0.sync(prompt, &mut |p| progress(p.done, p.total))?.reused)
    }

    fn eval(&mut self, token: u32) -> Result<()> {
        Ok(self.0.eval(token)?)
    }

    fn logits(&self) -> &[f32] {
        self.0.logits()
    }

    fn invalidate(&mut self) {
        self.0.reset();
    }

    fn extend_all(&mut self, tokens: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>> {
        Ok(self.0.extend(tokens, true, &mut |p| progress(p.done, p.total))?)
    }

    fn eval_run(&mut self, token: u32, max: usize) -> Result<Vec<u32>> {
        Ok(self.0.eval_speculative(token, max.max(1))?)
    }

    fn sample_run(&mut self, first: u32, max: usize, sampler: &mut Sampler, go: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>> {
        Ok(self.0.sample_run(first, max, sampler, go)?)
    }

    fn spec_stats(&self) -> Option<SpecStats> {
        self.0.spec_stats()
    }
}

/// Creates the interactive chat's sessions on the run's backend.
pub struct Factory<'a> {
    pub loaded: &'a Loaded,
    pub cfg: SessionConfig,
}

impl crate::repl::SessionFactory for Factory<'_> {
    fn create(&mut self, ctx: usize) -> Result<Box<dyn LiveSession>> {
        self.loaded.new_session(ctx, self.cfg)
    }

    fn memory_note(&self, ctx: usize) -> String {
        self.loaded.memory_note(ctx, &self.cfg)
    }
}

/// Read a prompt file byte for byte.
pub fn read_prompt_file(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("failed to read prompt file {}", path.display()))
}
