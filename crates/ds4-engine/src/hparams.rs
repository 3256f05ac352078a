//! Model dimensions and constants read from GGUF metadata (MODEL.md §1.2).
//!
//! # Validation policy
//!
//! * **Structural constraints are always enforced**, whatever the widths: the layer schedule
//!   follows the Flash rule (`0` for layers 0-1, then 4 on even and 128 on odd layers — ds4
//!   hard-codes it, MODEL.md §1.3/D6), one KV head with key = value length, rotary dims even
//!   and smaller than the head, the non-rotary part a whole number of 64-blocks (FP8 KV
//!   simulation), the indexer head a power of two ≥ 32 holding the rotary tail (Hadamard + FP4
//!   blocks of 32), heads divisible into output groups, `expert_used ≤ expert_count`,
//!   exactly one shared expert, no group routing, hash layers ≤ layers, per-layer arrays at
//!   least `block_count` long, positive finite epsilons/bases.
//! * **Published-model values are enforced when the file claims the full model**, i.e. when
//!   `embedding_length == 4096`: then every key marked *validated* in MODEL.md §1.2 must
//!   equal the published value exactly as ds4 demands (floats within `max(1,|want|)·1e-6`).
//!   Smaller test models (the fixtures, synthesized models) load with their own widths and
//!   constants, which the forward pass honours.
//! * Unknown keys are ignored; optional keys (`expert_group_count`, `expert_group_used_count`,
//!   `swiglu_clamp_shexp`, `expert_weights_norm`, ...) may be absent; `compress_ratios` and
//!   `swiglu_clamp_exp` may be longer than `block_count` (the MTP entry), extra entries ignored.

use ds4_gguf::{Gguf, MetaValue};

pub const ARCH: &str = "deepseek4";

/// Width that marks a file as claiming to be the published DeepSeek V4 Flash.
pub const FULL_EMBEDDING_LENGTH: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum HparamsError {
    #[error("metadata key '{0}' is missing")]
    Missing(String),
    #[error("metadata key '{key}' has type {found}, expected {expected}")]
    Type { key: String, found: &'static str, expected: &'static str },
    #[error("metadata key '{key}' = {found}: {why}")]
    Invalid { key: String, found: String, why: String },
}

/// All dimensions and constants of a DeepSeek V4 model. Field comments give the
/// published (full-model) value.
#[derive(Clone, Debug, PartialEq)]
pub struct Hparams {
    pub n_layer: usize,            // 43
    pub n_embd: usize,             // 4096
    pub n_vocab: usize,            // 129280
    pub n_head: usize,             // 64
    pub n_head_kv: usize,          // 1
    pub head_dim: usize,           // 512 (key_length = value_length)
    pub rope_dim: usize,           // 64 (last dims of each head)
    pub q_lora_rank: usize,        // 1024
    pub o_lora_rank: usize,        // 1024
    pub o_groups: usize,           // 8
    pub n_expert: usize,           // 256
    pub n_expert_used: usize,      // 6
    pub expert_ff: usize,          // 2048
    pub n_expert_shared: usize,    // 1
    pub n_hash_layers: usize,      // 3
    pub sliding_window: usize,     // 128
    pub idx_heads: usize,          // 64
    pub idx_head_dim: usize,       // 128
    pub idx_top_k: usize,          // 512
    pub n_hc: usize,               // 4
    pub sinkhorn_iters: usize,     // 20
    pub hc_eps: f32,               // 1e-6
    pub rms_eps: f32,              // 1e-6
    /// Per layer (length `n_layer`): 0, 4 or 128.
    pub compress_ratios: Vec<usize>,
    /// Routed-expert SwiGLU clamp per layer (10.0).
    pub swiglu_clamp: Vec<f32>,
    /// Shared-expert clamp per layer (defaults to `swiglu_clamp`).
    pub swiglu_clamp_shexp: Vec<f32>,
    pub rope_freq_base: f32,         // 10000
    pub rope_scaling_factor: f32,    // 16
    pub rope_orig_ctx: u64,          // 65536
    pub yarn_beta_fast: f32,         // 32
    pub yarn_beta_slow: f32,         // 1
    pub compress_rope_freq_base: f32, // 160000
    pub expert_weights_scale: f32,   // 1.5
    pub expert_weights_norm: bool,   // true
    /// Entries of `compress_ratios` beyond `n_layer` (the MTP block's, normally `[0]`).
    pub extra_compress_ratios: Vec<usize>,
}

/// The published DeepSeek V4 Flash ratio rule (MODEL.md §1.3).
pub fn flash_ratio(layer: usize) -> usize {
    if layer < 2 {
        0
    } else if layer % 2 == 0 {
        4
    } else {
        128
    }
}

fn key(k: &str) -> String {
    format!("{ARCH}.{k}")
}

struct Reader<'a> {
    g: &'a Gguf,
}

impl Reader<'_> {
    fn get(&self, k: &str) -> Result<&MetaValue, HparamsError> {
        let full = key(k);
        self.g.meta(&full).ok_or(HparamsError::Missing(full))
    }
    fn usize(&self, k: &str) -> Result<usize, HparamsError> {
        let v = self.get(k)?;
        match v {
            MetaValue::U8(_) | MetaValue::U16(_) | MetaValue::U32(_) | MetaValue::U64(_)
            | MetaValue::I8(_) | MetaValue::I16(_) | MetaValue::I32(_) | MetaValue::I64(_) => v
                .as_u64()
                .and_then(|x| usize::try_from(x).ok())
                .filter(|&x| x <= u32::MAX as usize)
                .ok_or_else(|| HparamsError::Invalid {
                    key: key(k),
                    found: format!("{v:?}"),
                    why: "must be a non-negative 32-bit integer".into(),
                }),
            _ => Err(HparamsError::Type { key: key(k), found: v.type_name(), expected: "integer" }),
        }
    }
    fn opt_usize(&self, k: &str) -> Result<Option<usize>, HparamsError> {
        if self.g.meta(&key(k)).is_none() {
            return Ok(None);
        }
        self.usize(k).map(Some)
    }
    fn f32(&self, k: &str) -> Result<f32, HparamsError> {
        let v = self.get(k)?;
        match v {
            MetaValue::F32(_) | MetaValue::F64(_) | MetaValue::U32(_) | MetaValue::I32(_) => {
                let x = v.as_f64().unwrap() as f32;
                if x.is_finite() {
                    Ok(x)
                } else {
                    Err(HparamsError::Invalid { key: key(k), found: format!("{x}"), why: "not finite".into() })
                }
            }
            _ => Err(HparamsError::Type { key: key(k), found: v.type_name(), expected: "f32/f64/u32/i32" }),
        }
    }
    fn bool_opt(&self, k: &str) -> Result<Option<bool>, HparamsError> {
        match self.g.meta(&key(k)) {
            None => Ok(None),
            Some(MetaValue::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(HparamsError::Type { key: key(k), found: v.type_name(), expected: "bool" }),
        }
    }
    fn array(&self, k: &str) -> Result<&[MetaValue], HparamsError> {
        let v = self.get(k)?;
        v.as_array().ok_or(HparamsError::Type { key: key(k), found: v.type_name(), expected: "array" })
    }
    fn int_array(&self, k: &str) -> Result<Vec<usize>, HparamsError> {
        self.array(k)?
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                MetaValue::I32(_) | MetaValue::U32(_) | MetaValue::I64(_) | MetaValue::U64(_) => {
                    e.as_u64().map(|x| x as usize).ok_or_else(|| HparamsError::Invalid {
                        key: key(k),
                        found: format!("{e:?} at index {i}"),
                        why: "negative entry".into(),
                    })
                }
                _ => Err(HparamsError::Type { key: format!("{}[{i}]", key(k)), found: e.type_name(), expected: "i32/u32" }),
            })
            .collect()
    }
    fn float_array(&self, k: &str) -> Result<Vec<f32>, HparamsError> {
        self.array(k)?
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                MetaValue::F32(_) | MetaValue::F64(_) => Ok(e.as_f64().unwrap() as f32),
                _ => Err(HparamsError::Type { key: format!("{}[{i}]", key(k)), found: e.type_name(), expected: "f32/f64" }),
            })
            .collect()
    }
}

fn invalid(k: &str, found: impl std::fmt::Display, why: impl Into<String>) -> HparamsError {
    HparamsError::Invalid { key: key(k), found: found.to_string(), why: why.into() }
}

fn feq(got: f32, want: f32) -> bool {
    ((got as f64) - (want as f64)).abs() <= (want as f64).abs().max(1.0) * 1e-6
}

impl Hparams {
    /// Read and validate (see the module doc for the policy).
    pub fn from_gguf(g: &Gguf) -> Result<Hparams, HparamsError> {
        match g.meta("general.architecture") {
            Some(MetaValue::Str(a)) if a == ARCH => {}
            Some(v) => {
                return Err(HparamsError::Invalid {
                    key: "general.architecture".into(),
                    found: format!("{v:?}"),
                    why: format!("expected \"{ARCH}\""),
                })
            }
            None => return Err(HparamsError::Missing("general.architecture".into())),
        }
        let r = Reader { g };
        let n_layer = r.usize("block_count")?;
        let mut ratios = r.int_array("attention.compress_ratios")?;
        let mut clamp = r.float_array("swiglu_clamp_exp")?;
        if ratios.len() < n_layer {
            return Err(invalid("attention.compress_ratios", format!("{} entries", ratios.len()), format!("needs at least block_count = {n_layer}")));
        }
        if clamp.len() < n_layer {
            return Err(invalid("swiglu_clamp_exp", format!("{} entries", clamp.len()), format!("needs at least block_count = {n_layer}")));
        }
        let extra = ratios.split_off(n_layer);
        clamp.truncate(n_layer);
        let clamp_sh = match g.meta(&key("swiglu_clamp_shexp")) {
            None => clamp.clone(),
            Some(_) => {
                let mut v = r.float_array("swiglu_clamp_shexp")?;
                if v.len() < n_layer {
                    return Err(invalid("swiglu_clamp_shexp", format!("{} entries", v.len()), format!("needs at least block_count = {n_layer}")));
                }
                v.truncate(n_layer);
                v
            }
        };
        let key_len = r.usize("attention.key_length")?;
        let val_len = r.usize("attention.value_length")?;
        let hp = Hparams {
            n_layer,
            n_embd: r.usize("embedding_length")?,
            n_vocab: r.usize("vocab_size")?,
            n_head: r.usize("attention.head_count")?,
            n_head_kv: r.usize("attention.head_count_kv")?,
            head_dim: key_len,
            rope_dim: r.usize("rope.dimension_count")?,
            q_lora_rank: r.usize("attention.q_lora_rank")?,
            o_lora_rank: r.usize("attention.output_lora_rank")?,
            o_groups: r.usize("attention.output_group_count")?,
            n_expert: r.usize("expert_count")?,
            n_expert_used: r.usize("expert_used_count")?,
            expert_ff: r.usize("expert_feed_forward_length")?,
            n_expert_shared: r.usize("expert_shared_count")?,
            n_hash_layers: r.usize("hash_layer_count")?,
            sliding_window: r.usize("attention.sliding_window")?,
            idx_heads: r.usize("attention.indexer.head_count")?,
            idx_head_dim: r.usize("attention.indexer.key_length")?,
            idx_top_k: r.usize("attention.indexer.top_k")?,
            n_hc: r.usize("hyper_connection.count")?,
            sinkhorn_iters: r.usize("hyper_connection.sinkhorn_iterations")?,
            hc_eps: r.f32("hyper_connection.epsilon")?,
            rms_eps: r.f32("attention.layer_norm_rms_epsilon")?,
            compress_ratios: ratios,
            swiglu_clamp: clamp,
            swiglu_clamp_shexp: clamp_sh,
            rope_freq_base: r.f32("rope.freq_base")?,
            rope_scaling_factor: r.f32("rope.scaling.factor")?,
            rope_orig_ctx: r.usize("rope.scaling.original_context_length")? as u64,
            yarn_beta_fast: r.f32("rope.scaling.yarn_beta_fast")?,
            yarn_beta_slow: r.f32("rope.scaling.yarn_beta_slow")?,
            compress_rope_freq_base: r.f32("attention.compress_rope_freq_base")?,
            expert_weights_scale: r.f32("expert_weights_scale")?,
            expert_weights_norm: r.bool_opt("expert_weights_norm")?.unwrap_or(true),
            extra_compress_ratios: extra,
        };
        if val_len != key_len {
            return Err(invalid("attention.value_length", val_len, format!("must equal key_length {key_len} (shared K=V)")));
        }
        for k in ["expert_group_count", "expert_group_used_count"] {
            if let Some(v) = r.opt_usize(k)? {
                if v != 0 {
                    return Err(invalid(k, v, "group-limited routing is not part of DeepSeek V4 Flash (must be 0)"));
                }
            }
        }
        hp.check_structure()?;
        if hp.n_embd == FULL_EMBEDDING_LENGTH {
            hp.check_published(r.bool_opt("expert_weights_norm")?)?;
        }
        Ok(hp)
    }

    /// Constraints every model (any width) must satisfy for the forward pass to be defined.
    pub fn check_structure(&self) -> Result<(), HparamsError> {
        let pos = |k: &str, v: usize| if v == 0 { Err(invalid(k, v, "must be positive")) } else { Ok(()) };
        pos("block_count", self.n_layer)?;
        pos("embedding_length", self.n_embd)?;
        pos("vocab_size", self.n_vocab)?;
        pos("attention.head_count", self.n_head)?;
        pos("attention.q_lora_rank", self.q_lora_rank)?;
        pos("attention.output_lora_rank", self.o_lora_rank)?;
        pos("attention.output_group_count", self.o_groups)?;
        pos("expert_count", self.n_expert)?;
        pos("expert_used_count", self.n_expert_used)?;
        pos("expert_feed_forward_length", self.expert_ff)?;
        pos("attention.sliding_window", self.sliding_window)?;
        pos("hyper_connection.count", self.n_hc)?;
        pos("hyper_connection.sinkhorn_iterations", self.sinkhorn_iters)?;
        if self.n_vocab > i32::MAX as usize {
            return Err(invalid("vocab_size", self.n_vocab, "too large"));
        }
        if self.n_head_kv != 1 {
            return Err(invalid("attention.head_count_kv", self.n_head_kv, "DeepSeek V4 uses one shared KV head"));
        }
        if self.rope_dim == 0 || self.rope_dim % 2 != 0 || self.rope_dim >= self.head_dim {
            return Err(invalid("rope.dimension_count", self.rope_dim, format!("must be even, positive and below key_length {}", self.head_dim)));
        }
        if (self.head_dim - self.rope_dim) % 64 != 0 {
            return Err(invalid(
                "attention.key_length",
                self.head_dim,
                format!("non-rotary dims ({} - {}) must be a multiple of 64 (FP8 KV blocks)", self.head_dim, self.rope_dim),
            ));
        }
        if self.n_head % self.o_groups != 0 {
            return Err(invalid("attention.output_group_count", self.o_groups, format!("must divide head_count {}", self.n_head)));
        }
        if self.n_expert_used > self.n_expert {
            return Err(invalid("expert_used_count", self.n_expert_used, format!("exceeds expert_count {}", self.n_expert)));
        }
        if self.n_expert_shared != 1 {
            return Err(invalid("expert_shared_count", self.n_expert_shared, "exactly one shared expert is supported"));
        }
        if self.n_hash_layers > self.n_layer {
            return Err(invalid("hash_layer_count", self.n_hash_layers, format!("exceeds block_count {}", self.n_layer)));
        }
        for (l, &r) in self.compress_ratios.iter().enumerate() {
            if r != flash_ratio(l) {
                return Err(invalid(
                    "attention.compress_ratios",
                    format!("{r} at layer {l}"),
                    format!("expected {} (Flash schedule: 0,0 then 4 on even / 128 on odd layers)", flash_ratio(l)),
                ));
            }
        }
        if self.compress_ratios.contains(&4) {
            pos("attention.indexer.head_count", self.idx_heads)?;
            pos("attention.indexer.top_k", self.idx_top_k)?;
            let d = self.idx_head_dim;
            if d < 32 || !d.is_power_of_two() || d < self.rope_dim {
                return Err(invalid(
                    "attention.indexer.key_length",
                    d,
                    format!("must be a power of two >= 32 and >= rope dims {} (Hadamard + FP4 blocks of 32)", self.rope_dim),
                ));
            }
        }
        for (k, v) in [
            ("hyper_connection.epsilon", self.hc_eps),
            ("attention.layer_norm_rms_epsilon", self.rms_eps),
            ("rope.freq_base", self.rope_freq_base),
            ("attention.compress_rope_freq_base", self.compress_rope_freq_base),
            ("rope.scaling.factor", self.rope_scaling_factor),
            ("rope.scaling.yarn_beta_fast", self.yarn_beta_fast),
            ("rope.scaling.yarn_beta_slow", self.yarn_beta_slow),
        ] {
            if !(v > 0.0) {
                return Err(invalid(k, v, "must be positive"));
            }
        }
        if self.rope_orig_ctx == 0 {
            return Err(invalid("rope.scaling.original_context_length", 0, "must be positive"));
        }
        for (l, (&a, &b)) in self.swiglu_clamp.iter().zip(&self.swiglu_clamp_shexp).enumerate() {
            if !(a > 0.0) || !(b > 0.0) {
                return Err(invalid("swiglu_clamp_exp", format!("{a}/{b} at layer {l}"), "must be positive"));
            }
        }
        Ok(())
    }

    /// The published values of MODEL.md §1.2, required when the file claims the full model.
    fn check_published(&self, norm_key: Option<bool>) -> Result<(), HparamsError> {
        // (fewer blocks: the published model's first layers, e.g. `ds4-gguf synth --layers`
        // for a GPU the 43 overflow; every later check and binding still holds per layer)
        if self.n_layer == 0 || self.n_layer > 43 {
            return Err(invalid("block_count", self.n_layer, "the published model has 43 (or its first layers: 1 to 43; embedding_length 4096 claims the full model)"));
        }
        let ints: [(&str, usize, usize); 21] = [
            ("embedding_length", self.n_embd, 4096),
            ("vocab_size", self.n_vocab, 129280),
            ("attention.head_count", self.n_head, 64),
            ("attention.head_count_kv", self.n_head_kv, 1),
            ("attention.key_length", self.head_dim, 512),
            ("rope.dimension_count", self.rope_dim, 64),
            ("attention.q_lora_rank", self.q_lora_rank, 1024),
            ("attention.output_lora_rank", self.o_lora_rank, 1024),
            ("attention.output_group_count", self.o_groups, 8),
            ("expert_count", self.n_expert, 256),
            ("expert_used_count", self.n_expert_used, 6),
            ("expert_feed_forward_length", self.expert_ff, 2048),
            ("expert_shared_count", self.n_expert_shared, 1),
            ("hash_layer_count", self.n_hash_layers, 3),
            ("attention.sliding_window", self.sliding_window, 128),
            ("attention.indexer.head_count", self.idx_heads, 64),
            ("attention.indexer.key_length", self.idx_head_dim, 128),
            ("attention.indexer.top_k", self.idx_top_k, 512),
            ("hyper_connection.count", self.n_hc, 4),
            ("hyper_connection.sinkhorn_iterations", self.sinkhorn_iters, 20),
            ("rope.scaling.original_context_length", self.rope_orig_ctx as usize, 65536),
        ];
        for (k, got, want) in ints {
            if got != want {
                return Err(invalid(k, got, format!("the published model has {want} (embedding_length 4096 claims the full model)")));
            }
        }
        let floats: [(&str, f32, f32); 8] = [
            ("hyper_connection.epsilon", self.hc_eps, 1e-6),
            ("attention.layer_norm_rms_epsilon", self.rms_eps, 1e-6),
            ("rope.freq_base", self.rope_freq_base, 10000.0),
            ("rope.scaling.factor", self.rope_scaling_factor, 16.0),
            ("rope.scaling.yarn_beta_fast", self.yarn_beta_fast, 32.0),
            ("rope.scaling.yarn_beta_slow", self.yarn_beta_slow, 1.0),
            ("attention.compress_rope_freq_base", self.compress_rope_freq_base, 160000.0),
            ("expert_weights_scale", self.expert_weights_scale, 1.5),
        ];
        for (k, got, want) in floats {
            if !feq(got, want) {
                return Err(invalid(k, got, format!("the published model has {want}")));
            }
        }
        for (l, &c) in self.swiglu_clamp.iter().enumerate() {
            if !feq(c, 10.0) {
                return Err(invalid("swiglu_clamp_exp", format!("{c} at layer {l}"), "the published model has 10"));
            }
        }
        if norm_key != Some(true) {
            return Err(invalid("expert_weights_norm", format!("{norm_key:?}"), "the published model has true"));
        }
        Ok(())
    }

    /// The published DeepSeek V4 Flash hyperparameters (MODEL.md §1.1), e.g. for generating a
    /// full-size random model or sizing estimates.
    pub fn published() -> Hparams {
        let n_layer = 43;
        Hparams {
            n_layer,
            n_embd: 4096,
            n_vocab: 129280,
            n_head: 64,
            n_head_kv: 1,
            head_dim: 512,
            rope_dim: 64,
            q_lora_rank: 1024,
            o_lora_rank: 1024,
            o_groups: 8,
            n_expert: 256,
            n_expert_used: 6,
            expert_ff: 2048,
            n_expert_shared: 1,
            n_hash_layers: 3,
            sliding_window: 128,
            idx_heads: 64,
            idx_head_dim: 128,
            idx_top_k: 512,
            n_hc: 4,
            sinkhorn_iters: 20,
            hc_eps: 1e-6,
            rms_eps: 1e-6,
            compress_ratios: (0..n_layer).map(flash_ratio).collect(),
            swiglu_clamp: vec![10.0; n_layer],
            swiglu_clamp_shexp: vec![10.0; n_layer],
            rope_freq_base: 10000.0,
            rope_scaling_factor: 16.0,
            rope_orig_ctx: 65536,
            yarn_beta_fast: 32.0,
            yarn_beta_slow: 1.0,
            compress_rope_freq_base: 160000.0,
            expert_weights_scale: 1.5,
            expert_weights_norm: true,
            extra_compress_ratios: vec![0],
        }
    }

    /// Whether this file claims to be the published model (strict tensor types apply).
    pub fn is_full_model(&self) -> bool {
        self.n_embd == FULL_EMBEDDING_LENGTH
    }

    pub fn ratio(&self, layer: usize) -> usize {
        self.compress_ratios[layer]
    }

    /// Non-rotary ("nope") dims per head.
    pub fn nope_dim(&self) -> usize {
        self.head_dim - self.rope_dim
    }

    /// Heads per output group.
    pub fn heads_per_group(&self) -> usize {
        self.n_head / self.o_groups
    }

    /// Width of a hyper-connection mixer output: pre(n_hc) + post(n_hc) + n_hc² combine.
    pub fn hc_mix(&self) -> usize {
        (2 + self.n_hc) * self.n_hc
    }

    /// Layers routed by the token-id table instead of the learned router.
    pub fn is_hash_layer(&self, layer: usize) -> bool {
        layer < self.n_hash_layers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flash_schedule() {
        let r: Vec<usize> = (0..8).map(flash_ratio).collect();
        assert_eq!(r, [0, 0, 4, 128, 4, 128, 4, 128]);
    }
}
