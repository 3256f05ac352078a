//! A loaded model: hyperparameters plus every tensor bound by name (layout checked against
//! [`crate::layout`]). Matrices stay in the (memory-mapped) GGUF and are used through the
//! quantized kernels; only small vectors (norms, biases, position biases, hash tables) are
//! decoded to f32/u32 at load.

use crate::hparams::{Hparams, HparamsError};
use crate::layout::{self, LayoutError, Mismatch, Variant};
use ds4_gguf::{GgmlType, Gguf, GgufError, TensorInfo};
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("{0}")]
    Hparams(#[from] HparamsError),
    #[error("{0}")]
    Layout(#[from] LayoutError),
}

/// A matrix (or a stack of `count` expert matrices) inside the GGUF data: `rows` outputs of
/// `cols` inputs each, GGUF dims `[cols, rows(, count)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mat {
    pub ty: GgmlType,
    pub cols: usize,
    pub rows: usize,
    pub count: usize,
    /// Absolute byte offset in the file image.
    pub offset: usize,
    pub row_bytes: usize,
}

impl Mat {
    fn from_info(t: &TensorInfo) -> Mat {
        let cols = t.dims[0] as usize;
        let rows = t.dims.get(1).copied().unwrap_or(1) as usize;
        let count = t.dims.get(2).copied().unwrap_or(1) as usize;
        Mat { ty: t.ty, cols, rows, count, offset: t.offset as usize, row_bytes: t.ty.row_bytes(cols) }
    }
    /// Bytes of matrix `e` (0 for plain matrices).
    pub fn bytes<'a>(&self, data: &'a [u8], e: usize) -> &'a [u8] {
        let n = self.rows * self.row_bytes;
        let start = self.offset + e * n;
        &data[start..start + n]
    }
    /// Bytes of rows `[r0, r1)` of matrix `e`.
    pub fn rows_bytes<'a>(&self, data: &'a [u8], e: usize, r0: usize, r1: usize) -> &'a [u8] {
        let start = self.offset + e * self.rows * self.row_bytes + r0 * self.row_bytes;
        &data[start..start + (r1 - r0) * self.row_bytes]
    }
}

/// Hyper-connection mixer of one sublayer (or of the output head, which uses only `pre`).
#[derive(Clone, Debug)]
pub struct HcWeights {
    /// `[n_hc·n_embd → mix]`.
    pub fn_: Mat,
    pub scale: Vec<f32>,
    pub base: Vec<f32>,
}

/// One compressor (attention: width per lane = head_dim; indexer: idx_head_dim).
#[derive(Clone, Debug)]
pub struct CompressorWeights {
    /// Row `j` (position inside the window) holds `width` biases: `ape[j·width + i]`.
    pub ape: Vec<f32>,
    /// `coff·d` values per token (`coff` = 2 for ratio 4, 1 for ratio 128).
    pub width: usize,
    pub kv: Mat,
    pub gate: Mat,
    pub norm: Vec<f32>,
}

#[derive(Clone, Debug)]
pub struct IndexerWeights {
    /// `[q_lora_rank → idx_heads·idx_head_dim]`.
    pub q_b: Mat,
    /// `[n_embd → idx_heads]`.
    pub proj: Mat,
    pub comp: CompressorWeights,
}

#[derive(Clone, Debug)]
pub struct LayerWeights {
    pub index: usize,
    pub ratio: usize,
    pub hc_attn: HcWeights,
    pub hc_ffn: HcWeights,
    pub attn_norm: Vec<f32>,
    pub q_a: Mat,
    pub q_a_norm: Vec<f32>,
    pub q_b: Mat,
    pub kv: Mat,
    pub kv_norm: Vec<f32>,
    pub sinks: Vec<f32>,
    pub out_a: Mat,
    pub out_b: Mat,
    pub comp: Option<CompressorWeights>,
    pub indexer: Option<IndexerWeights>,
    pub ffn_norm: Vec<f32>,
    pub gate_inp: Mat,
    /// Router selection bias (non-hash layers; absent = 0).
    pub exp_probs_b: Option<Vec<f32>>,
    /// Hash layers: `n_expert_used` expert ids per token id (`tid2eid[tok·k + i]`).
    pub tid2eid: Option<Vec<u32>>,
    pub gate_exps: Mat,
    pub up_exps: Mat,
    pub down_exps: Mat,
    pub gate_sh: Mat,
    pub up_sh: Mat,
    pub down_sh: Mat,
    pub clamp: f32,
    pub clamp_sh: f32,
}

pub struct Model {
    pub hp: Hparams,
    gguf: Gguf,
    pub token_embd: Mat,
    pub output_hc: HcWeights,
    pub output_norm: Vec<f32>,
    pub output: Mat,
    pub layers: Vec<LayerWeights>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("hp", &self.hp).finish_non_exhaustive()
    }
}

/// Small float vector (F32/F16) decoded to f32.
fn vec_f32(g: &Gguf, t: &TensorInfo) -> Vec<f32> {
    let b = g.tensor_data(t);
    match t.ty {
        GgmlType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
        GgmlType::F16 => b
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes(c.try_into().unwrap()).to_f32())
            .collect(),
        // layout::check admits only F32/F16 for the tensors read through here.
        other => unreachable!("vector tensor {} of type {other}", t.name),
    }
}

struct Binder<'a> {
    g: &'a Gguf,
}

impl Binder<'_> {
    // Layout was checked before binding, so required tensors exist.
    fn info(&self, name: &str) -> &TensorInfo {
        self.g.tensor(name).unwrap_or_else(|| unreachable!("{name} checked by layout"))
    }
    fn mat(&self, name: &str) -> Mat {
        Mat::from_info(self.info(name))
    }
    fn vec(&self, name: &str) -> Vec<f32> {
        vec_f32(self.g, self.info(name))
    }
    fn opt_vec(&self, name: &str) -> Option<Vec<f32>> {
        self.g.tensor(name).map(|t| vec_f32(self.g, t))
    }
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        p: &str,
        index: usize,
        ratio: usize,
        tid2eid: Option<Vec<u32>>,
        exp_probs_b: Option<Vec<f32>>,
        clamp: f32,
        clamp_sh: f32,
    ) -> LayerWeights {
        LayerWeights {
            index,
            ratio,
            hc_attn: self.hc(p, "attn"),
            hc_ffn: self.hc(p, "ffn"),
            attn_norm: self.vec(&format!("{p}attn_norm.weight")),
            q_a: self.mat(&format!("{p}attn_q_a.weight")),
            q_a_norm: self.vec(&format!("{p}attn_q_a_norm.weight")),
            q_b: self.mat(&format!("{p}attn_q_b.weight")),
            kv: self.mat(&format!("{p}attn_kv.weight")),
            kv_norm: self.vec(&format!("{p}attn_kv_a_norm.weight")),
            sinks: self.vec(&format!("{p}attn_sinks.weight")),
            out_a: self.mat(&format!("{p}attn_output_a.weight")),
            out_b: self.mat(&format!("{p}attn_output_b.weight")),
            comp: (ratio != 0).then(|| self.comp(p, "attn")),
            indexer: (ratio == 4).then(|| IndexerWeights {
                q_b: self.mat(&format!("{p}indexer.attn_q_b.weight")),
                proj: self.mat(&format!("{p}indexer.proj.weight")),
                comp: self.comp(p, "indexer"),
            }),
            ffn_norm: self.vec(&format!("{p}ffn_norm.weight")),
            gate_inp: self.mat(&format!("{p}ffn_gate_inp.weight")),
            exp_probs_b,
            tid2eid,
            gate_exps: self.mat(&format!("{p}ffn_gate_exps.weight")),
            up_exps: self.mat(&format!("{p}ffn_up_exps.weight")),
            down_exps: self.mat(&format!("{p}ffn_down_exps.weight")),
            gate_sh: self.mat(&format!("{p}ffn_gate_shexp.weight")),
            up_sh: self.mat(&format!("{p}ffn_up_shexp.weight")),
            down_sh: self.mat(&format!("{p}ffn_down_shexp.weight")),
            clamp,
            clamp_sh,
        }
    }
    fn hc(&self, p: &str, sub: &str) -> HcWeights {
        HcWeights {
            fn_: self.mat(&format!("{p}hc_{sub}_fn.weight")),
            scale: self.vec(&format!("{p}hc_{sub}_scale.weight")),
            base: self.vec(&format!("{p}hc_{sub}_base.weight")),
        }
    }
    fn comp(&self, p: &str, which: &str) -> CompressorWeights {
        let kv = self.mat(&format!("{p}{which}_compressor_kv.weight"));
        CompressorWeights {
            ape: self.vec(&format!("{p}{which}_compressor_ape.weight")),
            width: kv.rows,
            kv,
            gate: self.mat(&format!("{p}{which}_compressor_gate.weight")),
            norm: self.vec(&format!("{p}{which}_compressor_norm.weight")),
        }
    }
}

impl Model {
    /// Open and bind a GGUF file (memory-mapped).
    pub fn load(path: impl AsRef<Path>) -> Result<Arc<Model>, ModelError> {
        Ok(Arc::new(Self::from_gguf(Gguf::open(path)?)?))
    }

    /// Bind an already opened GGUF. Reports every layout mismatch at once.
    pub fn from_gguf(g: Gguf) -> Result<Model, ModelError> {
        let hp = Hparams::from_gguf(&g)?;
        let specs = layout::expected_tensors(&hp, Variant::Any);
        layout::check(&specs, |n| g.tensor(n))?;
        let b = Binder { g: &g };
        let mut bad = Vec::new();
        let mut layers = Vec::with_capacity(hp.n_layer);
        for l in 0..hp.n_layer {
            let p = format!("blk.{l}.");
            let ratio = hp.ratio(l);
            let tid2eid = if hp.is_hash_layer(l) {
                let name = format!("{p}ffn_gate_tid2eid.weight");
                let raw = g.tensor_data(b.info(&name));
                let ids: Vec<i32> = raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
                if let Some((i, v)) = ids.iter().enumerate().find(|(_, &v)| v < 0 || v as usize >= hp.n_expert) {
                    bad.push(Mismatch {
                        tensor: name,
                        expected: format!("expert ids in 0..{}", hp.n_expert),
                        found: format!("{v} at entry {i}"),
                    });
                }
                Some(ids.iter().map(|&v| v.max(0) as u32).collect())
            } else {
                None
            };
            let bias = if hp.is_hash_layer(l) { None } else { b.opt_vec(&format!("{p}exp_probs_b.bias")) };
            layers.push(b.block(&p, l, ratio, tid2eid, bias, hp.swiglu_clamp[l], hp.swiglu_clamp_shexp[l]));
        }
        if !bad.is_empty() {
            return Err(LayoutError { mismatches: bad }.into());
        }
        let output_hc = HcWeights {
            fn_: b.mat("output_hc_fn.weight"),
            scale: b.vec("output_hc_scale.weight"),
            base: b.vec("output_hc_base.weight"),
        };
        Ok(Model {
            token_embd: b.mat("token_embd.weight"),
            output_norm: b.vec("output_norm.weight"),
            output: b.mat("output.weight"),
            output_hc,
            layers,
            hp,
            gguf: g,
        })
    }

    /// The file image the [`Mat`] offsets point into.
    pub fn data(&self) -> &[u8] {
        self.gguf.bytes()
    }

    pub fn gguf(&self) -> &Gguf {
        &self.gguf
    }

    /// Routed-expert quantization bits (2 or 4) as the disk cache records them; other types
    /// (test models) report 16/32.
    pub fn expert_bits(&self) -> u8 {
        match self.layers.first().map(|l| l.gate_exps.ty) {
            Some(GgmlType::Iq2Xxs) | Some(GgmlType::Q2K) => 2,
            Some(GgmlType::Q4K) => 4,
            Some(GgmlType::F16) => 16,
            _ => 32,
        }
    }
}

/// The optional MTP (next-token drafter) block from its own GGUF (MODEL.md §4.4, §7), bound by
/// tensor name against the main model's hyperparameters (ds4 validates no MTP metadata). The
/// block is a ratio-0 decoder layer with router bias (index `n_layer`); the drafter reuses the
/// main model's embedding and LM head.
pub struct MtpWeights {
    gguf: Gguf,
    pub e_proj: Mat,
    pub h_proj: Mat,
    pub enorm: Vec<f32>,
    pub hnorm: Vec<f32>,
    pub norm: Vec<f32>,
    pub hc_head: HcWeights,
    pub block: LayerWeights,
}

impl MtpWeights {
    pub fn load(path: impl AsRef<Path>, hp: &Hparams) -> Result<MtpWeights, ModelError> {
        Self::from_gguf(Gguf::open(path)?, hp)
    }

    /// Bind; every layout mismatch is reported at once.
    pub fn from_gguf(g: Gguf, hp: &Hparams) -> Result<MtpWeights, ModelError> {
        layout::check(&layout::expected_mtp_tensors(hp, Variant::Any), |n| g.tensor(n))?;
        let b = Binder { g: &g };
        let p = "mtp.0.";
        // The MTP clamp is the published 10 like every layer; use the last layer's value.
        let (c, cs) = (hp.swiglu_clamp[hp.n_layer - 1], hp.swiglu_clamp_shexp[hp.n_layer - 1]);
        let block = b.block(p, hp.n_layer, 0, None, b.opt_vec(&format!("{p}exp_probs_b.bias")), c, cs);
        let hc_head = HcWeights {
            fn_: b.mat(&format!("{p}hc_head_fn.weight")),
            scale: b.vec(&format!("{p}hc_head_scale.weight")),
            base: b.vec(&format!("{p}hc_head_base.weight")),
        };
        Ok(MtpWeights {
            e_proj: b.mat(&format!("{p}e_proj.weight")),
            h_proj: b.mat(&format!("{p}h_proj.weight")),
            enorm: b.vec(&format!("{p}enorm.weight")),
            hnorm: b.vec(&format!("{p}hnorm.weight")),
            norm: b.vec(&format!("{p}norm.weight")),
            hc_head,
            block,
            gguf: g,
        })
    }

    /// The MTP file image the [`Mat`] offsets point into.
    pub fn data(&self) -> &[u8] {
        self.gguf.bytes()
    }
}
