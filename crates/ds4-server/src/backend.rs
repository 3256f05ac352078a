//! Backend selection for the server's session (SERVING.md §10 `--cpu`,
//! `--cuda`, `--backend`): the engine's rule (`ds4_engine::backend_select`,
//! shared with the CLI and ds4-bench) — CUDA when a device is usable, else the
//! CPU reference; `--cpu` forces the CPU, `--cuda` requires a device. Either
//! way the worker drives one engine `Session` through [`EngineAdapter`].

use std::sync::Arc;

use ds4_engine::backend_select::{BackendChoice, Device, LoadEvent, MtpConfig, SessionConfig};
use ds4_engine::cuda::Precision;
use ds4_engine::model::MtpWeights;
use ds4_engine::mtp::{Pairing, SpecConfig};

use crate::config::Args;
use crate::engine::{EngineSession, Progress, SyncError};
use crate::real::EngineAdapter;

/// The backend the flags ask for (errors are usage errors: exit 2).
pub fn backend_choice(a: &Args) -> Result<BackendChoice, String> {
    BackendChoice::from_flags(a.cpu, a.cuda, a.metal, a.backend.as_deref()).map_err(|e| e.to_string())
}

/// The live session on the chosen backend, and the backend's name. `eos`
/// ends speculative runs (`--mtp`).
pub fn open_session(args: &Args, model: Arc<ds4_engine::Model>, eos: u32) -> Result<(Box<dyn EngineSession>, &'static str), String> {
    let choice = backend_choice(args)?;
    // A bad --mtp file fails before the weights go to the GPU.
    let mtp = match &args.mtp {
        None => None,
        Some(p) => Some(Arc::new(MtpWeights::load(p, &model.hp).map_err(|e| format!("--mtp {}: {e}", p.display()))?)),
    };
    let device = Device::open(model, choice, &mut |ev| {
        if let LoadEvent::Gpu(gpu) = ev {
            crate::slog!("GPU {} ({:.1} GiB), uploading weights", gpu.name, gpu.total_mem as f64 / (1u64 << 30) as f64);
        }
    })
    .map_err(|e| e.to_string())?;
    let cfg = SessionConfig {
        qat: true,
        precision: if args.quality { Precision::Reference } else { Precision::Fast },
        mtp: mtp.and_then(|weights| speculation(args, &device, eos).map(|spec| MtpConfig { weights, spec })),
        // the first request should not pay the kernels' first-use costs
        warm_up: true,
        ..SessionConfig::default()
    };
    let session = device.session(args.ctx, &cfg).map_err(|e| e.to_string())?;
    Ok((Box::new(EngineAdapter::new(session)), device.name()))
}

/// The speculation `--mtp` asks for, or None (logged why): `--mtp-draft` of
/// at least 2, `DS4_MTP_SPEC_DISABLE` unset, and a backend that exposes the
/// hidden states the drafter reads (the CPU). Per request it applies only
/// to greedy sampling (the worker checks).
fn speculation(args: &Args, device: &Device, eos: u32) -> Option<SpecConfig> {
    match SpecConfig::from_flags(args.mtp_draft, args.mtp_margin, args.quality, Pairing::DeepSeek) {
        Err(why) => {
            crate::slog!("--mtp loaded, speculation off: {why}");
            None
        }
        Ok(_) if !device.supports_mtp() => {
            crate::slog!("--mtp: the MTP drafter runs on the CPU backend only; decoding without speculation");
            None
        }
        Ok(spec) => {
            crate::slog!(
                "MTP speculative decoding for greedy requests: up to {} drafts per step, {}",
                spec.max_draft,
                if spec.strict { "strict verification".to_string() } else { format!("margin {}", spec.margin) }
            );
            Some(SpecConfig { stop_token: Some(eos), ..spec })
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
    fn leak_at_exit(&self) -> bool {
        (**self).leak_at_exit()
    }
    fn speculates(&self) -> bool {
        (**self).speculates()
    }
    fn eval_run(&mut self, token: u32, max: usize, stop_after: &mut dyn FnMut(u32) -> bool) -> Result<(), String> {
        (**self).eval_run(token, max, stop_after)
    }
    fn decode_run(&mut self, first: u32, rng: &mut ds4_engine::sampling::Rng, d: &mut dyn ds4_engine::Decoder) -> Result<ds4_engine::Run, String> {
        (**self).decode_run(first, rng, d)
    }
    fn spec_stats(&self) -> Option<ds4_engine::mtp::SpecStats> {
        (**self).spec_stats()
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
