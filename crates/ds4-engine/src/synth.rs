//! Random-weight DeepSeek V4 models (tests, demos, GPU benchmarks without the real weights).
//!
//! The tensor table comes from [`crate::layout::expected_tensors`] (names, dims and the exact
//! types of the requested variant), the metadata mirrors the keys and value types of the
//! published files, and the data is streamed through [`ds4_gguf::writer`], so the `full`
//! preset (80.76 GiB for q2) never needs more than a few tens of MiB of memory.
//!
//! # Weight scales
//! Values are drawn so that activations stay well conditioned: every matrix has per-element
//! std `gain / sqrt(fan_in)` (gain 1, except the LM head 2.5, the attention output and router
//! 2.0, down projections 0.7), norms are `1 ± 0.1`, HC scales uniform in `[0.5, 1.5]`, HC
//! biases `N(0, 0.5)`, sinks `N(1, 1.5)`, router bias `N(0, 0.3)`, position biases `N(0, 0.5)`,
//! embeddings `N(0, 1)`. Quant blocks are random but valid codes with their scale fields set
//! to reach the target std; K-quant minimums are chosen so every sub-block is zero mean.
//!
//! # Determinism
//! The data depend only on the seed: each tensor is produced in fixed chunks of
//! [`CHUNK_VALUES`] values, each seeded from (seed, tensor name, chunk index), so the bytes are
//! identical whatever the thread count.

use crate::hparams::{flash_ratio, Hparams, ARCH};
use crate::layout::{self, TensorKind, TensorSpec, Variant};
use ds4_gguf::writer::{GgufHeader, TensorSpec as WSpec, WriteError};
use ds4_gguf::{GgmlType, MetaValue};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// 6 layers, width 256: every structural feature (hash layers, ratio 4 and 128, indexer),
    /// quant-compatible widths, a few MiB.
    Tiny,
    /// The published DeepSeek V4 Flash shapes.
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quant {
    /// gate/up IQ2_XXS, down Q2_K (the published q2 file).
    Q2,
    /// All experts Q4_K (the published q4 file).
    Q4,
    /// Experts F16 (test sizes only).
    F16,
}

impl Quant {
    pub fn variant(self) -> Variant {
        match self {
            Quant::Q2 => Variant::Q2,
            Quant::Q4 => Variant::Q4,
            Quant::F16 => Variant::F16,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthOptions {
    pub preset: Preset,
    pub quant: Quant,
    pub seed: u64,
    /// Keep only the preset's first N layers (None: all): the same per-layer shapes in a
    /// smaller file, e.g. the full preset on an 80 GB GPU, which its 43 layers overflow.
    pub layers: Option<usize>,
}

impl SynthOptions {
    /// The preset's hyperparameters with `layers` applied.
    pub fn hparams(&self) -> Result<Hparams, SynthError> {
        let mut hp = hparams(self.preset);
        if let Some(n) = self.layers {
            if n == 0 || n > hp.n_layer {
                return Err(SynthError::Unsupported(format!("--layers {n}: the preset has 1 to {} layers", hp.n_layer)));
            }
            hp.n_layer = n;
            hp.n_hash_layers = hp.n_hash_layers.min(n);
            hp.compress_ratios.truncate(n);
            hp.swiglu_clamp.truncate(n);
            hp.swiglu_clamp_shexp.truncate(n);
        }
        Ok(hp)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Values per independently seeded chunk (a multiple of every block length).
pub const CHUNK_VALUES: usize = 1 << 16;

/// Hyperparameters of a preset (the full preset is [`Hparams::published`]).
pub fn hparams(preset: Preset) -> Hparams {
    match preset {
        Preset::Full => Hparams::published(),
        Preset::Tiny => {
            let n_layer = 6;
            Hparams {
                n_layer,
                n_embd: 256,
                n_vocab: 512,
                n_head: 4,
                head_dim: 128,
                rope_dim: 64,
                q_lora_rank: 64,
                o_lora_rank: 64,
                o_groups: 2,
                n_expert: 8,
                n_expert_used: 2,
                expert_ff: 256,
                idx_heads: 4,
                idx_head_dim: 64,
                idx_top_k: 16,
                compress_ratios: (0..n_layer).map(flash_ratio).collect(),
                swiglu_clamp: vec![10.0; n_layer],
                swiglu_clamp_shexp: vec![10.0; n_layer],
                extra_compress_ratios: vec![],
                ..Hparams::published()
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Tokenizer vocabulary
// ------------------------------------------------------------------------------------------

pub const BOS: &str = "<｜begin▁of▁sentence｜>";
pub const EOS: &str = "<｜end▁of▁sentence｜>";
pub const PAD: &str = "<｜▁pad▁｜>";
/// Chat specials placed at the end of the vocabulary, with their GGUF token types
/// (3 = control, 4 = user-defined, as in the published vocabulary).
pub const CHAT_SPECIALS: [(&str, i32); 5] =
    [("<｜User｜>", 3), ("<｜Assistant｜>", 3), ("<think>", 4), ("</think>", 4), ("｜DSML｜", 4)];

/// Text the tiny vocabulary's merges are learned from (so common English and chat words
/// tokenize into multi-byte tokens).
const CORPUS: &str = "The user asked the assistant a question about the weather in the city. \
The assistant thought about it and then answered with a short and helpful reply. \
When the user wants to call a tool, the assistant writes the tool name and the arguments, \
then waits for the result of the tool call before it continues the answer. \
Hello! How are you today? I am fine, thank you. What is the time? It is ten o'clock. \
This is a test of the tokenizer: numbers like 12345 and 2026, words like reasoning, \
thinking, function, parameters, string, integer, and the end of the sentence. \
In the beginning there was a model, and the model was trained on the internet. \
Please write a function that returns the sum of two integers in Python and in Rust. \
The quick brown fox jumps over the lazy dog; the dog sleeps in the sun.";

/// GPT-2 byte-level alphabet: printable bytes map to themselves, the others to U+0100 + n.
/// Returned in the vocabulary order (printable bytes first, then the remapped ones).
pub fn byte_symbols() -> Vec<(u8, char)> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut out: Vec<(u8, char)> = (0..256u32).filter(|&b| printable(b)).map(|b| (b as u8, char::from_u32(b).unwrap())).collect();
    let mut n = 0;
    for b in 0..256u32 {
        if !printable(b) {
            out.push((b as u8, char::from_u32(256 + n).unwrap()));
            n += 1;
        }
    }
    out
}

/// A byte-level BPE vocabulary of exactly `n_vocab` tokens: BOS/EOS/PAD (ids 0-2), the 256
/// byte symbols, merge results in rank order, then the five chat specials. Merges are learned
/// from a built-in text first, then (for large vocabularies) made of deterministic pairs of
/// earlier tokens.
pub struct Vocab {
    pub tokens: Vec<String>,
    pub types: Vec<i32>,
    pub merges: Vec<String>,
}

pub fn vocab(n_vocab: usize) -> Vocab {
    assert!(n_vocab >= 3 + 256 + CHAT_SPECIALS.len(), "vocabulary too small for the byte tokens");
    let syms = byte_symbols();
    let map: HashMap<u8, char> = syms.iter().copied().collect();
    let mut tokens: Vec<String> = vec![BOS.into(), EOS.into(), PAD.into()];
    let mut types = vec![3, 3, 3];
    for (_, c) in &syms {
        tokens.push(c.to_string());
        types.push(1);
    }
    let n_merges = n_vocab - tokens.len() - CHAT_SPECIALS.len();
    let mut known: HashSet<String> = tokens.iter().cloned().collect();
    let mut merges = Vec::with_capacity(n_merges);
    // Pre-tokenize the corpus: a word is an optional leading space plus a run of letters, or a
    // single other byte; byte-mapped into the GPT-2 alphabet.
    let mut words: HashMap<Vec<String>, usize> = HashMap::new();
    let bytes = CORPUS.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let alpha = |k: usize| k < bytes.len() && bytes[k].is_ascii_alphabetic();
        if alpha(i) || (bytes[i] == b' ' && alpha(i + 1)) {
            i += 1;
            while alpha(i) {
                i += 1;
            }
        } else {
            i += 1;
        }
        let w: Vec<String> = bytes[start..i].iter().map(|b| map[b].to_string()).collect();
        *words.entry(w).or_default() += 1;
    }
    let mut words: Vec<(Vec<String>, usize)> = words.into_iter().collect();
    words.sort();
    while merges.len() < n_merges {
        let mut counts: HashMap<(String, String), usize> = HashMap::new();
        for (w, c) in &words {
            for p in w.windows(2) {
                *counts.entry((p[0].clone(), p[1].clone())).or_default() += c;
            }
        }
        // Most frequent pair; ties broken by the pair itself (deterministic).
        let best = counts.into_iter().filter(|(_, c)| *c >= 2).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        let Some(((a, b), _)) = best else { break };
        let merged = format!("{a}{b}");
        for (w, _) in words.iter_mut() {
            let mut out = Vec::with_capacity(w.len());
            let mut k = 0;
            while k < w.len() {
                if k + 1 < w.len() && w[k] == a && w[k + 1] == b {
                    out.push(merged.clone());
                    k += 2;
                } else {
                    out.push(std::mem::take(&mut w[k]));
                    k += 1;
                }
            }
            *w = out;
        }
        merges.push(format!("{a} {b}"));
        if known.insert(merged.clone()) {
            tokens.push(merged);
            types.push(1);
        } else {
            merges.pop();
        }
    }
    // Synthetic merges: an earlier ordinary token joined with a short early one (checking
    // lengths before building strings keeps this fast for the full 129280-token vocabulary).
    let mut rng = SplitMix(0x5eed_70c0);
    let mut lens: Vec<usize> = tokens.iter().map(|t| t.chars().count()).collect();
    while merges.len() < n_merges {
        let hi = tokens.len();
        let a = 3 + (rng.next() % (hi - 3) as u64) as usize;
        let b = 3 + (rng.next() % (hi.min(1024) - 3) as u64) as usize;
        if lens[a] + lens[b] > 16 {
            continue;
        }
        let merged = format!("{}{}", tokens[a], tokens[b]);
        if known.contains(&merged) {
            continue;
        }
        merges.push(format!("{} {}", tokens[a], tokens[b]));
        known.insert(merged.clone());
        lens.push(lens[a] + lens[b]);
        tokens.push(merged);
        types.push(1);
    }
    for (t, ty) in CHAT_SPECIALS {
        tokens.push(t.into());
        types.push(ty);
    }
    debug_assert_eq!(tokens.len(), n_vocab);
    Vocab { tokens, types, merges }
}

// ------------------------------------------------------------------------------------------
// Metadata and tensor table
// ------------------------------------------------------------------------------------------

fn arr<T>(v: impl IntoIterator<Item = T>, f: impl Fn(T) -> MetaValue) -> MetaValue {
    MetaValue::Array(v.into_iter().map(f).collect())
}

/// Metadata with the keys and value types of the published files (MODEL.md §1.2).
pub fn metadata(hp: &Hparams, opts: &SynthOptions) -> Vec<(String, MetaValue)> {
    use MetaValue::*;
    let k = |s: &str| format!("{ARCH}.{s}");
    let u = |v: usize| U32(v as u32);
    let voc = vocab(hp.n_vocab);
    let name = format!(
        "DeepSeek V4 Flash random weights ({:?} {:?}, seed {})",
        opts.preset, opts.quant, opts.seed
    );
    vec![
        ("general.architecture".into(), Str(ARCH.into())),
        ("general.type".into(), Str("model".into())),
        ("general.name".into(), Str(name)),
        ("general.quantization_version".into(), U32(2)),
        (k("block_count"), u(hp.n_layer)),
        (k("context_length"), U32(1_048_576)),
        (k("embedding_length"), u(hp.n_embd)),
        (k("attention.head_count"), u(hp.n_head)),
        (k("attention.head_count_kv"), u(hp.n_head_kv)),
        (k("rope.scaling.type"), Str("yarn".into())),
        (k("rope.scaling.factor"), F32(hp.rope_scaling_factor)),
        (k("rope.scaling.original_context_length"), U32(hp.rope_orig_ctx as u32)),
        (k("rope.scaling.yarn_beta_fast"), F32(hp.yarn_beta_fast)),
        (k("rope.scaling.yarn_beta_slow"), F32(hp.yarn_beta_slow)),
        (k("rope.freq_base"), F32(hp.rope_freq_base)),
        (k("attention.layer_norm_rms_epsilon"), F32(hp.rms_eps)),
        (k("expert_used_count"), u(hp.n_expert_used)),
        (k("expert_gating_func"), U32(4)),
        (k("attention.key_length"), u(hp.head_dim)),
        (k("attention.value_length"), u(hp.head_dim)),
        (k("vocab_size"), u(hp.n_vocab)),
        (k("rope.dimension_count"), u(hp.rope_dim)),
        (k("attention.q_lora_rank"), u(hp.q_lora_rank)),
        (k("attention.output_lora_rank"), u(hp.o_lora_rank)),
        (k("attention.output_group_count"), u(hp.o_groups)),
        (
            k("attention.compress_ratios"),
            arr(hp.compress_ratios.iter().chain(&hp.extra_compress_ratios), |&r| I32(r as i32)),
        ),
        (k("attention.compress_rope_freq_base"), F32(hp.compress_rope_freq_base)),
        (k("expert_feed_forward_length"), u(hp.expert_ff)),
        (k("expert_count"), u(hp.n_expert)),
        (k("expert_shared_count"), u(hp.n_expert_shared)),
        (k("expert_weights_scale"), F32(hp.expert_weights_scale)),
        (k("expert_weights_norm"), Bool(hp.expert_weights_norm)),
        (k("hash_layer_count"), u(hp.n_hash_layers)),
        (k("swiglu_clamp_exp"), arr(&hp.swiglu_clamp, |&c| F32(c))),
        (k("attention.sliding_window"), u(hp.sliding_window)),
        (k("attention.indexer.head_count"), u(hp.idx_heads)),
        (k("attention.indexer.key_length"), u(hp.idx_head_dim)),
        (k("attention.indexer.top_k"), u(hp.idx_top_k)),
        (k("nextn_predict_layers"), u(hp.extra_compress_ratios.len())),
        (k("hyper_connection.count"), u(hp.n_hc)),
        (k("hyper_connection.sinkhorn_iterations"), u(hp.sinkhorn_iters)),
        (k("hyper_connection.epsilon"), F32(hp.hc_eps)),
        ("tokenizer.ggml.model".into(), Str("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Str("joyai-llm".into())),
        ("tokenizer.ggml.tokens".into(), arr(voc.tokens, Str)),
        ("tokenizer.ggml.token_type".into(), arr(voc.types, I32)),
        ("tokenizer.ggml.merges".into(), arr(voc.merges, Str)),
        ("tokenizer.ggml.bos_token_id".into(), U32(0)),
        ("tokenizer.ggml.eos_token_id".into(), U32(1)),
        ("tokenizer.ggml.padding_token_id".into(), U32(1)),
        ("tokenizer.ggml.add_bos_token".into(), Bool(false)),
        ("tokenizer.ggml.add_eos_token".into(), Bool(false)),
    ]
}

/// Tensor table of a preset/quant (from the engine layout) and the GGUF header.
pub fn plan(opts: &SynthOptions) -> Result<(GgufHeader, Vec<TensorSpec>), SynthError> {
    let hp = opts.hparams()?;
    if opts.quant == Quant::F16 && hp.is_full_model() {
        return Err(SynthError::Unsupported(
            "--quant f16 is for test sizes only: the full model accepts IQ2_XXS/Q2_K/Q4_K experts".into(),
        ));
    }
    let specs = layout::expected_tensors(&hp, opts.quant.variant());
    let mut h = GgufHeader::new();
    for (k, v) in metadata(&hp, opts) {
        h.set(k, v);
    }
    for s in &specs {
        h.add_tensor(WSpec::new(s.name.clone(), &s.dims, s.types[0]));
    }
    Ok((h, specs))
}

// ------------------------------------------------------------------------------------------
// Random data
// ------------------------------------------------------------------------------------------

/// splitmix64: tiny, fast, and good enough for random weights.
struct SplitMix(u64);
impl SplitMix {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    #[inline]
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
    /// Approximately N(0, 1): sum of four uniforms (bounded at ±3.46, fine for weights).
    #[inline]
    fn normal(&mut self) -> f32 {
        let v = self.next();
        let s: u32 = (0..4).map(|i| ((v >> (16 * i)) & 0xffff) as u32).sum();
        (s as f32 * (1.0 / 65536.0) - 2.0) * 1.732_050_8
    }
    fn fill(&mut self, out: &mut [u8]) {
        let mut c = out.chunks_exact_mut(8);
        for b in &mut c {
            b.copy_from_slice(&self.next().to_le_bytes());
        }
        let r = c.into_remainder();
        let v = self.next().to_le_bytes();
        let n = r.len();
        r.copy_from_slice(&v[..n]);
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// How a tensor's values are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    Normal { mean: f32, std: f32 },
    Uniform { lo: f32, hi: f32 },
    /// I32 token → expert table: `k` distinct experts in `0..n_expert` per token.
    Hash { n_expert: usize, k: usize },
}

/// The distribution of each tensor (see the module docs).
pub fn fill_for(s: &TensorSpec, hp: &Hparams) -> Fill {
    let base = s.name.rsplit_once("blk.").map_or(s.name.as_str(), |(_, r)| r.split_once('.').map_or(r, |(_, r)| r));
    let base = base.strip_prefix("mtp.0.").unwrap_or(base);
    let normal = |mean, std| Fill::Normal { mean, std };
    match s.kind {
        TensorKind::Embedding => normal(0.0, 1.0),
        TensorKind::Norm => normal(1.0, 0.1),
        TensorKind::PositionBias => normal(0.0, 0.5),
        TensorKind::HashTable => Fill::Hash { n_expert: hp.n_expert, k: hp.n_expert_used },
        TensorKind::Vector => {
            if base.contains("_scale") {
                Fill::Uniform { lo: 0.5, hi: 1.5 }
            } else if base.contains("_base") {
                normal(0.0, 0.5)
            } else if base.starts_with("attn_sinks") {
                normal(1.0, 1.5)
            } else if base.starts_with("exp_probs_b") {
                normal(0.0, 0.3)
            } else {
                normal(0.0, 0.1)
            }
        }
        TensorKind::Matrix => {
            let gain = match base {
                "output.weight" => 2.5,
                "attn_output_b.weight" | "ffn_gate_inp.weight" => 2.0,
                "ffn_down_exps.weight" | "ffn_down_shexp.weight" => 0.7,
                _ => 1.0,
            };
            normal(0.0, gain / (s.dims[0] as f32).sqrt())
        }
    }
}

#[inline]
fn put_f16(b: &mut [u8], at: usize, v: f32) {
    b[at..at + 2].copy_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes());
}

/// Per-block scale jitter (about ±15 %), so blocks are not all alike.
#[inline]
fn jitter(r: &mut SplitMix) -> f32 {
    0.85 + 0.3 * r.unit()
}

/// Fill `out` (whole blocks of `ty`) with valid random blocks whose decoded values have mean 0
/// and std ≈ `std`. The per-type constants are the std of the decoded value per unit `d`:
/// Q8_0 uniform i8 → 73.9; Q2_K sc uniform 1..15, m = sc (zero-mean sub-blocks) → 10.17;
/// Q4_K sc uniform 1..63, dmin = 8d, m = round(15 sc / 16) → 169.7; IQ2_XXS (ls uniform 0..15,
/// grid magnitudes rms 23.1) → 53.3.
fn fill_quant(ty: GgmlType, std: f32, r: &mut SplitMix, out: &mut [u8]) {
    let bb = ty.block_bytes();
    r.fill(out);
    for b in out.chunks_exact_mut(bb) {
        let j = jitter(r);
        match ty {
            GgmlType::Q8_0 => put_f16(b, 0, std * j / 73.9),
            GgmlType::Q2K => {
                for s in b[..16].iter_mut() {
                    let sc = 1 + (*s % 15);
                    *s = sc | (sc << 4);
                }
                let d = half::f16::from_f32(std * j / 10.17).to_f32();
                put_f16(b, 80, d);
                put_f16(b, 82, 1.5 * d);
            }
            GgmlType::Q4K => {
                let d = half::f16::from_f32(std * j / 169.7).to_f32();
                put_f16(b, 0, d);
                put_f16(b, 2, 8.0 * d);
                let mut sc = [0u8; 8];
                let mut m = [0u8; 8];
                for k in 0..8 {
                    sc[k] = 1 + b[4 + k] % 63;
                    m[k] = ((sc[k] as u32 * 15 + 8) / 16) as u8;
                }
                let s = &mut b[4..16];
                s.fill(0);
                for k in 0..4 {
                    s[k] = sc[k] | ((sc[k + 4] >> 4) << 6);
                    s[k + 4] = m[k] | ((m[k + 4] >> 4) << 6);
                    s[k + 8] = (sc[k + 4] & 15) | ((m[k + 4] & 15) << 4);
                }
            }
            GgmlType::Iq2Xxs => put_f16(b, 0, std * j / 53.3),
            _ => unreachable!("not a block type: {ty}"),
        }
    }
}

/// `n` values of a float type from `fill`.
fn fill_float(ty: GgmlType, fill: Fill, r: &mut SplitMix, out: &mut [u8]) {
    let draw = |r: &mut SplitMix| match fill {
        Fill::Normal { mean, std } => mean + std * r.normal(),
        Fill::Uniform { lo, hi } => lo + (hi - lo) * r.unit(),
        Fill::Hash { .. } => unreachable!(),
    };
    match ty {
        GgmlType::F32 => out.chunks_exact_mut(4).for_each(|c| c.copy_from_slice(&draw(r).to_le_bytes())),
        GgmlType::F16 => out.chunks_exact_mut(2).for_each(|c| put_f16(c, 0, draw(r))),
        GgmlType::Bf16 => out
            .chunks_exact_mut(2)
            .for_each(|c| c.copy_from_slice(&half::bf16::from_f32(draw(r)).to_bits().to_le_bytes())),
        _ => unreachable!("not a float type: {ty}"),
    }
}

/// Chunk `ci` of a tensor (`out` holds exactly that chunk's bytes).
fn fill_chunk(seed: u64, name_hash: u64, ty: GgmlType, fill: Fill, ci: usize, out: &mut [u8]) {
    let mut r = SplitMix(seed ^ name_hash.rotate_left(17) ^ (ci as u64).wrapping_mul(0xd134_2543_de82_ef95));
    r.next();
    match (ty.block_len(), fill) {
        (1, _) => fill_float(ty, fill, &mut r, out),
        (_, Fill::Normal { std, .. }) => fill_quant(ty, std, &mut r, out),
        _ => unreachable!("quantized tensors are always Normal matrices"),
    }
}

/// I32 hash table: for each token, `k` distinct experts (partial Fisher-Yates).
fn hash_table(seed: u64, name_hash: u64, n_expert: usize, k: usize, n_tokens: usize) -> Vec<u8> {
    let mut r = SplitMix(seed ^ name_hash);
    let mut perm: Vec<u32> = (0..n_expert as u32).collect();
    let mut out = Vec::with_capacity(n_tokens * k * 4);
    for _ in 0..n_tokens {
        for i in 0..k {
            let j = i + (r.next() % (n_expert - i) as u64) as usize;
            perm.swap(i, j);
            out.extend_from_slice(&(perm[i] as i32).to_le_bytes());
        }
    }
    out
}

/// Target bytes generated per write (bounded memory for any model size).
const PIECE_BYTES: usize = 32 << 20;

/// Generate and write the model. `progress(done, total)` is called after each piece with
/// bytes of tensor data; return `false` from it to abort (reported as an error).
pub fn write<W: Write>(
    opts: &SynthOptions,
    out: W,
    progress: impl FnMut(u64, u64) -> bool,
) -> Result<W, SynthError> {
    let hp = opts.hparams()?;
    let (h, specs) = plan(opts)?;
    write_tensors(h, &specs, &hp, opts.seed, out, progress)
}

/// Stream the header `h` and random data for `specs` (see the module docs).
fn write_tensors<W: Write>(
    h: GgufHeader,
    specs: &[TensorSpec],
    hp: &Hparams,
    seed: u64,
    out: W,
    mut progress: impl FnMut(u64, u64) -> bool,
) -> Result<W, SynthError> {
    let total: u64 = h.tensors().iter().map(|t| t.n_bytes()).sum();
    let mut w = h.write(out)?;
    let mut done = 0u64;
    let mut buf = Vec::new();
    for s in specs {
        let ty = s.types[0];
        let nh = fnv1a(&s.name);
        let n: usize = s.dims.iter().product::<u64>() as usize;
        let fill = fill_for(s, hp);
        if let Fill::Hash { n_expert, k } = fill {
            let data = hash_table(seed, nh, n_expert, k, n / k);
            w.write_tensor(&data)?;
            done += data.len() as u64;
            continue;
        }
        let chunk_bytes = ty.bytes_for(CHUNK_VALUES as u64).unwrap() as usize;
        let n_chunks = n.div_ceil(CHUNK_VALUES);
        let per_piece = (PIECE_BYTES / chunk_bytes).max(1);
        let mut c0 = 0;
        while c0 < n_chunks {
            let c1 = (c0 + per_piece).min(n_chunks);
            let v0 = c0 * CHUNK_VALUES;
            let v1 = (c1 * CHUNK_VALUES).min(n);
            let bytes = ty.bytes_for((v1 - v0) as u64).unwrap() as usize;
            buf.resize(bytes, 0);
            buf.par_chunks_mut(chunk_bytes)
                .enumerate()
                .for_each(|(k, piece)| fill_chunk(seed, nh, ty, fill, c0 + k, piece));
            w.write_data(&buf)?;
            done += bytes as u64;
            if !progress(done, total) {
                return Err(SynthError::Unsupported("cancelled".into()));
            }
            c0 = c1;
        }
    }
    progress(total, total);
    Ok(w.finish()?)
}

// ------------------------------------------------------------------------------------------
// MTP preset (MODEL.md §4.4)
// ------------------------------------------------------------------------------------------

/// The MTP file variant that goes with a main-model quant: the published MTP file stores its
/// routed experts as Q4_K whatever the main file uses; F16 test models get F16 experts.
pub fn mtp_variant(quant: Quant) -> Variant {
    match quant {
        Quant::Q2 | Quant::Q4 => Variant::Q4,
        Quant::F16 => Variant::F16,
    }
}

/// Header and tensor table of a random MTP GGUF for a model with hyperparameters `hp`
/// (tensor table from [`layout::expected_mtp_tensors`]: F32 plain tensors, Q8_0 projections,
/// experts per `variant`, which must be explicit).
pub fn mtp_plan(hp: &Hparams, variant: Variant, seed: u64) -> Result<(GgufHeader, Vec<TensorSpec>), SynthError> {
    if variant == Variant::Any {
        return Err(SynthError::Unsupported("the MTP file needs explicit expert types".into()));
    }
    let specs = layout::expected_mtp_tensors(hp, variant);
    for s in &specs {
        if s.dims[0] % s.types[0].block_len() as u64 != 0 {
            return Err(SynthError::Unsupported(format!(
                "{}: {} values per row do not fill {} blocks",
                s.name, s.dims[0], s.types[0]
            )));
        }
    }
    let mut h = GgufHeader::new();
    h.set("general.architecture", MetaValue::Str(format!("{ARCH}-mtp")));
    h.set("general.type", MetaValue::Str("model".into()));
    h.set("general.name", MetaValue::Str(format!("DeepSeek V4 Flash MTP random weights (seed {seed})")));
    h.set(format!("{ARCH}.embedding_length"), MetaValue::U32(hp.n_embd as u32));
    h.set(format!("{ARCH}.nextn_predict_layers"), MetaValue::U32(1));
    for s in &specs {
        h.add_tensor(WSpec::new(s.name.clone(), &s.dims, s.types[0]));
    }
    Ok((h, specs))
}

/// Generate and write a random MTP GGUF for `hp` (weights drawn like the main model's).
pub fn write_mtp<W: Write>(
    hp: &Hparams,
    variant: Variant,
    seed: u64,
    out: W,
    progress: impl FnMut(u64, u64) -> bool,
) -> Result<W, SynthError> {
    let (h, specs) = mtp_plan(hp, variant, seed)?;
    write_tensors(h, &specs, hp, seed ^ 0x6d74_7030, out, progress)
}

/// A whole main model in memory for any (test-sized) hyperparameters, e.g. a one-layer model;
/// experts per `variant` (explicit types).
pub fn synth_model_bytes(hp: &Hparams, variant: Variant, seed: u64) -> Result<Vec<u8>, SynthError> {
    if variant == Variant::Any {
        return Err(SynthError::Unsupported("explicit expert types needed".into()));
    }
    let opts = SynthOptions { preset: Preset::Tiny, quant: Quant::F16, seed, layers: None };
    let specs = layout::expected_tensors(hp, variant);
    let mut h = GgufHeader::new();
    for (k, v) in metadata(hp, &opts) {
        h.set(k, v);
    }
    for s in &specs {
        h.add_tensor(WSpec::new(s.name.clone(), &s.dims, s.types[0]));
    }
    write_tensors(h, &specs, hp, seed, Vec::new(), |_, _| true)
}

/// A whole MTP file in memory (test sizes).
pub fn synth_mtp_bytes(hp: &Hparams, variant: Variant, seed: u64) -> Result<Vec<u8>, SynthError> {
    write_mtp(hp, variant, seed, Vec::new(), |_, _| true)
}

/// A GGUF image of `meta` and whole tensors `(name, dims, type, bytes)` (test sizes).
pub fn gguf_image(meta: &[(String, MetaValue)], tensors: &[(String, Vec<u64>, GgmlType, Vec<u8>)]) -> Result<Vec<u8>, SynthError> {
    let mut h = GgufHeader::new();
    for (k, v) in meta {
        h.set(k.clone(), v.clone());
    }
    for (n, d, t, _) in tensors {
        h.add_tensor(WSpec::new(n.clone(), d, *t));
    }
    let mut w = h.write(Vec::new())?;
    for (_, _, _, data) in tensors {
        w.write_tensor(data)?;
    }
    Ok(w.finish()?)
}

/// The "mirror" pair of MTP tests, part 1: a one-layer tiny model (ratio-0 attention, learned
/// router, weights from seed 11) whose token embeddings are ±1 (from `embd_seed`), so every
/// row has RMS exactly 1 and the MTP block's input norms leave it unchanged.
pub fn mirror_model_bytes(embd_seed: u64) -> Result<Vec<u8>, SynthError> {
    let mut hp = hparams(Preset::Tiny);
    hp.n_layer = 1;
    hp.n_hash_layers = 0;
    hp.compress_ratios = vec![0];
    hp.swiglu_clamp = vec![10.0];
    hp.swiglu_clamp_shexp = vec![10.0];
    let g = ds4_gguf::Gguf::from_bytes(synth_model_bytes(&hp, Variant::F16, 11)?).map_err(|e| SynthError::Unsupported(e.to_string()))?;
    let (one, minus_one) = (half::f16::from_f32(1.0).to_bits(), half::f16::from_f32(-1.0).to_bits());
    let mut rng = embd_seed;
    let mut tensors = Vec::new();
    for t in &g.tensors {
        let data = if t.name == "token_embd.weight" {
            (0..hp.n_embd * hp.n_vocab)
                .flat_map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (if rng & 1 == 0 { one } else { minus_one }).to_le_bytes()
                })
                .collect()
        } else {
            g.tensor_data(t).to_vec()
        };
        tensors.push((t.name.clone(), t.dims.clone(), t.ty, data));
    }
    gguf_image(&g.metadata, &tensors)
}

/// Part 2: an MTP file for a [`mirror_model_bytes`] model whose block, HC head and final norm
/// are the model's layer 0, output HC and output norm, with `e_proj` the identity and `h_proj`
/// zero (`e_identity`), or the reverse. With `e_identity` and ds4's pairing each MTP row
/// recomputes the model's own layer row, so its drafts are the model's greedy choices (up to
/// float noise): real multi-token acceptance.
pub fn mirror_mtp_bytes(model: &ds4_gguf::Gguf, e_identity: bool) -> Result<Vec<u8>, SynthError> {
    let missing = |n: &str| SynthError::Unsupported(format!("not a mirror model: no {n}"));
    let d = model.tensor("token_embd.weight").ok_or_else(|| missing("token_embd.weight"))?.dims[0] as usize;
    let mut ts = Vec::new();
    for t in &model.tensors {
        if let Some(rest) = t.name.strip_prefix("blk.0.") {
            ts.push((format!("mtp.0.{rest}"), t.dims.clone(), t.ty, model.tensor_data(t).to_vec()));
        }
    }
    for (to, from) in [("hc_head_fn", "output_hc_fn"), ("hc_head_base", "output_hc_base"), ("hc_head_scale", "output_hc_scale"), ("norm", "output_norm")] {
        let name = format!("{from}.weight");
        let t = model.tensor(&name).ok_or_else(|| missing(&name))?;
        ts.push((format!("mtp.0.{to}.weight"), t.dims.clone(), t.ty, model.tensor_data(t).to_vec()));
    }
    // Q8_0 d × d: identity (scale 1, q = 1 on the diagonal: exact) or zero.
    let q8_square = |identity: bool| {
        let blocks = d / 32;
        let mut out = vec![0u8; d * blocks * 34];
        if identity {
            for r in 0..d {
                let b = (r * blocks + r / 32) * 34;
                out[b..b + 2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
                out[b + 2 + r % 32] = 1;
            }
        }
        out
    };
    let dd = vec![d as u64, d as u64];
    ts.push(("mtp.0.e_proj.weight".into(), dd.clone(), GgmlType::Q8_0, q8_square(e_identity)));
    ts.push(("mtp.0.h_proj.weight".into(), dd, GgmlType::Q8_0, q8_square(!e_identity)));
    for n in ["enorm", "hnorm"] {
        ts.push((format!("mtp.0.{n}.weight"), vec![d as u64], GgmlType::F32, 1f32.to_le_bytes().repeat(d)));
    }
    gguf_image(&[], &ts)
}

/// A whole model in memory (tiny presets: tests and the CLI's demo model).
pub fn synth_bytes(opts: &SynthOptions) -> Result<Vec<u8>, SynthError> {
    write(opts, Vec::new(), |_, _| true)
}

/// The built-in demo model: tiny preset, published q2 expert types.
pub fn synth_tiny(seed: u64) -> Vec<u8> {
    synth_bytes(&SynthOptions { preset: Preset::Tiny, quant: Quant::Q2, seed, layers: None })
        .expect("the tiny preset always fits its own layout")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Model;
    use ds4_gguf::quant::{dequantize, matvec};
    use ds4_gguf::Gguf;

    fn opts(preset: Preset, quant: Quant) -> SynthOptions {
        SynthOptions { preset, quant, seed: 7, layers: None }
    }

    #[test]
    fn full_q2_dry_run_matches_published_table() {
        let (h, specs) = plan(&opts(Preset::Full, Quant::Q2)).unwrap();
        let layout = h.layout().unwrap();
        let gib = layout.total_bytes as f64 / (1u64 << 30) as f64;
        assert!((gib - 80.76).abs() / 80.76 < 1e-3, "q2 file {gib:.3} GiB, published 80.76");
        // Spot checks against MODEL.md §4.2/§4.3, written out independently of the layout code.
        let t = |n: &str| h.tensors().iter().find(|t| t.name == n).unwrap_or_else(|| panic!("{n} missing")).clone();
        let check = |n: &str, dims: &[u64], ty: GgmlType| {
            let s = t(n);
            assert_eq!((s.dims.as_slice(), s.ty), (dims, ty), "{n}");
        };
        use GgmlType::*;
        check("token_embd.weight", &[4096, 129280], F16);
        check("output.weight", &[4096, 129280], Q8_0);
        check("output_hc_fn.weight", &[16384, 4], F16);
        check("blk.0.ffn_gate_tid2eid.weight", &[6, 129280], I32);
        check("blk.0.ffn_gate_exps.weight", &[4096, 2048, 256], Iq2Xxs);
        check("blk.42.ffn_up_exps.weight", &[4096, 2048, 256], Iq2Xxs);
        check("blk.42.ffn_down_exps.weight", &[2048, 4096, 256], Q2K);
        check("blk.2.attn_compressor_ape.weight", &[1024, 4], F16);
        check("blk.3.attn_compressor_ape.weight", &[512, 128], F16);
        check("blk.3.attn_compressor_kv.weight", &[4096, 512], F16);
        check("blk.4.indexer.attn_q_b.weight", &[1024, 8192], F16);
        check("blk.7.attn_q_b.weight", &[1024, 32768], Q8_0);
        check("blk.7.attn_output_a.weight", &[4096, 8192], Q8_0);
        check("blk.10.exp_probs_b.bias", &[256], F32);
        assert!(h.tensors().iter().all(|t| !t.name.starts_with("blk.43.")));
        assert!(h.tensors().iter().all(|t| t.name != "blk.3.indexer.proj.weight"));
        assert_eq!(specs.len(), h.tensors().len());
        // q4 too: 153.32 GiB.
        let (h4, _) = plan(&opts(Preset::Full, Quant::Q4)).unwrap();
        let gib4 = h4.layout().unwrap().total_bytes as f64 / (1u64 << 30) as f64;
        assert!((gib4 - 153.32).abs() / 153.32 < 1e-3, "q4 file {gib4:.3} GiB");
        assert!(plan(&opts(Preset::Full, Quant::F16)).is_err());
    }

    /// A header + table written for real, the data a sparse hole (no 80 GiB written), at a
    /// temporary path named by `tag`; the caller removes it. Also used by cuda::session's tests.
    pub(crate) fn write_sparse(h: &GgufHeader, tag: &str) -> std::path::PathBuf {
        let layout = h.layout().unwrap();
        let path = std::env::temp_dir().join(format!("ds4-synth-{tag}-{}.gguf", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        (&f).write_all(&h.table_bytes().unwrap()).unwrap();
        f.set_len(layout.total_bytes).unwrap();
        path
    }

    /// Load a sparse file (`write_sparse`).
    fn load_sparse(h: &GgufHeader, tag: &str) -> Result<std::sync::Arc<Model>, crate::model::ModelError> {
        let path = write_sparse(h, tag);
        let m = Model::load(&path);
        std::fs::remove_file(&path).unwrap();
        m
    }

    /// The full presets' metadata pass the published-model validation and their tables bind
    /// (`load_sparse`).
    #[test]
    fn full_presets_bind_as_published_model() {
        for q in [Quant::Q2, Quant::Q4] {
            let (h, _) = plan(&opts(Preset::Full, q)).unwrap();
            let m = load_sparse(&h, &format!("full-{q:?}")).unwrap_or_else(|e| panic!("{q:?}: {e}"));
            assert!(m.hp.is_full_model());
            assert_eq!(m.hp, Hparams::published());
            assert_eq!(m.expert_bits(), if q == Quant::Q2 { 2 } else { 4 });
        }
    }

    /// `layers: Some(n)`: the full table with the blocks from n on left out (every other
    /// tensor, name, shape and type the same), and it binds with n layers.
    #[test]
    fn full_preset_first_layers() {
        let (full, _) = plan(&opts(Preset::Full, Quant::Q2)).unwrap();
        let o = SynthOptions { layers: Some(28), ..opts(Preset::Full, Quant::Q2) };
        let (h, _) = plan(&o).unwrap();
        let keep = |name: &str| match name.strip_prefix("blk.").and_then(|r| r.split('.').next()) {
            Some(i) => i.parse::<usize>().unwrap() < 28,
            None => true,
        };
        let want: Vec<_> = full.tensors().iter().filter(|t| keep(&t.name)).map(|t| (t.name.clone(), t.dims.clone(), t.ty)).collect();
        let got: Vec<_> = h.tensors().iter().map(|t| (t.name.clone(), t.dims.clone(), t.ty)).collect();
        assert_eq!(got, want);
        let m = load_sparse(&h, "l28").unwrap();
        assert_eq!(m.hp.n_layer, 28);
        assert_eq!(m.hp.compress_ratios, Hparams::published().compress_ratios[..28]);
        for bad in [0, 44] {
            assert!(plan(&SynthOptions { layers: Some(bad), ..o }).is_err());
        }
    }

    #[test]
    fn tiny_models_bind_and_are_deterministic() {
        for q in [Quant::Q2, Quant::Q4, Quant::F16] {
            let o = opts(Preset::Tiny, q);
            let bytes = synth_bytes(&o).unwrap();
            let (h, _) = plan(&o).unwrap();
            assert_eq!(bytes.len() as u64, h.layout().unwrap().total_bytes);
            let g = Gguf::from_bytes(bytes.clone()).unwrap();
            let m = Model::from_gguf(g).unwrap_or_else(|e| panic!("{q:?}: {e}"));
            assert_eq!(m.hp, hparams(Preset::Tiny));
            // Same seed, same bytes (whatever the thread count); another seed differs.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            assert!(pool.install(|| synth_bytes(&o).unwrap()) == bytes);
            assert!(synth_bytes(&SynthOptions { seed: 8, ..o }).unwrap() != bytes);
        }
    }

    #[test]
    fn vocab_is_consistent_bpe() {
        for n in [512, 5000] {
            let v = vocab(n);
            assert_eq!(v.tokens.len(), n);
            assert_eq!(v.types.len(), n);
            assert_eq!(v.merges.len(), n - 259 - 5);
            let set: HashSet<&str> = v.tokens.iter().map(|s| s.as_str()).collect();
            assert_eq!(set.len(), n, "tokens unique");
            // Every merge joins two earlier tokens into the token at its rank.
            for (i, m) in v.merges.iter().enumerate() {
                let (a, b) = m.split_once(' ').unwrap();
                let id = 259 + i;
                assert_eq!(v.tokens[id], format!("{a}{b}"));
                let pos = |s: &str| v.tokens.iter().position(|t| t == s).unwrap();
                assert!(pos(a) < id && pos(b) < id, "merge {m}");
            }
            for (i, (t, ty)) in CHAT_SPECIALS.iter().enumerate() {
                assert_eq!(v.tokens[n - 5 + i], *t);
                assert_eq!(v.types[n - 5 + i], *ty);
            }
        }
        let v = vocab(512);
        assert!(v.merges.iter().any(|m| m == "Ġ t"), "learned merges from the corpus");
        assert!(v.tokens.contains(&"Ġthe".to_string()));
    }

    /// Weight statistics hit their targets, and a unit-variance input through each matrix gives
    /// an output of std ≈ gain (no layer saturates or vanishes).
    #[test]
    fn weights_are_well_conditioned() {
        for q in [Quant::Q2, Quant::Q4] {
            let o = opts(Preset::Tiny, q);
            let hp = hparams(Preset::Tiny);
            let g = Gguf::from_bytes(synth_bytes(&o).unwrap()).unwrap();
            let (_, specs) = plan(&o).unwrap();
            let mut rng = SplitMix(3);
            for s in &specs {
                let t = g.tensor(&s.name).unwrap();
                if t.ty == GgmlType::I32 {
                    let ids: Vec<i32> = g.tensor_data(t).chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
                    assert!(ids.iter().all(|&e| (0..hp.n_expert as i32).contains(&e)));
                    for row in ids.chunks_exact(hp.n_expert_used) {
                        assert!(row[0] != row[1], "distinct experts per token");
                    }
                    continue;
                }
                let n = t.n_elements() as usize;
                let mut v = vec![0f32; n];
                dequantize(t.ty, g.tensor_data(t), &mut v).unwrap();
                assert!(v.iter().all(|x| x.is_finite()), "{}", s.name);
                let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
                let std = (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
                match fill_for(s, &hp) {
                    Fill::Normal { mean: m, std: sd } if n >= 4096 => {
                        assert!((std / sd as f64 - 1.0).abs() < 0.1, "{}: std {std} want {sd}", s.name);
                        assert!((mean - m as f64).abs() < 0.15 * sd as f64, "{}: mean {mean} want {m}", s.name);
                    }
                    _ => {}
                }
                if s.kind == TensorKind::Matrix && n / (t.dims[0] as usize) >= 64 {
                    let cols = t.dims[0] as usize;
                    let rows = n / cols;
                    let x: Vec<f32> = (0..cols).map(|_| rng.normal()).collect();
                    let mut y = vec![0f32; rows];
                    matvec(t.ty, g.tensor_data(t), rows, cols, &x, &mut y);
                    let ystd = (y.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / rows as f64).sqrt();
                    let Fill::Normal { std: sd, .. } = fill_for(s, &hp) else { unreachable!() };
                    let gain = sd as f64 * (cols as f64).sqrt();
                    assert!(
                        (ystd / gain - 1.0).abs() < 0.3,
                        "{}: unit input gives output rms {ystd:.3}, want ≈ {gain:.2}",
                        s.name
                    );
                }
            }
        }
    }

    /// The tiny models run through the CPU forward pass with finite, well-spread logits and
    /// hyper-connection streams that neither blow up nor vanish across layers.
    #[test]
    fn tiny_forward_is_well_conditioned() {
        use crate::cpu::{CpuBackend, Trace};
        use crate::Options;
        use std::sync::Arc;
        for q in [Quant::Q2, Quant::Q4, Quant::F16] {
            let model = Arc::new(Model::from_gguf(Gguf::from_bytes(synth_bytes(&opts(Preset::Tiny, q)).unwrap()).unwrap()).unwrap());
            let hp = model.hp.clone();
            let toks: Vec<u32> = (0..40u32).map(|i| (i * 37 + 11) % hp.n_vocab as u32).collect();
            let mut be = CpuBackend::new(model, Options::default());
            be.trace = Some(Trace { record_hc_state: true, ..Default::default() });
            let logits = be.forward_tokens(&toks, true).unwrap();
            assert!(logits.iter().all(|v| v.is_finite()), "{q:?}: non-finite logits");
            let v = hp.n_vocab;
            let mut argmaxes = HashSet::new();
            let (mut lo, mut hi) = (f64::MAX, 0f64);
            for row in logits.chunks_exact(v) {
                let mean = row.iter().map(|&x| x as f64).sum::<f64>() / v as f64;
                let std = (row.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v as f64).sqrt();
                assert!((0.5..20.0).contains(&std), "{q:?}: logit std {std}");
                (lo, hi) = (lo.min(std), hi.max(std));
                argmaxes.insert(row.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0);
            }
            assert!(argmaxes.len() >= 5, "{q:?}: only {} distinct argmax tokens", argmaxes.len());
            let tr = be.trace.take().unwrap();
            let d = hp.n_hc * hp.n_embd;
            let (mut rlo, mut rhi) = (f64::MAX, 0f64);
            for (l, lt) in tr.layers.iter().enumerate() {
                for (p, st) in lt.hc_state.chunks_exact(d).enumerate() {
                    let rms = (st.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / d as f64).sqrt();
                    assert!((0.1..100.0).contains(&rms), "{q:?}: layer {l} position {p}: stream rms {rms}");
                    (rlo, rhi) = (rlo.min(rms), rhi.max(rms));
                }
            }
            eprintln!("{q:?}: logit std {lo:.2}..{hi:.2}, {} distinct argmax, HC stream rms {rlo:.2}..{rhi:.2}", argmaxes.len());
        }
    }
}
