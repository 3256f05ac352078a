//! The tensor table of a DeepSeek V4 GGUF (MODEL.md §4.2-§4.4): the ONE place that owns
//! tensor names, shapes and types. Used by model binding (which reports every mismatch at
//! once) and by the random-model generator (which asks for the exact published types of a
//! variant).
//!
//! Type policy: every non-expert tensor has exactly the type ds4 uses. Routed experts accept
//! IQ2_XXS / Q2_K / Q4_K per layer (gate and up must share a type; down may differ, as in the
//! "mixed" variant). Test-sized models (not claiming the full 4096 width, see
//! [`Hparams::is_full_model`]) may also store experts as F16 or F32, the reference-precision
//! variants the fixtures use.

use crate::hparams::Hparams;
use ds4_gguf::{GgmlType, TensorInfo};
use std::fmt;

/// What a tensor is, so a generator knows how to fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    /// Matrix (or stack of expert matrices) used as `y = W·x`; dims `[in, out(, n)]`.
    Matrix,
    /// Token embedding table `[n_embd, n_vocab]`.
    Embedding,
    /// RMSNorm weight (published values near 1).
    Norm,
    /// Other float vectors: HC base/scale, attention sinks, router bias.
    Vector,
    /// Compressor position bias `[width, ratio]`.
    PositionBias,
    /// I32 token-id → expert table `[n_expert_used, n_vocab]`, values in `0..n_expert`.
    HashTable,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// GGUF order (`dims[0]` contiguous).
    pub dims: Vec<u64>,
    /// Accepted types; `types[0]` is the type to write for the requested [`Variant`].
    pub types: Vec<GgmlType>,
    /// false: may be absent (ds4 treats the router bias as optional).
    pub required: bool,
    pub kind: TensorKind,
    /// Layer index (None for global tensors; the MTP block uses `n_layer`).
    pub layer: Option<usize>,
}

/// Which routed-expert types to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Loader: accept every routed type allowed for this model (`types[0]` = IQ2_XXS / Q2_K).
    Any,
    /// Published q2 file: gate/up IQ2_XXS, down Q2_K.
    Q2,
    /// Published q4 file: all Q4_K.
    Q4,
    /// Test models: experts stored F16 (reference precision).
    F16,
    /// Test models: experts stored F32.
    F32,
    /// Any explicit pair (gate/up, down).
    Experts { gate_up: GgmlType, down: GgmlType },
}

impl Variant {
    pub fn expert_types(self) -> Option<(GgmlType, GgmlType)> {
        use GgmlType::*;
        match self {
            Variant::Any => None,
            Variant::Q2 => Some((Iq2Xxs, Q2K)),
            Variant::Q4 => Some((Q4K, Q4K)),
            Variant::F16 => Some((F16, F16)),
            Variant::F32 => Some((F32, F32)),
            Variant::Experts { gate_up, down } => Some((gate_up, down)),
        }
    }
}

/// Routed-expert types the loader accepts for this model.
pub fn routed_types(hp: &Hparams, down: bool) -> Vec<GgmlType> {
    use GgmlType::*;
    let mut v = if down { vec![Q2K, Iq2Xxs, Q4K] } else { vec![Iq2Xxs, Q2K, Q4K] };
    if !hp.is_full_model() {
        v.extend([F16, F32]);
    }
    v
}

struct B<'a> {
    hp: &'a Hparams,
    out: Vec<TensorSpec>,
    layer: Option<usize>,
}

impl B<'_> {
    fn add(&mut self, name: String, dims: &[usize], types: Vec<GgmlType>, required: bool, kind: TensorKind) {
        self.out.push(TensorSpec {
            name,
            dims: dims.iter().map(|&d| d as u64).collect(),
            types,
            required,
            kind,
            layer: self.layer,
        });
    }
    fn t(&mut self, name: String, dims: &[usize], ty: GgmlType, kind: TensorKind) {
        self.add(name, dims, vec![ty], true, kind);
    }
    /// The block tensors shared by decoder layers and the MTP block (MODEL.md §4.3/§4.4).
    fn block(&mut self, p: &str, plain: &[GgmlType], variant: Variant, mtp: bool) {
        use GgmlType::*;
        use TensorKind::*;
        let hp = self.hp;
        let d = hp.n_embd;
        let hc = hp.n_hc * d;
        let mix = hp.hc_mix();
        for sub in ["attn", "ffn"] {
            self.add(format!("{p}hc_{sub}_fn.weight"), &[hc, mix], plain.to_vec(), true, Matrix);
            self.t(format!("{p}hc_{sub}_scale.weight"), &[3], F32, Vector);
            self.t(format!("{p}hc_{sub}_base.weight"), &[mix], F32, Vector);
        }
        self.t(format!("{p}attn_norm.weight"), &[d], F32, Norm);
        self.t(format!("{p}attn_q_a.weight"), &[d, hp.q_lora_rank], Q8_0, Matrix);
        self.t(format!("{p}attn_q_a_norm.weight"), &[hp.q_lora_rank], F32, Norm);
        self.t(format!("{p}attn_q_b.weight"), &[hp.q_lora_rank, hp.n_head * hp.head_dim], Q8_0, Matrix);
        self.t(format!("{p}attn_kv.weight"), &[d, hp.head_dim], Q8_0, Matrix);
        self.t(format!("{p}attn_kv_a_norm.weight"), &[hp.head_dim], F32, Norm);
        self.t(format!("{p}attn_sinks.weight"), &[hp.n_head], F32, Vector);
        self.t(
            format!("{p}attn_output_a.weight"),
            &[hp.head_dim * hp.heads_per_group(), hp.o_groups * hp.o_lora_rank],
            Q8_0,
            Matrix,
        );
        self.t(format!("{p}attn_output_b.weight"), &[hp.o_groups * hp.o_lora_rank, d], Q8_0, Matrix);
        if !mtp {
            let l = self.layer.unwrap();
            let r = hp.ratio(l);
            if r != 0 {
                let coff = if r == 4 { 2 } else { 1 };
                let w = coff * hp.head_dim;
                self.t(format!("{p}attn_compressor_ape.weight"), &[w, r], F16, PositionBias);
                self.t(format!("{p}attn_compressor_kv.weight"), &[d, w], F16, Matrix);
                self.t(format!("{p}attn_compressor_gate.weight"), &[d, w], F16, Matrix);
                self.t(format!("{p}attn_compressor_norm.weight"), &[hp.head_dim], F32, Norm);
            }
            if r == 4 {
                let iw = 2 * hp.idx_head_dim;
                self.t(format!("{p}indexer.attn_q_b.weight"), &[hp.q_lora_rank, hp.idx_heads * hp.idx_head_dim], F16, Matrix);
                self.t(format!("{p}indexer.proj.weight"), &[d, hp.idx_heads], F16, Matrix);
                self.t(format!("{p}indexer_compressor_ape.weight"), &[iw, 4], F16, PositionBias);
                self.t(format!("{p}indexer_compressor_kv.weight"), &[d, iw], F16, Matrix);
                self.t(format!("{p}indexer_compressor_gate.weight"), &[d, iw], F16, Matrix);
                self.t(format!("{p}indexer_compressor_norm.weight"), &[hp.idx_head_dim], F32, Norm);
            }
        }
        self.t(format!("{p}ffn_norm.weight"), &[d], F32, Norm);
        self.add(format!("{p}ffn_gate_inp.weight"), &[d, hp.n_expert], plain.to_vec(), true, Matrix);
        let hash = !mtp && hp.is_hash_layer(self.layer.unwrap());
        if hash {
            self.t(format!("{p}ffn_gate_tid2eid.weight"), &[hp.n_expert_used, hp.n_vocab], I32, HashTable);
        } else {
            // ds4 binds the router bias optionally for decoder layers; the MTP block needs it.
            self.add(format!("{p}exp_probs_b.bias"), &[hp.n_expert], vec![F32], mtp, Vector);
        }
        let (gu, dn) = match variant.expert_types() {
            Some((a, b)) => (vec![a], vec![b]),
            None => (routed_types(hp, false), routed_types(hp, true)),
        };
        let (ff, e) = (hp.expert_ff, hp.n_expert);
        self.add(format!("{p}ffn_gate_exps.weight"), &[d, ff, e], gu.clone(), true, Matrix);
        self.add(format!("{p}ffn_up_exps.weight"), &[d, ff, e], gu, true, Matrix);
        self.add(format!("{p}ffn_down_exps.weight"), &[ff, d, e], dn, true, Matrix);
        self.t(format!("{p}ffn_gate_shexp.weight"), &[d, ff], Q8_0, Matrix);
        self.t(format!("{p}ffn_up_shexp.weight"), &[d, ff], Q8_0, Matrix);
        self.t(format!("{p}ffn_down_shexp.weight"), &[ff, d], Q8_0, Matrix);
    }
}

/// Every tensor of the main GGUF, in ds4's file order (globals first, then layer by layer).
pub fn expected_tensors(hp: &Hparams, variant: Variant) -> Vec<TensorSpec> {
    use GgmlType::*;
    use TensorKind::*;
    let d = hp.n_embd;
    let mut b = B { hp, out: Vec::new(), layer: None };
    b.t("token_embd.weight".into(), &[d, hp.n_vocab], F16, Embedding);
    b.t("output_hc_base.weight".into(), &[hp.n_hc], F32, Vector);
    b.t("output_hc_fn.weight".into(), &[hp.n_hc * d, hp.n_hc], F16, Matrix);
    b.t("output_hc_scale.weight".into(), &[1], F32, Vector);
    b.t("output_norm.weight".into(), &[d], F32, Norm);
    b.t("output.weight".into(), &[d, hp.n_vocab], Q8_0, Matrix);
    for l in 0..hp.n_layer {
        b.layer = Some(l);
        b.block(&format!("blk.{l}."), &[F16], variant, false);
    }
    b.out
}

/// Tensors of the optional MTP GGUF (MODEL.md §4.4), all prefixed `mtp.0.`. The published file
/// stores the "plain" tensors (HC mixers, router) as F32; F16 is accepted too.
pub fn expected_mtp_tensors(hp: &Hparams, variant: Variant) -> Vec<TensorSpec> {
    use GgmlType::*;
    use TensorKind::*;
    let d = hp.n_embd;
    let mut b = B { hp, out: Vec::new(), layer: Some(hp.n_layer) };
    let p = "mtp.0.";
    b.add(format!("{p}hc_head_fn.weight"), &[hp.n_hc * d, hp.n_hc], vec![F32, F16], true, Matrix);
    b.t(format!("{p}hc_head_base.weight"), &[hp.n_hc], F32, Vector);
    b.t(format!("{p}hc_head_scale.weight"), &[1], F32, Vector);
    b.t(format!("{p}e_proj.weight"), &[d, d], Q8_0, Matrix);
    b.t(format!("{p}h_proj.weight"), &[d, d], Q8_0, Matrix);
    for n in ["enorm", "hnorm", "norm"] {
        b.t(format!("{p}{n}.weight"), &[d], F32, Norm);
    }
    b.block(p, &[F32, F16], variant, true);
    b.out
}

/// One disagreement between the file and the expected table.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub tensor: String,
    pub expected: String,
    pub found: String,
}

/// Every mismatch found while binding (never just the first).
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutError {
    pub mismatches: Vec<Mismatch>,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "GGUF tensor layout does not match the model ({} problem(s)):", self.mismatches.len())?;
        for m in &self.mismatches {
            writeln!(f, "  {}: expected {}, found {}", m.tensor, m.expected, m.found)?;
        }
        Ok(())
    }
}

impl std::error::Error for LayoutError {}

fn dims_str(d: &[u64]) -> String {
    format!("{d:?}")
}

fn types_str(t: &[GgmlType]) -> String {
    t.iter().map(|t| t.name()).collect::<Vec<_>>().join("|")
}

/// Check a tensor table against the specs; collects all problems. `find` looks a tensor up by
/// name (normally `|n| gguf.tensor(n)`). Tensors the file has beyond the table are ignored.
pub fn check<'a>(specs: &[TensorSpec], find: impl Fn(&str) -> Option<&'a TensorInfo>) -> Result<(), LayoutError> {
    let mut mm = Vec::new();
    for s in specs {
        let Some(t) = find(&s.name) else {
            if s.required {
                mm.push(Mismatch {
                    tensor: s.name.clone(),
                    expected: format!("{} {}", types_str(&s.types), dims_str(&s.dims)),
                    found: "missing".into(),
                });
            }
            continue;
        };
        if t.dims != s.dims || !s.types.contains(&t.ty) {
            mm.push(Mismatch {
                tensor: s.name.clone(),
                expected: format!("{} {}", types_str(&s.types), dims_str(&s.dims)),
                found: format!("{} {}", t.ty.name(), dims_str(&t.dims)),
            });
        }
    }
    // gate and up of one block feed the same fused kernels: their types must agree.
    for s in specs.iter().filter(|s| s.name.ends_with("ffn_gate_exps.weight")) {
        let up_name = s.name.replace("ffn_gate_exps", "ffn_up_exps");
        if let (Some(g), Some(u)) = (find(&s.name), find(&up_name)) {
            if g.ty != u.ty && s.types.contains(&g.ty) {
                mm.push(Mismatch {
                    tensor: up_name,
                    expected: format!("{} (same type as {})", g.ty.name(), s.name),
                    found: u.ty.name().to_string(),
                });
            }
        }
    }
    if mm.is_empty() {
        Ok(())
    } else {
        Err(LayoutError { mismatches: mm })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_q2_size() {
        // MODEL.md §4.3 sanity check: with the exact published types the q2 file holds
        // 80.76 GiB and the q4 file 153.32 GiB of tensor data (metadata is negligible).
        let hp = Hparams::published();
        for (v, want) in [(Variant::Q2, 80.76), (Variant::Q4, 153.32)] {
            let bytes: u64 = expected_tensors(&hp, v)
                .iter()
                .map(|s| s.types[0].bytes_for(s.dims.iter().product()).unwrap())
                .sum();
            let gib = bytes as f64 / (1u64 << 30) as f64;
            assert!((gib - want).abs() < 0.01, "{v:?}: {gib:.3} GiB, want {want}");
        }
    }
}
