//! Model widths and constants for the CUDA backend, read from GGUF metadata (MODEL.md §1.2).
//! Kept local to the backend so it has no ordering dependency on the CPU modules; the values
//! are the same keys `Hparams` reads.

use super::driver::{CudaError, Result};
use ds4_gguf::Gguf;

#[derive(Clone, Debug)]
pub struct Dims {
    pub n_layer: usize,
    pub d: usize,
    pub vocab: usize,
    pub h: usize,
    pub dh: usize,
    pub r: usize,
    pub rq: usize,
    pub ro: usize,
    pub g: usize,
    pub e: usize,
    pub k: usize,
    pub f: usize,
    pub n_hash: usize,
    pub window: usize,
    pub hi: usize,
    pub di: usize,
    pub topk: usize,
    pub n_hc: usize,
    pub sinkhorn: usize,
    pub hc_eps: f32,
    pub rms_eps: f32,
    pub ratios: Vec<usize>,
    pub clamp: Vec<f32>,
    pub rope_base: f32,
    pub yarn_factor: f32,
    pub yarn_orig: f64,
    pub beta_fast: f32,
    pub beta_slow: f32,
    pub comp_base: f32,
    pub w_scale: f32,
    pub w_norm: bool,
}

fn key<'a>(g: &'a Gguf, k: &str) -> Result<&'a ds4_gguf::MetaValue> {
    g.meta(&format!("deepseek4.{k}")).ok_or_else(|| CudaError::Other(format!("metadata key deepseek4.{k} missing")))
}
fn u(g: &Gguf, k: &str) -> Result<usize> {
    key(g, k)?.as_u64().map(|v| v as usize).ok_or_else(|| CudaError::Other(format!("deepseek4.{k}: not an integer")))
}
fn f(g: &Gguf, k: &str) -> Result<f32> {
    let v = key(g, k)?;
    v.as_f64().or_else(|| v.as_i64().map(|x| x as f64)).map(|x| x as f32).ok_or_else(|| CudaError::Other(format!("deepseek4.{k}: not a number")))
}

impl Dims {
    pub fn from_gguf(g: &Gguf) -> Result<Dims> {
        let n_layer = u(g, "block_count")?;
        let ratios: Vec<usize> = key(g, "attention.compress_ratios")?
            .as_array()
            .ok_or_else(|| CudaError::Other("compress_ratios is not an array".into()))?
            .iter()
            .take(n_layer)
            .map(|v| v.as_i64().unwrap_or(-1).max(0) as usize)
            .collect();
        if ratios.len() < n_layer || ratios.iter().any(|&r| r != 0 && r != 4 && r != 128) {
            return Err(CudaError::Other(format!("bad compress_ratios {ratios:?}")));
        }
        let clamp: Vec<f32> = match g.meta("deepseek4.swiglu_clamp_exp").and_then(|v| v.as_array()) {
            Some(a) => a.iter().take(n_layer).map(|v| v.as_f64().unwrap_or(10.0) as f32).collect(),
            None => vec![10.0; n_layer],
        };
        let d = Dims {
            n_layer,
            d: u(g, "embedding_length")?,
            vocab: u(g, "vocab_size")?,
            h: u(g, "attention.head_count")?,
            dh: u(g, "attention.key_length")?,
            r: u(g, "rope.dimension_count")?,
            rq: u(g, "attention.q_lora_rank")?,
            ro: u(g, "attention.output_lora_rank")?,
            g: u(g, "attention.output_group_count")?,
            e: u(g, "expert_count")?,
            k: u(g, "expert_used_count")?,
            f: u(g, "expert_feed_forward_length")?,
            n_hash: u(g, "hash_layer_count")?,
            window: u(g, "attention.sliding_window")?,
            hi: u(g, "attention.indexer.head_count")?,
            di: u(g, "attention.indexer.key_length")?,
            topk: u(g, "attention.indexer.top_k")?,
            n_hc: u(g, "hyper_connection.count")?,
            sinkhorn: u(g, "hyper_connection.sinkhorn_iterations")?,
            hc_eps: f(g, "hyper_connection.epsilon")?,
            rms_eps: f(g, "attention.layer_norm_rms_epsilon")?,
            clamp: if clamp.len() == n_layer { clamp } else { vec![10.0; n_layer] },
            ratios,
            rope_base: f(g, "rope.freq_base")?,
            yarn_factor: f(g, "rope.scaling.factor")?,
            yarn_orig: f(g, "rope.scaling.original_context_length")? as f64,
            beta_fast: f(g, "rope.scaling.yarn_beta_fast")?,
            beta_slow: f(g, "rope.scaling.yarn_beta_slow")?,
            comp_base: f(g, "attention.compress_rope_freq_base")?,
            w_scale: f(g, "expert_weights_scale")?,
            w_norm: g.meta("deepseek4.expert_weights_norm").and_then(|v| v.as_bool()).unwrap_or(true),
        };
        d.check()?;
        Ok(d)
    }

    /// Structural limits of the kernels (they hold for the real model and the fixtures).
    fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(CudaError::Other(format!("CUDA backend: unsupported model shape: {m}")));
        if self.n_hc == 0 || self.n_hc > 4 {
            return bad("hyper-connection count must be 1..4");
        }
        if self.n_hc * (self.n_hc + 2) > 24 {
            return bad("too many HC mix outputs");
        }
        if self.dh % 4 != 0 || self.dh > 512 || self.r % 2 != 0 || self.r >= self.dh {
            return bad("head dim must be a multiple of 4, <= 512, with an even rope dim");
        }
        if (self.dh - self.r) % 64 != 0 || (self.di > 0 && (self.di % 32 != 0 || !self.di.is_power_of_two())) {
            return bad("FP8/FP4 block structure");
        }
        // idx_q_prep: a warp per indexer query vector, at most 8 values per lane
        if self.di > 0 && (self.di > 256 || self.r > self.di) {
            return bad("indexer key length must be at most 256 and hold the rope dims");
        }
        if self.k > 16 || self.e > 1024 {
            return bad("expert counts");
        }
        if self.d % 8 != 0 || self.f % 8 != 0 || self.rq % 8 != 0 {
            return bad("widths must be multiples of 8");
        }
        if self.h % self.g != 0 {
            return bad("heads not divisible into groups");
        }
        Ok(())
    }

    /// RoPE frequencies (MODEL.md §2.5.3 canonical f32 arithmetic): (main, compressed).
    pub fn omegas(&self) -> (Vec<f32>, Vec<f32>) {
        let half = self.r / 2;
        let dim = self.r as f32;
        let main: Vec<f32> = (0..half).map(|k| 1.0 / self.rope_base.powf(2.0 * k as f32 / dim)).collect();
        let base = self.comp_base;
        let corr = |beta: f32| -> f64 {
            (self.r as f64) * (self.yarn_orig / (2.0 * std::f64::consts::PI * beta as f64)).ln()
                / (2.0 * (base as f64).ln())
        };
        let low = corr(self.beta_fast).floor().max(0.0) as f32;
        let high = (corr(self.beta_slow).ceil() as f32).min(self.r as f32 - 1.0);
        let comp: Vec<f32> = (0..half)
            .map(|k| {
                let ext = 1.0 / base.powf(2.0 * k as f32 / dim);
                let ramp = 1.0 - ((k as f32 - low) / (high - low).max(0.001)).clamp(0.0, 1.0);
                (ext / self.yarn_factor) * (1.0 - ramp) + ext * ramp
            })
            .collect();
        (main, comp)
    }
}
