//! The engine's DSV4 session payload (KVCACHE.md §3, MODEL.md §3.3), seen
//! from the cache: the payload body is opaque, but its 13-word header and the
//! section sizes it implies let the cache reject a file that is corrupt or
//! belongs to another model *before* the engine touches the live session.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};

pub const MAGIC: u32 = 0x3456_5344; // bytes "DSV4"
pub const VERSION: u32 = 1;
pub const HEADER_WORDS: usize = 13;
pub const HEADER_LEN: usize = HEADER_WORDS * 4;

/// The 13 × u32 payload header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadHeader {
    pub ctx: u32,
    pub prefill_chunk: u32,
    pub raw_capacity: u32,
    pub raw_window: u32,
    pub comp_capacity: u32,
    pub tokens: u32,
    pub n_layers: u32,
    pub head_dim: u32,
    pub indexer_dim: u32,
    pub vocab: u32,
    pub raw_rows: u32,
}

/// What identifies a model layout for payload portability (KVCACHE.md §3:
/// same layout, same prefill chunk, same raw window). The server builds it
/// from the loaded model's hyperparameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelShape {
    pub head_dim: u32,
    pub indexer_dim: u32,
    pub vocab: u32,
    /// Compression ratio per layer (0, 4 or 128); its length is the layer count.
    pub compress_ratios: Vec<u32>,
    /// Prefill chunk the current session would write for its context.
    pub prefill_chunk: u32,
    /// Raw sliding window length of the current session (min(128, ctx)).
    pub raw_window: u32,
}

impl ModelShape {
    /// The shape a session of context `ctx` writes: prefill chunk 2048 for
    /// contexts above 2048 (else the context), raw window min(128, ctx).
    pub fn for_context(head_dim: u32, indexer_dim: u32, vocab: u32, compress_ratios: Vec<u32>, ctx: u32) -> ModelShape {
        ModelShape {
            head_dim,
            indexer_dim,
            vocab,
            compress_ratios,
            prefill_chunk: if ctx > 2048 { 2048 } else { ctx },
            raw_window: ctx.min(128),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// Shorter than the header or a declared section.
    Truncated,
    BadMagic(u32),
    ForeignVersion(u32),
    /// The payload's token count differs from the KVC header's.
    TokenCountMismatch { header: u32, payload: u32 },
    /// Internally inconsistent header or row counts (corrupt).
    Inconsistent(String),
    /// Declared sizes do not add up to the payload length (corrupt).
    LengthMismatch { declared: u64, expected: u64 },
    /// Valid payload of a different model/configuration (not corrupt).
    WrongModel(String),
    /// Written for a context larger than the current one (not corrupt).
    ContextTooLarge { saved: u32, tokens: u32, current: u32 },
}

impl PayloadError {
    /// Corrupt for every reader, as opposed to merely not usable by us.
    pub fn is_corrupt(&self) -> bool {
        !matches!(self, PayloadError::WrongModel(_) | PayloadError::ContextTooLarge { .. })
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::Truncated => write!(f, "payload truncated"),
            PayloadError::BadMagic(m) => write!(f, "payload magic {m:#010x}"),
            PayloadError::ForeignVersion(v) => write!(f, "payload version {v}"),
            PayloadError::TokenCountMismatch { header, payload } => {
                write!(f, "payload holds {payload} tokens, header says {header}")
            }
            PayloadError::Inconsistent(s) => write!(f, "payload inconsistent: {s}"),
            PayloadError::LengthMismatch { declared, expected } => {
                write!(f, "payload length {declared} but its sections need {expected}")
            }
            PayloadError::WrongModel(s) => write!(f, "payload is for another model: {s}"),
            PayloadError::ContextTooLarge { saved, tokens, current } => write!(
                f,
                "payload needs ctx {saved} ({tokens} tokens), session has {current}"
            ),
        }
    }
}

impl PayloadHeader {
    pub fn decode(b: &[u8]) -> Result<PayloadHeader, PayloadError> {
        if b.len() < HEADER_LEN {
            return Err(PayloadError::Truncated);
        }
        let w = |i: usize| crate::format::le32(b, i * 4);
        if w(0) != MAGIC {
            return Err(PayloadError::BadMagic(w(0)));
        }
        if w(1) != VERSION {
            return Err(PayloadError::ForeignVersion(w(1)));
        }
        Ok(PayloadHeader {
            ctx: w(2),
            prefill_chunk: w(3),
            raw_capacity: w(4),
            raw_window: w(5),
            comp_capacity: w(6),
            tokens: w(7),
            n_layers: w(8),
            head_dim: w(9),
            indexer_dim: w(10),
            vocab: w(11),
            raw_rows: w(12),
        })
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let words = [
            MAGIC,
            VERSION,
            self.ctx,
            self.prefill_chunk,
            self.raw_capacity,
            self.raw_window,
            self.comp_capacity,
            self.tokens,
            self.n_layers,
            self.head_dim,
            self.indexer_dim,
            self.vocab,
            self.raw_rows,
        ];
        let mut out = [0u8; HEADER_LEN];
        for (i, w) in words.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Offset of the per-layer row-count arrays (after tokens and logits).
    pub fn counts_offset(&self) -> u64 {
        HEADER_LEN as u64 + 4 * self.tokens as u64 + 4 * self.vocab as u64
    }

    /// Checks that do not depend on the reading model: self-consistency.
    pub fn check_consistent(&self) -> Result<(), PayloadError> {
        let bad = |s: String| Err(PayloadError::Inconsistent(s));
        if self.tokens == 0 || self.tokens >= self.ctx {
            return bad(format!("tokens {} with ctx {}", self.tokens, self.ctx));
        }
        let want_r = self.raw_window.min(self.raw_capacity).min(self.tokens);
        if self.raw_rows != want_r {
            return bad(format!("raw rows {} != {}", self.raw_rows, want_r));
        }
        if self.n_layers == 0 || self.n_layers > 4096 || self.head_dim == 0 || self.vocab == 0 {
            return bad(format!(
                "layers {} head dim {} vocab {}",
                self.n_layers, self.head_dim, self.vocab
            ));
        }
        Ok(())
    }

    /// KVCACHE.md §3 load validation that the header alone decides.
    pub fn check_compatible(&self, shape: &ModelShape, current_ctx: u32) -> Result<(), PayloadError> {
        let mut diffs = Vec::new();
        let mut cmp = |name: &str, saved: u32, ours: u32| {
            if saved != ours {
                diffs.push(format!("{name} {saved}!={ours}"));
            }
        };
        cmp("layers", self.n_layers, shape.compress_ratios.len() as u32);
        cmp("head_dim", self.head_dim, shape.head_dim);
        cmp("indexer_dim", self.indexer_dim, shape.indexer_dim);
        cmp("vocab", self.vocab, shape.vocab);
        cmp("prefill_chunk", self.prefill_chunk, shape.prefill_chunk);
        cmp("raw_window", self.raw_window, shape.raw_window);
        if !diffs.is_empty() {
            return Err(PayloadError::WrongModel(diffs.join(" ")));
        }
        if self.ctx > current_ctx || self.tokens >= current_ctx {
            return Err(PayloadError::ContextTooLarge {
                saved: self.ctx,
                tokens: self.tokens,
                current: current_ctx,
            });
        }
        Ok(())
    }
}

/// Bytes of one compressor state tensor ("kv" or "score"): c·D·c·ratio f32,
/// c = 2 for ratio 4 (two overlapping windows) and 1 otherwise.
pub fn compressor_state_bytes(dim: u32, ratio: u32) -> u64 {
    let c: u64 = if ratio == 4 { 2 } else { 1 };
    4 * c * dim as u64 * c * ratio as u64
}

/// Exact payload length implied by the header, the layer ratios and the
/// per-layer row counts; also checks counts against capacities.
pub fn expected_len(
    h: &PayloadHeader,
    ratios: &[u32],
    n_comp: &[u32],
    n_idx: &[u32],
) -> Result<u64, PayloadError> {
    let l = h.n_layers as usize;
    if ratios.len() != l || n_comp.len() != l || n_idx.len() != l {
        return Err(PayloadError::Inconsistent("layer count".into()));
    }
    let d = h.head_dim as u64;
    let di = h.indexer_dim as u64;
    let mut total = h.counts_offset() + 8 * l as u64;
    for i in 0..l {
        let r = ratios[i];
        total += 4 * h.raw_rows as u64 * d;
        if r != 0 {
            if n_comp[i] > h.comp_capacity {
                return Err(PayloadError::Inconsistent(format!(
                    "layer {i}: {} compressed rows > capacity {}",
                    n_comp[i], h.comp_capacity
                )));
            }
            total += 4 * n_comp[i] as u64 * d + 2 * compressor_state_bytes(h.head_dim, r);
        }
        if r == 4 {
            if n_idx[i] > h.comp_capacity {
                return Err(PayloadError::Inconsistent(format!(
                    "layer {i}: {} indexer rows > capacity {}",
                    n_idx[i], h.comp_capacity
                )));
            }
            total += 4 * n_idx[i] as u64 * di + 2 * compressor_state_bytes(h.indexer_dim, r);
        }
    }
    Ok(total)
}

/// Reads and checks the payload that starts at `offset` in `f` and declares
/// `payload_len` bytes: header, token count vs the KVC header, model
/// compatibility, and (with a shape) that the section sizes add up exactly.
pub fn inspect<F: Read + Seek>(
    f: &mut F,
    offset: u64,
    payload_len: u64,
    kvc_tokens: u32,
    shape: Option<&ModelShape>,
    current_ctx: u32,
) -> Result<PayloadHeader, PayloadError> {
    if payload_len < HEADER_LEN as u64 {
        return Err(PayloadError::Truncated);
    }
    let mut hb = [0u8; HEADER_LEN];
    f.seek(SeekFrom::Start(offset)).map_err(|_| PayloadError::Truncated)?;
    f.read_exact(&mut hb).map_err(|_| PayloadError::Truncated)?;
    let h = PayloadHeader::decode(&hb)?;
    if h.tokens != kvc_tokens {
        return Err(PayloadError::TokenCountMismatch { header: kvc_tokens, payload: h.tokens });
    }
    h.check_consistent()?;
    let Some(shape) = shape else { return Ok(h) };
    h.check_compatible(shape, current_ctx)?;
    let counts_at = h.counts_offset();
    if counts_at + 8 * h.n_layers as u64 > payload_len {
        return Err(PayloadError::LengthMismatch {
            declared: payload_len,
            expected: counts_at + 8 * h.n_layers as u64,
        });
    }
    let mut cb = vec![0u8; 8 * h.n_layers as usize];
    f.seek(SeekFrom::Start(offset + counts_at)).map_err(|_| PayloadError::Truncated)?;
    f.read_exact(&mut cb).map_err(|_| PayloadError::Truncated)?;
    let l = h.n_layers as usize;
    let words: Vec<u32> = (0..2 * l).map(|i| crate::format::le32(&cb, i * 4)).collect();
    let expected = expected_len(&h, &shape.compress_ratios, &words[..l], &words[l..])?;
    if expected != payload_len {
        return Err(PayloadError::LengthMismatch { declared: payload_len, expected });
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_model_sizes_match_spec() {
        // KVCACHE.md §3 figures for DeepSeek V4 Flash.
        assert_eq!(compressor_state_bytes(512, 4), 32768);
        assert_eq!(compressor_state_bytes(512, 128), 262144);
        assert_eq!(compressor_state_bytes(128, 4), 8192);
        let ratios: Vec<u32> = (0..43)
            .map(|l| if l < 2 { 0 } else if l % 2 == 0 { 4 } else { 128 })
            .collect();
        let t = 100_000u32;
        let ctx = 131072u32;
        let h = PayloadHeader {
            ctx,
            prefill_chunk: 2048,
            raw_capacity: 2304,
            raw_window: 128,
            comp_capacity: ctx / 4 + 2,
            tokens: t,
            n_layers: 43,
            head_dim: 512,
            indexer_dim: 128,
            vocab: 129280,
            raw_rows: 128,
        };
        let n_comp: Vec<u32> = ratios.iter().map(|&r| if r == 0 { 0 } else { t / r }).collect();
        let n_idx: Vec<u32> = ratios.iter().map(|&r| if r == 4 { t / 4 } else { 0 }).collect();
        let len = expected_len(&h, &ratios, &n_comp, &n_idx).unwrap();
        let fixed = expected_len(
            &PayloadHeader { tokens: 128, ..h.clone() },
            &ratios,
            &vec![0; 43],
            &vec![0; 43],
        )
        .unwrap();
        // ~24 MB fixed, ~13.4 KiB per token.
        assert!((23_000_000..25_500_000).contains(&fixed), "fixed {fixed}");
        let per_tok = (len - fixed) as f64 / (t - 128) as f64 / 1024.0;
        assert!((13.2..13.6).contains(&per_tok), "per token {per_tok} KiB");
    }

    #[test]
    fn header_round_trip_and_consistency() {
        let h = PayloadHeader {
            ctx: 1024,
            prefill_chunk: 1024,
            raw_capacity: 1280,
            raw_window: 128,
            comp_capacity: 258,
            tokens: 100,
            n_layers: 6,
            head_dim: 80,
            indexer_dim: 32,
            vocab: 384,
            raw_rows: 100,
        };
        assert_eq!(PayloadHeader::decode(&h.encode()).unwrap(), h);
        assert!(h.check_consistent().is_ok());
        let bad = PayloadHeader { raw_rows: 128, ..h.clone() };
        assert!(bad.check_consistent().is_err());
        let bad = PayloadHeader { tokens: 1024, ..h.clone() };
        assert!(bad.check_consistent().is_err());
        let mut b = h.encode();
        b[0] = 0;
        assert!(matches!(PayloadHeader::decode(&b), Err(PayloadError::BadMagic(_))));
        let shape = ModelShape {
            head_dim: 80,
            indexer_dim: 32,
            vocab: 384,
            compress_ratios: vec![0, 0, 4, 128, 4, 128],
            prefill_chunk: 1024,
            raw_window: 128,
        };
        assert!(h.check_compatible(&shape, 1024).is_ok());
        assert!(matches!(
            h.check_compatible(&shape, 512),
            Err(PayloadError::ContextTooLarge { .. })
        ));
        let other = ModelShape { vocab: 129280, ..shape.clone() };
        assert!(matches!(h.check_compatible(&other, 1024), Err(PayloadError::WrongModel(_))));
    }
}
