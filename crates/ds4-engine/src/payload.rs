//! ds4's "DSV4" session payload (KVCACHE.md §3, MODEL.md §3.3): everything needed to continue a
//! session exactly — tokens, next-token logits, per-layer raw window rows, compressed and
//! indexer rows, compressor frontiers. Little-endian, f32 values.
//!
//! Reading validates every header field and count before allocating and never panics on
//! corrupt input; the reader must end exactly at the end of the payload (wrap a file reader in
//! `Read::take(payload_len)`), trailing bytes are an error.

use crate::backend::EngineError;
use crate::hparams::Hparams;
use crate::state::KvState;
use std::io::{Read, Write};

pub const MAGIC: u32 = 0x3456_5344; // "DSV4"
pub const VERSION: u32 = 1;
const HEADER_WORDS: usize = 13;

/// Session geometry recorded in (and checked against) the payload header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub ctx: usize,
    pub prefill_chunk: usize,
    pub raw_cap: usize,
}

impl Geometry {
    /// Sliding-window rows kept per layer: `min(window, ctx)`.
    pub fn raw_window(&self, hp: &Hparams) -> usize {
        hp.sliding_window.min(self.ctx)
    }
    /// Compressed-row capacity as ds4 records it (`ctx/4 + 2`).
    pub fn comp_cap(&self) -> usize {
        self.ctx / 4 + 2
    }
}

fn bad(msg: impl Into<String>) -> EngineError {
    EngineError::Payload(msg.into())
}

fn put_u32s(w: &mut dyn Write, v: impl IntoIterator<Item = u32>) -> std::io::Result<()> {
    let bytes: Vec<u8> = v.into_iter().flat_map(|x| x.to_le_bytes()).collect();
    w.write_all(&bytes)
}

fn put_f32s(w: &mut dyn Write, v: &[f32]) -> std::io::Result<()> {
    for chunk in v.chunks(16384) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// Serialize a session state.
pub fn write(w: &mut dyn Write, hp: &Hparams, geo: Geometry, tokens: &[u32], logits: &[f32], st: &KvState) -> Result<(), EngineError> {
    let t = tokens.len();
    if st.pos != t {
        return Err(bad(format!("state holds {} positions but the session has {t} tokens", st.pos)));
    }
    let window = geo.raw_window(hp);
    let r = window.min(st.raw_cap).min(t);
    let header = [
        MAGIC,
        VERSION,
        geo.ctx as u32,
        geo.prefill_chunk as u32,
        st.raw_cap as u32,
        window as u32,
        geo.comp_cap() as u32,
        t as u32,
        hp.n_layer as u32,
        hp.head_dim as u32,
        hp.idx_head_dim as u32,
        hp.n_vocab as u32,
        r as u32,
    ];
    put_u32s(w, header)?;
    put_u32s(w, tokens.iter().copied())?;
    if logits.len() == hp.n_vocab {
        put_f32s(w, logits)?;
    } else {
        put_f32s(w, &vec![0.0; hp.n_vocab])?;
    }
    put_u32s(w, (0..hp.n_layer).map(|l| st.n_comp(l) as u32))?;
    put_u32s(w, (0..hp.n_layer).map(|l| st.n_idx(l) as u32))?;
    for (l, ls) in st.layers.iter().enumerate() {
        for p in t - r..t {
            put_f32s(w, st.raw_row(l, p))?;
        }
        if ls.ratio != 0 {
            put_f32s(w, &ls.comp)?;
            let f = ls.comp_front.as_ref().ok_or_else(|| bad("missing compressor state"))?;
            put_f32s(w, &f.kv)?;
            put_f32s(w, &f.score)?;
        }
        if ls.ratio == 4 {
            put_f32s(w, &ls.idx)?;
            let f = ls.idx_front.as_ref().ok_or_else(|| bad("missing indexer compressor state"))?;
            put_f32s(w, &f.kv)?;
            put_f32s(w, &f.score)?;
        }
    }
    Ok(())
}

struct In<'a> {
    r: &'a mut dyn Read,
}

impl In<'_> {
    fn bytes(&mut self, n: usize, what: &str) -> Result<Vec<u8>, EngineError> {
        let mut b = vec![0u8; n];
        self.r.read_exact(&mut b).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad(format!("truncated while reading {what}")),
            _ => EngineError::Io(e),
        })?;
        Ok(b)
    }
    fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, EngineError> {
        Ok(self.bytes(n * 4, what)?.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
    }
    fn f32s_into(&mut self, dst: &mut [f32], what: &str) -> Result<(), EngineError> {
        for chunk in dst.chunks_mut(16384) {
            let b = self.bytes(chunk.len() * 4, what)?;
            for (d, c) in chunk.iter_mut().zip(b.chunks_exact(4)) {
                *d = f32::from_le_bytes(c.try_into().unwrap());
            }
        }
        Ok(())
    }
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, EngineError> {
        let mut v = vec![0f32; n];
        self.f32s_into(&mut v, what)?;
        Ok(v)
    }
}

/// Parse and validate a payload for a session with geometry `geo`; returns tokens, logits and
/// the state (ring of the current capacity `fresh.raw_cap`, filled at `position mod capacity`).
pub fn read(r: &mut dyn Read, hp: &Hparams, geo: Geometry, fresh: KvState) -> Result<(Vec<u32>, Vec<f32>, KvState), EngineError> {
    let mut inp = In { r };
    let h = inp.u32s(HEADER_WORDS, "header")?;
    let hu = |i: usize| h[i] as usize;
    if h[0] != MAGIC {
        return Err(bad(format!("magic 0x{:08x} is not DSV4", h[0])));
    }
    if h[1] != VERSION {
        return Err(bad(format!("version {} unsupported (expected {VERSION})", h[1])));
    }
    let (ctx, chunk, cap, window, comp_cap, t) = (hu(2), hu(3), hu(4), hu(5), hu(6), hu(7));
    let dims = [("layers", hu(8), hp.n_layer), ("head dim", hu(9), hp.head_dim), ("indexer head dim", hu(10), hp.idx_head_dim), ("vocabulary", hu(11), hp.n_vocab)];
    for (what, got, want) in dims {
        if got != want {
            return Err(bad(format!("{what} {got} does not match the model ({want})")));
        }
    }
    if ctx > geo.ctx || t >= geo.ctx {
        return Err(bad(format!("saved context {ctx} with {t} tokens does not fit the current context {}", geo.ctx)));
    }
    if t > ctx {
        return Err(bad(format!("{t} tokens exceed the saved context {ctx}")));
    }
    if chunk != geo.prefill_chunk {
        return Err(bad(format!("prefill chunk {chunk} differs from the current {}", geo.prefill_chunk)));
    }
    if window != geo.raw_window(hp) {
        return Err(bad(format!("raw window {window} differs from the current {}", geo.raw_window(hp))));
    }
    let rr = hu(12);
    if rr != t.min(window) || rr > cap || rr > fresh.raw_cap {
        return Err(bad(format!("raw row count {rr} inconsistent (tokens {t}, window {window}, capacities {cap}/{})", fresh.raw_cap)));
    }
    if comp_cap > geo.comp_cap() {
        return Err(bad(format!("compressed capacity {comp_cap} exceeds the current {}", geo.comp_cap())));
    }
    let tokens = inp.u32s(t, "tokens")?;
    if let Some(&bad_tok) = tokens.iter().find(|&&x| x as usize >= hp.n_vocab) {
        return Err(bad(format!("token id {bad_tok} outside the vocabulary")));
    }
    let logits = inp.f32s(hp.n_vocab, "logits")?;
    let n_comp = inp.u32s(hp.n_layer, "compressed row counts")?;
    let n_idx = inp.u32s(hp.n_layer, "indexer row counts")?;
    for l in 0..hp.n_layer {
        let r = hp.ratio(l);
        let want_c = if r == 0 { 0 } else { t / r };
        let want_i = if r == 4 { t / 4 } else { 0 };
        if n_comp[l] as usize != want_c || n_idx[l] as usize != want_i || want_c > comp_cap {
            return Err(bad(format!(
                "layer {l}: row counts {}/{} inconsistent with {t} tokens at ratio {r} (capacity {comp_cap})",
                n_comp[l], n_idx[l]
            )));
        }
    }
    let mut st = fresh;
    let hd = hp.head_dim;
    let mut row = vec![0f32; hd];
    for l in 0..hp.n_layer {
        let cap_now = st.raw_cap;
        let ls = &mut st.layers[l];
        for p in t - rr..t {
            inp.f32s_into(&mut row, "raw rows")?;
            let s = p % cap_now;
            ls.raw[s * hd..(s + 1) * hd].copy_from_slice(&row);
        }
        if ls.ratio != 0 {
            ls.comp = inp.f32s(n_comp[l] as usize * hd, "compressed rows")?;
            let f = ls.comp_front.as_mut().ok_or_else(|| bad("model layout has no compressor here"))?;
            inp.f32s_into(&mut f.kv, "compressor state")?;
            inp.f32s_into(&mut f.score, "compressor scores")?;
        }
        if ls.ratio == 4 {
            ls.idx = inp.f32s(n_idx[l] as usize * hp.idx_head_dim, "indexer rows")?;
            let f = ls.idx_front.as_mut().ok_or_else(|| bad("model layout has no indexer here"))?;
            inp.f32s_into(&mut f.kv, "indexer compressor state")?;
            inp.f32s_into(&mut f.score, "indexer compressor scores")?;
        }
    }
    let mut probe = [0u8; 1];
    match inp.r.read(&mut probe) {
        Ok(0) => {}
        Ok(_) => return Err(bad("trailing bytes after the payload")),
        Err(e) => return Err(EngineError::Io(e)),
    }
    st.pos = t;
    Ok((tokens, logits, st))
}
