//! Backend selection for the server's session (SERVING.md §10 `--cpu`,
//! `--cuda`, `--backend`): the engine's rule (`ds4_engine::backend_select`,
//! shared with the CLI and ds4-bench) — CUDA when a device is usable, else the
//! CPU reference; `--cpu` forces the CPU, `--cuda` requires a device. Either
//! way the worker drives one engine `Session` through [`EngineAdapter`].

use std::sync::Arc;

use ds4_engine::backend_select::{BackendChoice, Device, LoadEvent, SessionConfig};
use ds4_engine::cuda::Precision;

use crate::config::Args;
use crate::engine::{EngineSession, Progress, SyncError};
use crate::real::EngineAdapter;

/// The backend the flags ask for (errors are usage errors: exit 2).
pub fn backend_choice(a: &Args) -> Result<BackendChoice, String> {
    BackendChoice::from_flags(a.cpu, a.cuda, a.metal, a.backend.as_deref()).map_err(|e| e.to_string())
}

/// The live session on the chosen backend, and the backend's name.
pub fn open_session(args: &Args, model: Arc<ds4_engine::Model>) -> Result<(Box<dyn EngineSession>, &'static str), String> {
    let choice = backend_choice(args)?;
    let device = Device::open(model, choice, &mut |ev| {
        if let LoadEvent::Gpu(gpu) = ev {
            crate::slog!("GPU {} ({:.1} GiB), uploading weights", gpu.name, gpu.total_mem as f64 / (1u64 << 30) as f64);
        }
    })
    .map_err(|e| e.to_string())?;
    let cfg = SessionConfig {
        qat: true,
        precision: if args.quality { Precision::Reference } else { Precision::Fast },
        ..SessionConfig::default()
    };
    let session = device.session(args.ctx, &cfg).map_err(|e| e.to_string())?;
    Ok((Box::new(EngineAdapter::new(session)), device.name()))
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
    fn leak_at_exit(&self) -> bool {
        (**self).leak_at_exit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn choice(argv: &[&str]) -> Result<BackendChoice, String> {
        let mut v = vec!["ds4-server"];
        v.extend_from_slice(argv);
        backend_choice(&Args::try_parse_from(v).unwrap())
    }

    /// The flags reach the engine's rule (tested there in full).
    #[test]
    fn flags_map_to_the_engine_rule() {
        assert_eq!(choice(&[]), Ok(BackendChoice::Auto));
        assert_eq!(choice(&["--cpu"]), Ok(BackendChoice::Cpu));
        assert_eq!(choice(&["--cuda"]), Ok(BackendChoice::Cuda));
        assert_eq!(choice(&["--backend", "cpu"]), Ok(BackendChoice::Cpu));
        assert_eq!(choice(&["--backend", "cuda"]), Ok(BackendChoice::Cuda));
        assert!(choice(&["--metal"]).unwrap_err().contains("Metal backend is not part of this build"));
        assert!(choice(&["--backend", "tpu"]).is_err());
    }
}
