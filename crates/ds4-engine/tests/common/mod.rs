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
