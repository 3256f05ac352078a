//! Streaming GGUF v3 writer.
//!
//! A [`GgufHeader`] collects metadata and the tensor table; its [`layout`](GgufHeader::layout)
//! gives every tensor's offset and the final file size without writing anything (dry runs).
//! [`GgufHeader::write`] emits header, metadata, table and padding, and returns a
//! [`GgufWriter`] that takes the tensor data in table order, whole or in pieces, so a model far
//! larger than memory can be written one block range at a time.

use crate::reader::{MetaValue, DEFAULT_ALIGNMENT, GGUF_MAGIC};
use crate::types::GgmlType;
use std::collections::HashSet;
use std::io::{self, Write};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("GGUF write: {0}")]
    Io(#[from] io::Error),
    #[error("GGUF write: {0}")]
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, WriteError> {
    Err(WriteError::Invalid(msg.into()))
}

/// One entry of the tensor table.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// GGUF order (dims[0] contiguous).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
}

impl TensorSpec {
    pub fn new(name: impl Into<String>, dims: &[u64], ty: GgmlType) -> TensorSpec {
        TensorSpec { name: name.into(), dims: dims.to_vec(), ty }
    }
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
    pub fn n_bytes(&self) -> u64 {
        self.ty.bytes_for(self.n_elements()).unwrap_or(u64::MAX)
    }
}

/// Where everything lands in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Bytes of header + metadata + tensor table (before padding).
    pub header_bytes: u64,
    /// Absolute offset of the data section (aligned).
    pub data_start: u64,
    /// Offsets relative to `data_start`, as stored in the table.
    pub rel_offsets: Vec<u64>,
    /// Total file size (each tensor's data padded to the alignment, as gguf-py does).
    pub total_bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct GgufHeader {
    metadata: Vec<(String, MetaValue)>,
    tensors: Vec<TensorSpec>,
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl GgufHeader {
    pub fn new() -> GgufHeader {
        GgufHeader::default()
    }

    /// Add or replace a metadata entry (file order = first insertion order).
    pub fn set(&mut self, key: impl Into<String>, value: MetaValue) -> &mut Self {
        let key = key.into();
        match self.metadata.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((key, value)),
        }
        self
    }

    pub fn metadata(&self) -> &[(String, MetaValue)] {
        &self.metadata
    }

    pub fn add_tensor(&mut self, spec: TensorSpec) -> &mut Self {
        self.tensors.push(spec);
        self
    }

    pub fn tensors(&self) -> &[TensorSpec] {
        &self.tensors
    }

    /// Alignment from `general.alignment` (default 32), validated.
    pub fn alignment(&self) -> Result<u64, WriteError> {
        match self.metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => Ok(DEFAULT_ALIGNMENT),
            Some((_, v)) => match (v, v.as_u64()) {
                (MetaValue::U32(_), Some(a)) if a.is_power_of_two() && a <= 1 << 20 => Ok(a),
                _ => invalid(format!("general.alignment {v:?} must be a u32 power of two")),
            },
        }
    }

    fn validate(&self) -> Result<(), WriteError> {
        let mut keys = HashSet::new();
        for (k, v) in &self.metadata {
            if !keys.insert(k.as_str()) {
                return invalid(format!("duplicate metadata key '{k}'"));
            }
            check_value(k, v, 0)?;
        }
        let mut names = HashSet::new();
        for t in &self.tensors {
            if !names.insert(t.name.as_str()) {
                return invalid(format!("duplicate tensor '{}'", t.name));
            }
            if t.dims.is_empty() || t.dims.len() > 4 {
                return invalid(format!("tensor '{}': {} dims (allowed 1..=4)", t.name, t.dims.len()));
            }
            if t.dims[0] % t.ty.block_len() as u64 != 0 {
                return invalid(format!("tensor '{}': row {} not a multiple of the {} block", t.name, t.dims[0], t.ty));
            }
            let n = t.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            if n.and_then(|n| t.ty.bytes_for(n)).is_none() {
                return invalid(format!("tensor '{}': size overflows", t.name));
            }
        }
        Ok(())
    }

    /// Offsets and total size; nothing is written.
    pub fn layout(&self) -> Result<Layout, WriteError> {
        self.validate()?;
        let align = self.alignment()?;
        let mut counter = CountingSink(0);
        self.write_table(&mut counter, align)?;
        let header_bytes = counter.0;
        let data_start = align_up(header_bytes, align);
        let mut rel = 0u64;
        let mut rel_offsets = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            rel_offsets.push(rel);
            rel = align_up(rel + t.n_bytes(), align);
        }
        Ok(Layout { header_bytes, data_start, rel_offsets, total_bytes: data_start + rel })
    }

    /// Header, metadata and tensor table (without trailing padding).
    pub fn table_bytes(&self) -> Result<Vec<u8>, WriteError> {
        self.validate()?;
        let mut v = Vec::new();
        self.write_table(&mut v, self.alignment()?)?;
        Ok(v)
    }

    fn write_table(&self, w: &mut impl Write, align: u64) -> Result<(), WriteError> {
        w.write_all(&GGUF_MAGIC.to_le_bytes())?;
        w.write_all(&3u32.to_le_bytes())?;
        w.write_all(&(self.tensors.len() as u64).to_le_bytes())?;
        w.write_all(&(self.metadata.len() as u64).to_le_bytes())?;
        for (k, v) in &self.metadata {
            write_str(w, k)?;
            w.write_all(&v.type_id().to_le_bytes())?;
            write_value(w, v)?;
        }
        let mut rel = 0u64;
        for t in &self.tensors {
            write_str(w, &t.name)?;
            w.write_all(&(t.dims.len() as u32).to_le_bytes())?;
            for d in &t.dims {
                w.write_all(&d.to_le_bytes())?;
            }
            w.write_all(&t.ty.id().to_le_bytes())?;
            w.write_all(&rel.to_le_bytes())?;
            rel = align_up(rel + t.n_bytes(), align);
        }
        Ok(())
    }

    /// Write header, metadata, table and padding; returns the writer for the tensor data.
    pub fn write<W: Write>(self, out: W) -> Result<GgufWriter<W>, WriteError> {
        let layout = self.layout()?;
        let align = self.alignment()?;
        let mut out = io::BufWriter::with_capacity(1 << 20, out);
        self.write_table(&mut out, align)?;
        write_zeros(&mut out, layout.data_start - layout.header_bytes)?;
        Ok(GgufWriter { out, tensors: self.tensors, align, next: 0, written: 0, layout })
    }

    /// Convenience for small files: the whole image in memory (tests, demo models).
    pub fn to_bytes(self, data: &[&[u8]]) -> Result<Vec<u8>, WriteError> {
        let mut w = self.write(Vec::new())?;
        for d in data {
            w.write_tensor(d)?;
        }
        w.finish()
    }
}

fn check_value(key: &str, v: &MetaValue, depth: u32) -> Result<(), WriteError> {
    if let MetaValue::Array(a) = v {
        if depth >= 8 {
            return invalid(format!("metadata '{key}': arrays nested deeper than 8"));
        }
        if let Some(first) = a.first() {
            let t = first.type_id();
            if a.iter().any(|e| e.type_id() != t) {
                return invalid(format!("metadata '{key}': array elements of mixed types"));
            }
            for e in a {
                check_value(key, e, depth + 1)?;
            }
        }
    }
    Ok(())
}

fn write_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

fn write_value(w: &mut impl Write, v: &MetaValue) -> io::Result<()> {
    match v {
        MetaValue::U8(x) => w.write_all(&[*x]),
        MetaValue::I8(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::U16(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I16(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::U32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::F32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::Bool(x) => w.write_all(&[*x as u8]),
        MetaValue::Str(s) => write_str(w, s),
        MetaValue::Array(a) => {
            // An empty array has no element to take a type from; u8 is as good as any.
            let et = a.first().map_or(0, |e| e.type_id());
            w.write_all(&et.to_le_bytes())?;
            w.write_all(&(a.len() as u64).to_le_bytes())?;
            a.iter().try_for_each(|e| write_value(w, e))
        }
        MetaValue::U64(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I64(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::F64(x) => w.write_all(&x.to_le_bytes()),
    }
}

fn write_zeros(w: &mut impl Write, mut n: u64) -> io::Result<()> {
    const Z: [u8; 4096] = [0; 4096];
    while n > 0 {
        let k = n.min(Z.len() as u64) as usize;
        w.write_all(&Z[..k])?;
        n -= k as u64;
    }
    Ok(())
}

struct CountingSink(u64);
impl Write for CountingSink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Receives tensor data in table order. Each tensor may arrive in any number of pieces; the
/// padding after it is written as soon as its last byte arrives.
pub struct GgufWriter<W: Write> {
    out: io::BufWriter<W>,
    tensors: Vec<TensorSpec>,
    align: u64,
    next: usize,
    written: u64,
    layout: Layout,
}

impl<W: Write> GgufWriter<W> {
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The tensor whose bytes are expected next (None when all are written).
    pub fn next_tensor(&self) -> Option<&TensorSpec> {
        self.tensors.get(self.next)
    }

    /// Bytes of the current tensor still expected.
    pub fn remaining_in_tensor(&self) -> u64 {
        self.next_tensor().map_or(0, |t| t.n_bytes() - self.written)
    }

    /// A whole tensor (must start at a tensor boundary and have exactly its size).
    pub fn write_tensor(&mut self, data: &[u8]) -> Result<(), WriteError> {
        let Some(t) = self.next_tensor() else { return invalid("all tensors already written") };
        if self.written != 0 || data.len() as u64 != t.n_bytes() {
            return invalid(format!(
                "tensor '{}': got {} bytes, expected {} ({} already written)",
                t.name,
                data.len(),
                t.n_bytes(),
                self.written
            ));
        }
        self.write_data(data)
    }

    /// Part of the current tensor; must not run past its end. A zero-sized tensor is
    /// completed by an empty call (or `write_tensor(&[])`).
    pub fn write_data(&mut self, data: &[u8]) -> Result<(), WriteError> {
        let Some(t) = self.tensors.get(self.next) else {
            return if data.is_empty() { Ok(()) } else { invalid(format!("{} bytes past the last tensor", data.len())) };
        };
        let n = t.n_bytes();
        if data.len() as u64 > n - self.written {
            return invalid(format!("tensor '{}': {} bytes given, only {} remain", t.name, data.len(), n - self.written));
        }
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        if self.written == n {
            write_zeros(&mut self.out, align_up(n, self.align) - n)?;
            self.next += 1;
            self.written = 0;
        }
        Ok(())
    }

    /// Check every tensor was written and flush; returns the underlying writer.
    pub fn finish(self) -> Result<W, WriteError> {
        if let Some(t) = self.next_tensor() {
            return invalid(format!(
                "tensor '{}' incomplete: {} of {} bytes written ({} tensors missing)",
                t.name,
                self.written,
                t.n_bytes(),
                self.tensors.len() - self.next
            ));
        }
        self.out.into_inner().map_err(|e| WriteError::Io(e.into_error()))
    }
}
