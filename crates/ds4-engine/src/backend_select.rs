//! Backend selection and session construction: the one rule the CLI (`ds4`), the server
//! (`ds4-server`) and `ds4-bench` share (CLI.md, SERVING.md §10).
//!
//! * `--cpu` forces the CPU reference backend; `--cuda` requires a usable CUDA device (a clear
//!   error otherwise); with neither, CUDA is used when [`cuda::available`] says so. `--metal`
//!   is refused (not part of this build). `--backend NAME` names the same choices.
//! * [`Device::open`] binds the choice to a loaded model: on CUDA it opens the GPU and uploads
//!   the weights once (with progress events); [`Device::session`] then creates any number of
//!   engine [`Session`]s over them — the CPU reference or [`CudaBackend`] behind the same
//!   `Session` API — from one [`SessionConfig`] (QAT, reference vs fast precision, prefill
//!   chunk, MTP speculation).
//! * [`open_session`] does both for a tool that needs a single session.

use crate::backend::{EngineError, Options};
use crate::cuda::{self, CudaBackend, CudaModel, CudaSession, Gpu, Precision, SessionOptions};
use crate::model::{Model, MtpWeights};
use crate::mtp::{MtpDrafter, SpecConfig};
use crate::session::{default_prefill_chunk, Session};
use std::sync::Arc;

/// The backend asked for on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA when a device is usable, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("the Metal backend is not part of this build; use --cpu or --cuda")]
    Metal,
    #[error("unknown backend {0:?} (valid backends: cpu, cuda)")]
    Unknown(String),
    #[error("--cuda: no usable CUDA device here (a CUDA driver, a GPU and libnvrtc are needed); use --cpu")]
    NoCuda,
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("{0}")]
    Session(#[from] EngineError),
}

impl BackendChoice {
    /// From the shared flags. `--cpu` wins over `--cuda` (the CLI accepts both); a flag wins
    /// over `--backend`.
    pub fn from_flags(cpu: bool, cuda: bool, metal: bool, name: Option<&str>) -> Result<BackendChoice, SelectError> {
        if metal {
            return Err(SelectError::Metal);
        }
        if cpu {
            return Ok(BackendChoice::Cpu);
        }
        if cuda {
            return Ok(BackendChoice::Cuda);
        }
        match name {
            None => Ok(BackendChoice::Auto),
            Some("cpu") => Ok(BackendChoice::Cpu),
            Some("cuda") => Ok(BackendChoice::Cuda),
            Some("metal") => Err(SelectError::Metal),
            Some(other) => Err(SelectError::Unknown(other.to_string())),
        }
    }

    /// Whether to use CUDA on this machine. Probing loads libcuda/libnvrtc, so it is skipped
    /// when the CPU is forced.
    pub fn use_cuda(self) -> Result<bool, SelectError> {
        self.use_cuda_given(self != BackendChoice::Cpu && cuda::available())
    }

    /// [`BackendChoice::use_cuda`] for a known device availability.
    pub fn use_cuda_given(self, cuda_available: bool) -> Result<bool, SelectError> {
        match self {
            BackendChoice::Cpu => Ok(false),
            BackendChoice::Auto => Ok(cuda_available),
            BackendChoice::Cuda if cuda_available => Ok(true),
            BackendChoice::Cuda => Err(SelectError::NoCuda),
        }
    }
}

/// What [`Device::open`] reports while it loads.
#[derive(Clone, Copy)]
pub enum LoadEvent<'a> {
    /// The GPU is open (kernels built); the weight upload follows.
    Gpu(&'a Gpu),
    /// `done` of `total` weight bytes are on the device.
    Upload { done: u64, total: u64 },
}

/// The MTP drafter of a session (speculative greedy decoding, MODEL.md §7).
#[derive(Clone)]
pub struct MtpConfig {
    pub weights: Arc<MtpWeights>,
    pub spec: SpecConfig,
}

/// Per-session options, for either backend.
#[derive(Clone)]
pub struct SessionConfig {
    /// FP8 KV / FP4 indexer rounding (false = `--no-qat`).
    pub qat: bool,
    /// `Reference` (`--quality`): f32 activations in every GPU product. The CPU backend is
    /// always the f32 reference.
    pub precision: Precision,
    /// Tokens per prefill batch; None = [`default_prefill_chunk`] of the context.
    pub prefill_chunk: Option<usize>,
    /// CUDA graphs for decode steps ([`Device::cuda_session`]; `--no-graphs` in ds4-bench).
    pub graphs: bool,
    /// Speculative decoding with this drafter; needs a backend that exposes its hidden states
    /// ([`Device::supports_mtp`]).
    pub mtp: Option<MtpConfig>,
    /// CUDA: run a warm-up prefill (a batch and a quarter batch) through a new session and
    /// reset it before handing it out, so that the first request does not pay the kernels'
    /// first-use costs (cuBLAS loads its GEMM kernels on first use: ~60 ms of an 8K prompt's
    /// first prefill on the H200). For long-running processes (the server, the benchmark).
    pub warm_up: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig { qat: true, precision: Precision::Fast, prefill_chunk: None, graphs: true, mtp: None, warm_up: false }
    }
}

impl SessionConfig {
    pub fn chunk_for(&self, ctx: usize) -> usize {
        self.prefill_chunk.unwrap_or_else(|| default_prefill_chunk(ctx)).max(1)
    }
}

/// A model bound to the backend it runs on (with CUDA: its weights on the GPU).
pub struct Device {
    model: Arc<Model>,
    cuda: Option<Arc<CudaModel>>,
}

impl Device {
    /// The CPU reference backend.
    pub fn cpu(model: Arc<Model>) -> Device {
        Device { model, cuda: None }
    }

    /// Resolve `choice` and, for CUDA, open GPU 0 and upload the weights.
    pub fn open(model: Arc<Model>, choice: BackendChoice, progress: &mut dyn FnMut(LoadEvent)) -> Result<Device, SelectError> {
        if !choice.use_cuda()? {
            return Ok(Device::cpu(model));
        }
        let gpu = Arc::new(Gpu::new(0).map_err(|e| SelectError::Cuda(e.to_string()))?);
        Device::upload(model, gpu, progress)
    }

    /// Upload the weights to an open GPU (tools that reuse one GPU for several models).
    pub fn upload(model: Arc<Model>, gpu: Arc<Gpu>, progress: &mut dyn FnMut(LoadEvent)) -> Result<Device, SelectError> {
        progress(LoadEvent::Gpu(&gpu));
        let w = CudaModel::upload(gpu, model.gguf(), &mut |done, total| progress(LoadEvent::Upload { done, total }))
            .map_err(|e| SelectError::Cuda(format!("upload: {e}")))?;
        Ok(Device { model, cuda: Some(Arc::new(w)) })
    }

    /// `"cpu"` or `"cuda"`.
    pub fn name(&self) -> &'static str {
        if self.cuda.is_some() {
            "cuda"
        } else {
            "cpu"
        }
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The weights on the GPU (CUDA only).
    pub fn cuda_weights(&self) -> Option<&Arc<CudaModel>> {
        self.cuda.as_ref()
    }

    /// Whether sessions can speculate with the MTP drafter (it needs the main model's hidden
    /// states, which only the CPU backend exposes).
    pub fn supports_mtp(&self) -> bool {
        self.cuda.is_none()
    }

    /// A session of `ctx` positions on this device.
    pub fn session(&self, ctx: usize, cfg: &SessionConfig) -> Result<Session, EngineError> {
        let opts = Options { qat: cfg.qat };
        let (mut s, batch) = match &self.cuda {
            None => (Session::new(self.model.clone(), ctx, opts), None),
            Some(_) => {
                let cs = self.cuda_session(ctx, &SessionConfig { graphs: true, ..cfg.clone() })?;
                let batch = cs.max_chunk();
                (Session::with_backend(Box::new(CudaBackend::from_session(self.model.clone(), cs)), ctx), Some(batch))
            }
        };
        s.set_prefill_chunk(cfg.chunk_for(ctx));
        // the default chunk schedule with the GPU's prefill batch per forward call (an explicit
        // --prefill-chunk keeps one chunk per call)
        if let (Some(b), None) = (batch, cfg.prefill_chunk) {
            s.set_prefill_batch(b);
        }
        if let Some(m) = &cfg.mtp {
            let drafter = MtpDrafter::new(self.model.clone(), m.weights.clone(), opts)?;
            s.enable_mtp(drafter, m.spec)?;
        }
        Ok(s)
    }

    /// The raw GPU session (ds4-bench: device argmax, graph switch, profiling). The engine
    /// [`Session`] is the normal way to run a model.
    pub fn cuda_session(&self, ctx: usize, cfg: &SessionConfig) -> Result<CudaSession, EngineError> {
        let Some(w) = &self.cuda else {
            return Err(EngineError::Backend("a CUDA session needs the CUDA backend".into()));
        };
        // Prefill batch size: see `default_max_chunk` (the session never batches more than
        // the context; `Session` chunks longer inputs itself).
        let so = SessionOptions { ctx, qat: cfg.qat, precision: cfg.precision, max_chunk: crate::cuda::session::default_max_chunk(ctx), graphs: cfg.graphs, near_ties: false, step_max: crate::cuda::session::default_step_max() };
        let mut cs = CudaSession::open(w.clone(), so).map_err(|e| EngineError::Backend(format!("CUDA session: {e}")))?;
        if cfg.warm_up {
            cs.warm_up().map_err(|e| EngineError::Backend(format!("CUDA warm-up: {e}")))?;
        }
        Ok(cs)
    }
}

/// [`Device::open`] then [`Device::session`]: one session on the chosen backend.
pub fn open_session(
    model: Arc<Model>,
    choice: BackendChoice,
    ctx: usize,
    cfg: &SessionConfig,
    progress: &mut dyn FnMut(LoadEvent),
) -> Result<Session, SelectError> {
    Ok(Device::open(model, choice, progress)?.session(ctx, cfg)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_rule() {
        use BackendChoice::*;
        let f = |cpu, cuda, metal, name| BackendChoice::from_flags(cpu, cuda, metal, name);
        assert_eq!(f(false, false, false, None).unwrap(), Auto);
        assert_eq!(f(true, false, false, None).unwrap(), Cpu);
        assert_eq!(f(false, true, false, None).unwrap(), Cuda);
        assert_eq!(f(true, true, false, None).unwrap(), Cpu, "--cpu wins");
        assert_eq!(f(false, false, false, Some("cpu")).unwrap(), Cpu);
        assert_eq!(f(false, false, false, Some("cuda")).unwrap(), Cuda);
        assert_eq!(f(true, false, false, Some("cuda")).unwrap(), Cpu, "a flag wins over --backend");
        assert!(matches!(f(false, false, true, None), Err(SelectError::Metal)));
        assert!(matches!(f(false, false, false, Some("metal")), Err(SelectError::Metal)));
        assert!(matches!(f(false, false, false, Some("tpu")), Err(SelectError::Unknown(n)) if n == "tpu"));
        assert!(SelectError::Metal.to_string().contains("Metal backend is not part of this build"));

        assert!(!Cpu.use_cuda_given(true).unwrap());
        assert!(Auto.use_cuda_given(true).unwrap());
        assert!(!Auto.use_cuda_given(false).unwrap());
        assert!(Cuda.use_cuda_given(true).unwrap());
        let e = Cuda.use_cuda_given(false).unwrap_err();
        assert!(e.to_string().contains("no usable CUDA device"), "{e}");
        // Forcing the CPU never probes (and so never fails).
        assert!(!Cpu.use_cuda().unwrap());
    }

    #[test]
    fn cpu_device_sessions_follow_the_config() {
        let model = Arc::new(Model::from_gguf(ds4_gguf::Gguf::from_bytes(crate::synth::synth_tiny(3)).unwrap()).unwrap());
        let dev = Device::open(model.clone(), BackendChoice::Cpu, &mut |_| panic!("no load events on the CPU")).unwrap();
        assert_eq!(dev.name(), "cpu");
        assert!(dev.supports_mtp() && dev.cuda_weights().is_none());
        assert!(dev.cuda_session(16, &SessionConfig::default()).is_err());
        let s = dev.session(100, &SessionConfig { prefill_chunk: Some(7), ..Default::default() }).unwrap();
        assert_eq!((s.ctx(), s.prefill_chunk(), s.backend().name()), (100, 7, "cpu"));
        let s = dev.session(5000, &SessionConfig::default()).unwrap();
        assert_eq!(s.prefill_chunk(), 2048);
        assert!(s.spec_config().is_none());
        // MTP: the drafter is attached and configured.
        let w = Arc::new(
            MtpWeights::from_gguf(
                ds4_gguf::Gguf::from_bytes(crate::synth::synth_mtp_bytes(&model.hp, crate::layout::Variant::Q4, 5).unwrap()).unwrap(),
                &model.hp,
            )
            .unwrap(),
        );
        let spec = SpecConfig { max_draft: 3, ..Default::default() };
        let cfg = SessionConfig { mtp: Some(MtpConfig { weights: w, spec }), ..Default::default() };
        let s = open_session(model, BackendChoice::Cpu, 64, &cfg, &mut |_| {}).unwrap();
        assert_eq!(s.spec_config(), Some(spec));
    }
}
