//! Shared helpers for the engine integration tests: fixture paths/loading and a minimal GGUF
//! serializer for mutated files.
#![allow(dead_code)]

use ds4_gguf::{GgmlType, Gguf, MetaValue, TensorInfo};
use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    std::env::var_os("DS4_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model")))
}

/// The fixture manifest (Python's json writes the non-standard `Infinity`/`NaN`; they become null).
pub fn manifest() -> serde_json::Value {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    let text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
    serde_json::from_str(&text).unwrap()
}

pub const MODELS: [&str; 4] = ["tiny-f32", "t256-q2", "t256-q4", "vocab-f16"];

pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn read_i32(path: &std::path::Path) -> Vec<i32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

fn put_val(out: &mut Vec<u8>, v: &MetaValue) {
    match v {
        MetaValue::U8(x) => out.push(*x),
        MetaValue::I8(x) => out.push(*x as u8),
        MetaValue::U16(x) => out.extend(x.to_le_bytes()),
        MetaValue::I16(x) => out.extend(x.to_le_bytes()),
        MetaValue::U32(x) => out.extend(x.to_le_bytes()),
        MetaValue::I32(x) => out.extend(x.to_le_bytes()),
        MetaValue::F32(x) => out.extend(x.to_le_bytes()),
        MetaValue::Bool(x) => out.push(*x as u8),
        MetaValue::Str(s) => put_str(out, s),
        MetaValue::Array(a) => {
            let et = a.first().map(|e| e.type_id()).unwrap_or(4);
            out.extend(et.to_le_bytes());
            out.extend((a.len() as u64).to_le_bytes());
            for e in a {
                put_val(out, e);
            }
        }
        MetaValue::U64(x) => out.extend(x.to_le_bytes()),
        MetaValue::I64(x) => out.extend(x.to_le_bytes()),
        MetaValue::F64(x) => out.extend(x.to_le_bytes()),
    }
}

/// Serialize metadata and tensors (data copied from `src` when given and sizes agree,
/// zero-filled otherwise) into a GGUF v3 image.
pub fn write_gguf(meta: &[(String, MetaValue)], tensors: &[(String, Vec<u64>, GgmlType)], src: Option<&Gguf>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0x4655_4747u32.to_le_bytes());
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((meta.len() as u64).to_le_bytes());
    for (k, v) in meta {
        put_str(&mut out, k);
        out.extend(v.type_id().to_le_bytes());
        put_val(&mut out, v);
    }
    let mut rel = 0u64;
    let mut sizes = Vec::new();
    for (name, dims, ty) in tensors {
        put_str(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(ty.id().to_le_bytes());
        out.extend(rel.to_le_bytes());
        let n = ty.bytes_for(dims.iter().product()).unwrap();
        sizes.push(n);
        rel += n.div_ceil(32) * 32;
    }
    while out.len() % 32 != 0 {
        out.push(0);
    }
    for ((name, _, _), n) in tensors.iter().zip(&sizes) {
        let start = out.len();
        match src.and_then(|g| g.tensor(name)).filter(|t| t.n_bytes == *n) {
            Some(t) => out.extend(src.unwrap().tensor_data(t)),
            None => out.resize(start + *n as usize, 0),
        }
        while out.len() % 32 != 0 {
            out.push(0);
        }
    }
    out
}

pub fn tensor_list(g: &Gguf) -> Vec<(String, Vec<u64>, GgmlType)> {
    g.tensors.iter().map(|t: &TensorInfo| (t.name.clone(), t.dims.clone(), t.ty)).collect()
}

/// Expected logits of one run: either full rows or (real-vocabulary model) the stored views.
pub enum Expected {
    Full { rows: usize, vocab: usize, logits: Vec<f32> },
    Views {
        rows: usize,
        top_ids: Vec<i32>,
        top_logits: Vec<f32>,
        subset_ids: Vec<i32>,
        subset_logits: Vec<f32>,
        lse: Vec<f32>,
        last: Option<Vec<f32>>,
    },
}

impl Expected {
    pub fn load(model: &str, entry: &serde_json::Value) -> Expected {
        let f = |v: &serde_json::Value| fixtures().join(v["file"].as_str().unwrap());
        if entry.get("file").is_some() {
            let shape = &entry["shape"];
            return Expected::Full {
                rows: shape[0].as_u64().unwrap() as usize,
                vocab: shape[1].as_u64().unwrap() as usize,
                logits: read_f32(&f(entry)),
            };
        }
        Expected::Views {
            rows: entry["top32_ids"]["shape"][0].as_u64().unwrap() as usize,
            top_ids: read_i32(&f(&entry["top32_ids"])),
            top_logits: read_f32(&f(&entry["top32_logits"])),
            subset_ids: read_i32(&fixtures().join(model).join("vocab_subset.i32.bin")),
            subset_logits: read_f32(&f(&entry["subset_logits"])),
            lse: read_f32(&f(&entry["logsumexp"])),
            last: entry.get("last_position_full_logits").map(|v| read_f32(&f(v))),
        }
    }
    /// The expectation restricted to row `r` (as a one-row expectation).
    pub fn row(&self, r: usize) -> Expected {
        match self {
            Expected::Full { vocab, logits, .. } => {
                Expected::Full { rows: 1, vocab: *vocab, logits: logits[r * vocab..(r + 1) * vocab].to_vec() }
            }
            Expected::Views { rows, top_ids, top_logits, subset_ids, subset_logits, lse, last } => {
                let ns = subset_ids.len();
                Expected::Views {
                    rows: 1,
                    top_ids: top_ids[r * 32..(r + 1) * 32].to_vec(),
                    top_logits: top_logits[r * 32..(r + 1) * 32].to_vec(),
                    subset_ids: subset_ids.clone(),
                    subset_logits: subset_logits[r * ns..(r + 1) * ns].to_vec(),
                    lse: vec![lse[r]],
                    last: if r + 1 == *rows { last.clone() } else { None },
                }
            }
        }
    }
    pub fn rows(&self) -> usize {
        match self {
            Expected::Full { rows, .. } | Expected::Views { rows, .. } => *rows,
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub max: f64,
    pub max_row: usize,
    pub max_col: usize,
    pub sum: f64,
    pub count: usize,
    pub argmax_mismatch: Vec<usize>,
}

impl Stats {
    pub fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }
    fn add(&mut self, row: usize, col: usize, got: f32, want: f32) {
        let d = (got as f64 - want as f64).abs();
        if d > self.max || d.is_nan() {
            self.max = if d.is_nan() { f64::INFINITY } else { d };
            self.max_row = row;
            self.max_col = col;
        }
        self.sum += d;
        self.count += 1;
    }
}

pub fn argmax(v: &[f32]) -> usize {
    let mut b = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[b] {
            b = i;
        }
    }
    b
}

/// Compare rows `[0, rows)` of `got` (token-major, `vocab` wide) with the expectation; only
/// the first `limit` rows count.
pub fn compare(got: &[f32], vocab: usize, exp: &Expected, limit: usize) -> Stats {
    let mut st = Stats::default();
    let rows = exp.rows().min(limit);
    assert!(got.len() >= rows * vocab, "got {} values for {rows} rows", got.len());
    for r in 0..rows {
        let g = &got[r * vocab..(r + 1) * vocab];
        match exp {
            Expected::Full { vocab: v, logits, .. } => {
                assert_eq!(*v, vocab);
                let w = &logits[r * vocab..(r + 1) * vocab];
                for c in 0..vocab {
                    st.add(r, c, g[c], w[c]);
                }
                if argmax(g) != argmax(w) {
                    st.argmax_mismatch.push(r);
                }
            }
            Expected::Views { top_ids, top_logits, subset_ids, subset_logits, lse, last, rows: nrows } => {
                for j in 0..32 {
                    let id = top_ids[r * 32 + j] as usize;
                    st.add(r, id, g[id], top_logits[r * 32 + j]);
                }
                for (j, &id) in subset_ids.iter().enumerate() {
                    st.add(r, id as usize, g[id as usize], subset_logits[r * subset_ids.len() + j]);
                }
                let m = g.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
                let l = m + g.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
                st.add(r, usize::MAX, l as f32, lse[r]);
                if argmax(g) != top_ids[r * 32] as usize {
                    st.argmax_mismatch.push(r);
                }
                if r + 1 == *nrows {
                    if let Some(last) = last {
                        for c in 0..vocab {
                            st.add(r, c, g[c], last[c]);
                        }
                    }
                }
            }
        }
    }
    st
}

/// Tokens of a fixture sequence.
pub fn tokens(seq: &serde_json::Value) -> Vec<u32> {
    read_i32(&fixtures().join(seq["tokens"]["file"].as_str().unwrap())).iter().map(|&t| t as u32).collect()
}

pub fn model_entry<'a>(man: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    man["models"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap()
}
