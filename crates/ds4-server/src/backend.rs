//! Backend selection for the server's session (SERVING.md §10 `--cpu`,
//! `--cuda`, `--backend`): CUDA when a device is usable, else the CPU
//! reference; `--cpu` forces the CPU, `--cuda` requires a device.
//!
//! Seam: the CLI has the same rule in its own factory (ds4-cli engine.rs,
//! `load` + `Loaded::new_session`). Both call only `ds4_engine::cuda`
//! (`available`, `CudaModel::upload`, `CudaSession::new`); once that factory
//! moves into ds4-engine, `open_session` below becomes a call to it.

use std::sync::Arc;

use crate::config::Args;
use crate::engine::{EngineSession, Progress, SyncError};
use crate::real::{routed_quant_bits, EngineAdapter};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// CUDA when `ds4_engine::cuda::available()`, else CPU.
    Auto,
    Cpu,
    Cuda,
}

impl Choice {
    pub fn from_args(a: &Args) -> Result<Choice, String> {
        let name = if a.metal {
            "metal"
        } else if a.cuda {
            "cuda"
        } else if a.cpu {
            "cpu"
        } else {
            match a.backend.as_deref() {
                None => return Ok(Choice::Auto),
                Some(b) => b,
            }
        };
        match name {
            "cpu" => Ok(Choice::Cpu),
            "cuda" => Ok(Choice::Cuda),
            "metal" => Err("the Metal backend is not part of this build; use --cpu or --cuda".into()),
            other => Err(format!("unknown backend {other:?} (cpu, cuda, metal)")),
        }
    }

    /// Resolve `Auto` against the machine; `Cuda` without a device is an error.
    pub fn resolve(self, cuda_available: bool) -> Result<bool, String> {
        match self {
            Choice::Cpu => Ok(false),
            Choice::Auto => Ok(cuda_available),
            Choice::Cuda if cuda_available => Ok(true),
            Choice::Cuda => Err("--cuda: no usable CUDA device here (a CUDA driver, a GPU and libnvrtc are needed); use --cpu".into()),
        }
    }
}

/// The live session on the chosen backend, and the backend's name.
pub fn open_session(args: &Args, model: Arc<ds4_engine::Model>) -> Result<(Box<dyn EngineSession>, &'static str), String> {
    let choice = Choice::from_args(args)?;
    // Probing loads libcuda/libnvrtc: skip it when the CPU is forced.
    let cuda = choice.resolve(choice != Choice::Cpu && ds4_engine::cuda::available())?;
    if !cuda {
        let session = ds4_engine::Session::new(model, args.ctx, ds4_engine::Options::default());
        return Ok((Box::new(EngineAdapter::new(session)), "cpu"));
    }
    use ds4_engine::cuda::{CudaModel, CudaSession, Gpu, Precision, SessionOptions};
    let gpu = Arc::new(Gpu::new(0).map_err(|e| format!("CUDA: {e}"))?);
    crate::slog!("GPU {} ({:.1} GiB), uploading weights", gpu.name, gpu.total_mem as f64 / (1u64 << 30) as f64);
    let m = CudaModel::upload(gpu, model.gguf(), &mut |_, _| {}).map_err(|e| format!("CUDA upload: {e}"))?;
    let opts = SessionOptions {
        ctx: args.ctx,
        qat: true,
        precision: if args.quality { Precision::Reference } else { Precision::Fast },
        max_chunk: ds4_engine::session::default_prefill_chunk(args.ctx),
        graphs: true,
    };
    let chunk = opts.max_chunk;
    let s = CudaSession::new(Arc::new(m), opts).map_err(|e| format!("CUDA session: {e}"))?;
    let quant_bits = routed_quant_bits(model.gguf());
    Ok((Box::new(CudaAdapter { s: std::mem::ManuallyDrop::new(s), logits: Vec::new(), chunk, quant_bits }), "cuda"))
}

/// `ds4_engine::cuda::CudaSession` as the worker's session. Logits are copied
/// to the host after every step (the sampler runs on the CPU).
///
/// The session is never dropped: it lives until the process exits, and on
/// the H200 device machine dropping it after the shutdown checkpoint was
/// seen to hang the worker thread (the process then never exits on SIGTERM);
/// the driver reclaims device memory at exit anyway.
pub struct CudaAdapter {
    s: std::mem::ManuallyDrop<ds4_engine::cuda::CudaSession>,
    logits: Vec<f32>,
    chunk: usize,
    quant_bits: u8,
}

impl CudaAdapter {
    fn pull_logits(&mut self) -> Result<(), String> {
        let l = self.s.logits().map_err(|e| e.to_string())?;
        self.logits.clear();
        self.logits.extend_from_slice(l);
        Ok(())
    }
}

impl EngineSession for CudaAdapter {
    fn ctx(&self) -> usize {
        self.s.ctx()
    }
    fn tokens(&self) -> &[u32] {
        self.s.tokens()
    }
    fn logits(&self) -> &[f32] {
        &self.logits
    }
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError> {
        let fail = |e: ds4_engine::cuda::CudaError| SyncError::Failed(e.to_string());
        let live = self.s.tokens().len();
        if live > prompt.len() || prompt[..live] != self.s.tokens()[..] {
            self.logits.clear();
            self.s.reset().map_err(fail)?;
        }
        let start = self.s.tokens().len();
        let total = prompt.len() - start;
        // Chunks end on multiples of the prefill chunk (as the CPU session
        // does), with a progress call after each for keepalive/cancel.
        while self.s.tokens().len() < prompt.len() {
            let pos = self.s.tokens().len();
            let end = (pos + self.chunk - pos % self.chunk).min(prompt.len());
            self.s.prefill(&prompt[pos..end]).map_err(fail)?;
            self.pull_logits().map_err(SyncError::Failed)?;
            if !progress(end - start, total) && end < prompt.len() {
                return Err(SyncError::Cancelled);
            }
        }
        Ok(())
    }
    fn eval(&mut self, token: u32) -> Result<(), String> {
        self.s.eval(token).map_err(|e| e.to_string())?;
        self.pull_logits()
    }
    fn invalidate(&mut self) {
        self.logits.clear();
        if let Err(e) = self.s.reset() {
            crate::slog!("CUDA session reset failed: {e}");
        }
    }
    fn quant_bits(&self) -> u8 {
        self.quant_bits
    }
    fn save_payload(&mut self) -> Result<Vec<u8>, String> {
        self.s.save_payload().map_err(|e| e.to_string())
    }
    fn load_payload(&mut self, r: &mut dyn std::io::Read) -> Result<(), String> {
        let mut buf = Vec::new();
        let res = r.read_to_end(&mut buf).map_err(|e| e.to_string()).and_then(|_| self.s.load_payload(&buf).map_err(|e| e.to_string()));
        match res {
            Ok(()) => self.pull_logits(),
            Err(e) => {
                self.invalidate();
                Err(e)
            }
        }
    }
}

/// The worker is generic over its session; the binary picks the backend at
/// run time.
impl EngineSession for Box<dyn EngineSession> {
    fn ctx(&self) -> usize {
        (**self).ctx()
    }
    fn tokens(&self) -> &[u32] {
        (**self).tokens()
    }
    fn logits(&self) -> &[f32] {
        (**self).logits()
    }
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError> {
        (**self).sync(prompt, progress)
    }
    fn eval(&mut self, token: u32) -> Result<(), String> {
        (**self).eval(token)
    }
    fn invalidate(&mut self) {
        (**self).invalidate()
    }
    fn quant_bits(&self) -> u8 {
        (**self).quant_bits()
    }
    fn save_payload(&mut self) -> Result<Vec<u8>, String> {
        (**self).save_payload()
    }
    fn load_payload(&mut self, r: &mut dyn std::io::Read) -> Result<(), String> {
        (**self).load_payload(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn choice(argv: &[&str]) -> Result<Choice, String> {
        let mut v = vec!["ds4-server"];
        v.extend_from_slice(argv);
        Choice::from_args(&Args::try_parse_from(v).unwrap())
    }

    #[test]
    fn selection_rules() {
        assert_eq!(choice(&[]), Ok(Choice::Auto));
        assert_eq!(choice(&["--cpu"]), Ok(Choice::Cpu));
        assert_eq!(choice(&["--cuda"]), Ok(Choice::Cuda));
        assert_eq!(choice(&["--backend", "cpu"]), Ok(Choice::Cpu));
        assert_eq!(choice(&["--backend", "cuda"]), Ok(Choice::Cuda));
        assert!(choice(&["--metal"]).is_err());
        assert!(choice(&["--backend", "tpu"]).is_err());
        assert_eq!(Choice::Auto.resolve(true), Ok(true));
        assert_eq!(Choice::Auto.resolve(false), Ok(false));
        assert_eq!(Choice::Cpu.resolve(true), Ok(false));
        assert_eq!(Choice::Cuda.resolve(true), Ok(true));
        assert!(Choice::Cuda.resolve(false).is_err());
    }
}
