//! A DSV4 payload codec for the engine's canonical CPU state, written from
//! KVCACHE.md §3 alone. It lets the cache be tested end to end against the
//! real forward pass, and serves as an independent reference for the
//! engine's own `save_payload` once that lands.
#![allow(dead_code)]

use ds4_engine::state::KvState;
use ds4_engine::Hparams;
use ds4_kvcache::payload::{PayloadHeader, HEADER_LEN};

pub fn prefill_chunk(ctx: u32) -> u32 {
    if ctx > 2048 {
        2048
    } else {
        ctx
    }
}

fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

pub fn save(st: &KvState, hp: &Hparams, ctx: u32, tokens: &[u32], logits: &[f32]) -> Vec<u8> {
    assert_eq!(st.pos, tokens.len());
    assert_eq!(logits.len(), hp.n_vocab);
    let t = tokens.len() as u32;
    let raw_window = (hp.sliding_window as u32).min(ctx);
    let r = raw_window.min(st.raw_cap as u32).min(t);
    let h = PayloadHeader {
        ctx,
        prefill_chunk: prefill_chunk(ctx),
        raw_capacity: st.raw_cap as u32,
        raw_window,
        comp_capacity: ctx / 4 + 2,
        tokens: t,
        n_layers: hp.n_layer as u32,
        head_dim: hp.head_dim as u32,
        indexer_dim: hp.idx_head_dim as u32,
        vocab: hp.n_vocab as u32,
        raw_rows: r,
    };
    let mut out = h.encode().to_vec();
    for tok in tokens {
        out.extend_from_slice(&tok.to_le_bytes());
    }
    put_f32s(&mut out, logits);
    for l in 0..hp.n_layer {
        out.extend_from_slice(&(st.n_comp(l) as u32).to_le_bytes());
    }
    for l in 0..hp.n_layer {
        out.extend_from_slice(&(st.n_idx(l) as u32).to_le_bytes());
    }
    for (l, ls) in st.layers.iter().enumerate() {
        for p in (t - r) as usize..t as usize {
            put_f32s(&mut out, st.raw_row(l, p));
        }
        if ls.ratio != 0 {
            put_f32s(&mut out, &ls.comp);
            let f = ls.comp_front.as_ref().expect("compressed layer has a frontier");
            put_f32s(&mut out, &f.kv);
            put_f32s(&mut out, &f.score);
        }
        if ls.ratio == 4 {
            put_f32s(&mut out, &ls.idx);
            let f = ls.idx_front.as_ref().expect("ratio-4 layer has an indexer frontier");
            put_f32s(&mut out, &f.kv);
            put_f32s(&mut out, &f.score);
        }
    }
    out
}

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn u32(&mut self) -> Result<u32, String> {
        let s = self.b.get(self.at..self.at + 4).ok_or("truncated")?;
        self.at += 4;
        Ok(u32::from_le_bytes(s.try_into().unwrap()))
    }
    fn f32s(&mut self, n: usize, dst: &mut Vec<f32>) -> Result<(), String> {
        let s = self.b.get(self.at..self.at + 4 * n).ok_or("truncated")?;
        self.at += 4 * n;
        dst.extend(s.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())));
        Ok(())
    }
}

/// Restores into `st` (a fresh state of the reading model); returns the
/// tokens and logits. Validation per KVCACHE.md §3.
pub fn load(bytes: &[u8], hp: &Hparams, ctx: u32, st: &mut KvState) -> Result<(Vec<u32>, Vec<f32>), String> {
    let h = PayloadHeader::decode(bytes.get(..HEADER_LEN).ok_or("short")?).map_err(|e| e.to_string())?;
    let raw_window = (hp.sliding_window as u32).min(ctx);
    if h.ctx > ctx || h.tokens >= ctx {
        return Err("context".into());
    }
    if (h.n_layers as usize, h.head_dim as usize, h.indexer_dim as usize, h.vocab as usize)
        != (hp.n_layer, hp.head_dim, hp.idx_head_dim, hp.n_vocab)
    {
        return Err("dims".into());
    }
    if h.prefill_chunk != prefill_chunk(ctx) || h.raw_window != raw_window {
        return Err("chunk/window".into());
    }
    if h.raw_rows != h.tokens.min(raw_window) || h.raw_rows as usize > st.raw_cap || h.raw_rows > h.raw_capacity {
        return Err("raw rows".into());
    }
    if h.comp_capacity > ctx / 4 + 2 {
        return Err("compressed capacity".into());
    }
    let mut c = Cur { b: bytes, at: HEADER_LEN };
    let tokens = (0..h.tokens).map(|_| c.u32()).collect::<Result<Vec<_>, _>>()?;
    let mut logits = Vec::new();
    c.f32s(hp.n_vocab, &mut logits)?;
    let n_comp = (0..hp.n_layer).map(|_| c.u32()).collect::<Result<Vec<_>, _>>()?;
    let n_idx = (0..hp.n_layer).map(|_| c.u32()).collect::<Result<Vec<_>, _>>()?;
    st.reset();
    let d = hp.head_dim;
    let t = h.tokens as usize;
    for l in 0..hp.n_layer {
        let mut rows = Vec::new();
        c.f32s(h.raw_rows as usize * d, &mut rows)?;
        let cap = st.raw_cap;
        let ls = &mut st.layers[l];
        for (i, p) in (t - h.raw_rows as usize..t).enumerate() {
            let s = p % cap;
            ls.raw[s * d..(s + 1) * d].copy_from_slice(&rows[i * d..(i + 1) * d]);
        }
        if ls.ratio != 0 {
            if n_comp[l] > h.comp_capacity {
                return Err("compressed rows".into());
            }
            c.f32s(n_comp[l] as usize * d, &mut ls.comp)?;
            let f = ls.comp_front.as_mut().ok_or("frontier")?;
            let n = f.kv.len();
            f.kv.clear();
            f.score.clear();
            c.f32s(n, &mut f.kv)?;
            c.f32s(n, &mut f.score)?;
        }
        if ls.ratio == 4 {
            if n_idx[l] > h.comp_capacity {
                return Err("indexer rows".into());
            }
            c.f32s(n_idx[l] as usize * hp.idx_head_dim, &mut ls.idx)?;
            let f = ls.idx_front.as_mut().ok_or("frontier")?;
            let n = f.kv.len();
            f.kv.clear();
            f.score.clear();
            c.f32s(n, &mut f.kv)?;
            c.f32s(n, &mut f.score)?;
        }
    }
    if c.at != bytes.len() {
        return Err(format!("{} trailing payload bytes", bytes.len() - c.at));
    }
    st.pos = t;
    Ok((tokens, logits))
}
