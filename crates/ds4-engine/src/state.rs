//! The canonical (CPU, f32) per-session model state of MODEL.md §3.1: per layer the raw
//! sliding-window ring, the append-only compressed and indexer rows, and the compressor
//! frontiers. Backends that keep their state elsewhere (GPU) convert to/from this form for
//! snapshots and payload files.

use crate::hparams::Hparams;
use crate::ops::NEG_INF;

/// Partial-window state of one compressor: `rows` rows of `width` values for the projected kv
/// and for the scores. Ratio 4: 8 rows (previous window 0..4, current 4..8) of `2·d`;
/// ratio 128: 128 rows of `d`.
#[derive(Clone, Debug, PartialEq)]
pub struct Frontier {
    pub rows: usize,
    pub width: usize,
    pub kv: Vec<f32>,
    pub score: Vec<f32>,
}

impl Frontier {
    /// (rows, width) of the frontier of a compressor of this ratio over rows of `d` values:
    /// ratio 4 keeps two overlapping windows of twice the width.
    pub fn shape(ratio: usize, d: usize) -> (usize, usize) {
        let coff = if ratio == 4 { 2 } else { 1 };
        (coff * ratio, coff * d)
    }
    pub fn new(ratio: usize, d: usize) -> Frontier {
        let (rows, width) = Frontier::shape(ratio, d);
        Frontier { rows, width, kv: vec![0.0; rows * width], score: vec![NEG_INF; rows * width] }
    }
    pub fn reset(&mut self) {
        self.kv.fill(0.0);
        self.score.fill(NEG_INF);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LayerState {
    pub ratio: usize,
    /// Ring of `raw_cap` rows × head_dim: the row of position `t` lives at slot `t % raw_cap`.
    pub raw: Vec<f32>,
    /// Compressed attention rows, `n_comp × head_dim` (ratio ≠ 0).
    pub comp: Vec<f32>,
    pub comp_front: Option<Frontier>,
    /// Indexer rows, `n_idx × idx_head_dim` (ratio 4).
    pub idx: Vec<f32>,
    pub idx_front: Option<Frontier>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KvState {
    /// Tokens processed so far (position of the next token).
    pub pos: usize,
    pub raw_cap: usize,
    pub head_dim: usize,
    pub idx_head_dim: usize,
    pub layers: Vec<LayerState>,
}

impl KvState {
    pub fn new(hp: &Hparams) -> KvState {
        let raw_cap = hp.sliding_window;
        let layers = hp
            .compress_ratios
            .iter()
            .map(|&r| LayerState {
                ratio: r,
                raw: vec![0.0; raw_cap * hp.head_dim],
                comp: Vec::new(),
                comp_front: (r != 0).then(|| Frontier::new(r, hp.head_dim)),
                idx: Vec::new(),
                idx_front: (r == 4).then(|| Frontier::new(4, hp.idx_head_dim)),
            })
            .collect();
        KvState { pos: 0, raw_cap, head_dim: hp.head_dim, idx_head_dim: hp.idx_head_dim, layers }
    }

    /// Back to the empty state (keeps allocations).
    pub fn reset(&mut self) {
        self.pos = 0;
        for l in &mut self.layers {
            l.raw.fill(0.0);
            l.comp.clear();
            l.idx.clear();
            if let Some(f) = &mut l.comp_front {
                f.reset();
            }
            if let Some(f) = &mut l.idx_front {
                f.reset();
            }
        }
    }

    pub fn n_comp(&self, layer: usize) -> usize {
        self.layers[layer].comp.len() / self.head_dim
    }

    pub fn n_idx(&self, layer: usize) -> usize {
        self.layers[layer].idx.len() / self.idx_head_dim
    }

    /// Raw row of position `t` (must be one of the last `raw_cap` positions).
    pub fn raw_row(&self, layer: usize, t: usize) -> &[f32] {
        let s = t % self.raw_cap;
        &self.layers[layer].raw[s * self.head_dim..(s + 1) * self.head_dim]
    }

    /// Bytes held by this state (f32 storage).
    pub fn bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|l| {
                let f = |f: &Option<Frontier>| f.as_ref().map_or(0, |f| f.kv.len() + f.score.len());
                l.raw.len() + l.comp.len() + l.idx.len() + f(&l.comp_front) + f(&l.idx_front)
            })
            .sum::<usize>()
            * 4
    }
}
