//! GGUF v3 reader over a memory map. Every count, size and offset is checked against the
//! file length before use, so a hostile file yields a `GgufError` naming the field and the
//! byte offset, never a panic or an unbounded allocation.

use crate::types::GgmlType;
use memmap2::Mmap;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

pub const GGUF_MAGIC: u32 = 0x4655_4747;
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Nesting limit for arrays of arrays (real files use depth 1).
const MAX_ARRAY_DEPTH: u32 = 8;
const MAX_DIMS: u32 = 4;
/// Upper bound on any up-front reservation: counts were checked against the remaining bytes,
/// but an element (`MetaValue`, 32 bytes) is larger than its encoding, so large vectors grow
/// as elements actually parse instead of trusting the count.
const MAX_PREALLOC: u64 = 1 << 16;

#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot open {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("GGUF: {what} at byte offset {offset}: {msg}")]
    Format { what: String, offset: u64, msg: String },
}

fn ferr(what: impl Into<String>, offset: u64, msg: impl Into<String>) -> GgufError {
    GgufError::Format { what: what.into(), offset, msg: msg.into() }
}

#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Array(Vec<MetaValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl MetaValue {
    pub fn type_id(&self) -> u32 {
        match self {
            MetaValue::U8(_) => 0,
            MetaValue::I8(_) => 1,
            MetaValue::U16(_) => 2,
            MetaValue::I16(_) => 3,
            MetaValue::U32(_) => 4,
            MetaValue::I32(_) => 5,
            MetaValue::F32(_) => 6,
            MetaValue::Bool(_) => 7,
            MetaValue::Str(_) => 8,
            MetaValue::Array(_) => 9,
            MetaValue::U64(_) => 10,
            MetaValue::I64(_) => 11,
            MetaValue::F64(_) => 12,
        }
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            MetaValue::U8(_) => "u8",
            MetaValue::I8(_) => "i8",
            MetaValue::U16(_) => "u16",
            MetaValue::I16(_) => "i16",
            MetaValue::U32(_) => "u32",
            MetaValue::I32(_) => "i32",
            MetaValue::F32(_) => "f32",
            MetaValue::Bool(_) => "bool",
            MetaValue::Str(_) => "string",
            MetaValue::Array(_) => "array",
            MetaValue::U64(_) => "u64",
            MetaValue::I64(_) => "i64",
            MetaValue::F64(_) => "f64",
        }
    }
    /// Integer value of any integer type (bool excluded), if it fits in u64 and is >= 0.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v as u64),
            MetaValue::U16(v) => Some(v as u64),
            MetaValue::U32(v) => Some(v as u64),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            MetaValue::I8(v) => Some(v as i64),
            MetaValue::I16(v) => Some(v as i64),
            MetaValue::I32(v) => Some(v as i64),
            MetaValue::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }
    /// Float coercion accepted by ds4 (f32, f64, and integers).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F32(v) => Some(v as f64),
            MetaValue::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(b) => Some(b),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[MetaValue]> {
        match self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    /// GGUF order: dims[0] is the contiguous dimension.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Absolute byte offset of the data in the file.
    pub offset: u64,
    pub n_bytes: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

enum Backing {
    Mmap(Mmap),
    Bytes(Vec<u8>),
}

/// An opened GGUF file. Tensor data are zero-copy views into the mapping.
pub struct Gguf {
    backing: Backing,
    pub version: u32,
    pub alignment: u64,
    pub data_start: u64,
    /// Metadata in file order.
    pub metadata: Vec<(String, MetaValue)>,
    meta_index: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], GgufError> {
        let remaining = (self.buf.len() - self.pos) as u64;
        if n > remaining {
            return Err(ferr(
                what,
                self.pos as u64,
                format!("needs {n} bytes but only {remaining} remain (file truncated?)"),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, GgufError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, GgufError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let at = self.pos as u64;
        let len = self.u64(what)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ferr(what, at, "string is not valid UTF-8"))
    }
    fn remaining(&self) -> u64 {
        (self.buf.len() - self.pos) as u64
    }

    fn value(&mut self, ty: u32, what: &str, depth: u32) -> Result<MetaValue, GgufError> {
        let at = self.pos as u64;
        Ok(match ty {
            0 => MetaValue::U8(self.u8(what)?),
            1 => MetaValue::I8(self.u8(what)? as i8),
            2 => MetaValue::U16(self.u16(what)?),
            3 => MetaValue::I16(self.u16(what)? as i16),
            4 => MetaValue::U32(self.u32(what)?),
            5 => MetaValue::I32(self.u32(what)? as i32),
            6 => MetaValue::F32(f32::from_bits(self.u32(what)?)),
            7 => match self.u8(what)? {
                0 => MetaValue::Bool(false),
                1 => MetaValue::Bool(true),
                b => return Err(ferr(what, at, format!("bool byte is {b}, expected 0 or 1"))),
            },
            8 => MetaValue::Str(self.string(what)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(ferr(what, at, "arrays nested too deeply"));
                }
                let elem_ty = self.u32(what)?;
                let count_at = self.pos as u64;
                let count = self.u64(what)?;
                // Every element takes at least one byte (strings 8): a count larger than the
                // remaining bytes is a lie, caught before allocating.
                let min_elem = match elem_ty {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4 | 5 | 6 => 4,
                    8 | 10 | 11 | 12 => 8,
                    9 => 12,
                    t => return Err(ferr(what, count_at - 4, format!("unknown array element type {t}"))),
                };
                if count.checked_mul(min_elem).map_or(true, |b| b > self.remaining()) {
                    return Err(ferr(
                        what,
                        count_at,
                        format!("array count {count} exceeds the remaining {} bytes", self.remaining()),
                    ));
                }
                let mut v = Vec::with_capacity(count.min(MAX_PREALLOC) as usize);
                for _ in 0..count {
                    v.push(self.value(elem_ty, what, depth + 1)?);
                }
                MetaValue::Array(v)
            }
            10 => MetaValue::U64(self.u64(what)?),
            11 => MetaValue::I64(self.u64(what)? as i64),
            12 => MetaValue::F64(f64::from_bits(self.u64(what)?)),
            t => return Err(ferr(what, at.saturating_sub(4), format!("unknown value type {t}"))),
        })
    }
}

impl Gguf {
    pub fn open(path: impl AsRef<Path>) -> Result<Gguf, GgufError> {
        let path = path.as_ref();
        let io = |e| GgufError::Io { path: path.display().to_string(), source: e };
        let file = File::open(path).map_err(io)?;
        // SAFETY: the file is opened read-only; like every mmap user we assume it is not
        // truncated underneath us while mapped.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        Self::parse(Backing::Mmap(map))
    }

    /// Parse an in-memory image (tests, fuzzing).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Gguf, GgufError> {
        Self::parse(Backing::Bytes(bytes))
    }

    fn parse(backing: Backing) -> Result<Gguf, GgufError> {
        let buf: &[u8] = match &backing {
            Backing::Mmap(m) => m,
            Backing::Bytes(b) => b,
        };
        let file_len = buf.len() as u64;
        let mut c = Cursor { buf, pos: 0 };
        let magic = c.u32("magic")?;
        if magic != GGUF_MAGIC {
            return Err(ferr("magic", 0, format!("0x{magic:08x} is not GGUF (0x{GGUF_MAGIC:08x})")));
        }
        let version = c.u32("version")?;
        if version != 3 {
            return Err(ferr("version", 4, format!("version {version} unsupported (only GGUF v3)")));
        }
        let n_tensors = c.u64("tensor count")?;
        let n_kv = c.u64("metadata count")?;
        // Each KV needs >= 13 bytes, each tensor record >= 24 bytes.
        if n_kv.checked_mul(13).map_or(true, |b| b > c.remaining()) {
            return Err(ferr("metadata count", 16, format!("{n_kv} entries cannot fit in a {file_len}-byte file")));
        }
        if n_tensors.checked_mul(24).map_or(true, |b| b > c.remaining()) {
            return Err(ferr("tensor count", 8, format!("{n_tensors} tensors cannot fit in a {file_len}-byte file")));
        }
        let mut metadata = Vec::with_capacity(n_kv.min(MAX_PREALLOC) as usize);
        let mut meta_index = HashMap::new();
        let mut alignment_at = 0;
        for i in 0..n_kv {
            let at = c.pos as u64;
            let key = c.string(&format!("metadata key #{i}"))?;
            let ty = c.u32(&format!("type of metadata '{key}'"))?;
            if key == "general.alignment" {
                alignment_at = c.pos as u64;
            }
            let v = c.value(ty, &format!("metadata '{key}'"), 0)?;
            if meta_index.insert(key.clone(), metadata.len()).is_some() {
                return Err(ferr(format!("metadata '{key}'"), at, "duplicate key"));
            }
            metadata.push((key, v));
        }
        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, v)) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() && a <= 1 << 20 => a,
                _ => {
                    return Err(ferr(
                        "metadata 'general.alignment'",
                        alignment_at,
                        format!("{v:?} is not a power of two <= 1 MiB"),
                    ))
                }
            },
        };
        let mut raw = Vec::with_capacity(n_tensors.min(MAX_PREALLOC) as usize);
        let mut tensor_index = HashMap::new();
        for i in 0..n_tensors {
            let at = c.pos as u64;
            let name = c.string(&format!("tensor #{i} name"))?;
            let what = format!("tensor '{name}'");
            let nd = c.u32(&what)?;
            if nd == 0 || nd > MAX_DIMS {
                return Err(ferr(&what, at, format!("{nd} dimensions (allowed 1..={MAX_DIMS})")));
            }
            let mut dims = Vec::with_capacity(nd as usize);
            let mut n: u64 = 1;
            for _ in 0..nd {
                let d = c.u64(&what)?;
                n = n.checked_mul(d).ok_or_else(|| ferr(&what, at, "element count overflows"))?;
                dims.push(d);
            }
            let ty_id = c.u32(&what)?;
            let ty = GgmlType::from_id(ty_id)
                .ok_or_else(|| ferr(&what, at, format!("unsupported ggml type {ty_id}")))?;
            if dims[0] % ty.block_len() as u64 != 0 {
                return Err(ferr(&what, at, format!("row length {} is not a multiple of the {} block ({})", dims[0], ty, ty.block_len())));
            }
            let rel = c.u64(&what)?;
            if rel % alignment != 0 {
                return Err(ferr(&what, at, format!("data offset {rel} is not aligned to {alignment}")));
            }
            let n_bytes = ty.bytes_for(n).ok_or_else(|| ferr(&what, at, "byte size overflows"))?;
            if tensor_index.insert(name.clone(), raw.len()).is_some() {
                return Err(ferr(&what, at, "duplicate tensor name"));
            }
            raw.push((name, dims, ty, rel, n_bytes, at));
        }
        let data_start = (c.pos as u64).div_ceil(alignment) * alignment;
        let mut tensors = Vec::with_capacity(raw.len());
        for (name, dims, ty, rel, n_bytes, at) in raw {
            let offset = data_start.checked_add(rel);
            let end = offset.and_then(|o| o.checked_add(n_bytes));
            match (offset, end) {
                (Some(offset), Some(end)) if end <= file_len => {
                    tensors.push(TensorInfo { name, dims, ty, offset, n_bytes })
                }
                _ => {
                    return Err(ferr(
                        format!("tensor '{name}'"),
                        at,
                        format!("data [{} + {rel}, +{n_bytes}) lies beyond the end of the {file_len}-byte file (truncated?)", data_start),
                    ))
                }
            }
        }
        // Tensor data must not overlap (a crafted table could alias one tensor onto another).
        let mut spans: Vec<(u64, u64, usize)> = tensors
            .iter()
            .enumerate()
            .filter(|(_, t)| t.n_bytes > 0)
            .map(|(i, t)| (t.offset, t.offset + t.n_bytes, i))
            .collect();
        spans.sort_unstable();
        for w in spans.windows(2) {
            if w[1].0 < w[0].1 {
                let (a, b) = (&tensors[w[0].2], &tensors[w[1].2]);
                return Err(ferr(
                    format!("tensor '{}'", b.name),
                    b.offset,
                    format!("data [{}, {}) overlaps tensor '{}' [{}, {})", b.offset, b.offset + b.n_bytes, a.name, a.offset, a.offset + a.n_bytes),
                ));
            }
        }
        Ok(Gguf { backing, version, alignment, data_start, metadata, meta_index, tensors, tensor_index })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Mmap(m) => m,
            Backing::Bytes(b) => b,
        }
    }

    pub fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.meta_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// Raw bytes of a tensor (bounds were checked at open).
    pub fn tensor_data(&self, t: &TensorInfo) -> &[u8] {
        &self.bytes()[t.offset as usize..(t.offset + t.n_bytes) as usize]
    }

    /// Array of strings (tokenizer tokens, merges).
    pub fn meta_str_array(&self, key: &str) -> Option<Vec<&str>> {
        self.meta(key)?.as_array()?.iter().map(|v| v.as_str()).collect()
    }
}
