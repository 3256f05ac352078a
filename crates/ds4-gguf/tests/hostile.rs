//! Malformed GGUF input: every case must return an error naming the problem, never panic and
//! never allocate far beyond the input size. Allocation is measured per thread by a counting
//! global allocator.

mod common;
use ds4_gguf::{GgmlType, Gguf, GgufHeader, MetaValue, TensorSpec};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;
thread_local! {
    static CUR: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = CUR.try_with(|c| {
            c.set(c.get() + l.size());
            let _ = PEAK.try_with(|p| p.set(p.get().max(c.get())));
        });
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let _ = CUR.try_with(|c| c.set(c.get().saturating_sub(l.size())));
        System.dealloc(p, l)
    }
}
#[global_allocator]
static A: Counting = Counting;

/// Parse and report (result, peak bytes allocated during the parse beyond the input).
fn parse(bytes: &[u8]) -> (Result<Gguf, String>, usize) {
    let v = bytes.to_vec();
    let base = CUR.with(|c| c.get());
    PEAK.with(|p| p.set(base));
    let r = Gguf::from_bytes(v).map_err(|e| e.to_string());
    let peak = PEAK.with(|p| p.get()) - base;
    (r, peak)
}

/// Allocation budget for parsing `n` bytes: the Vec itself, the parsed structures (a MetaValue
/// is 32 bytes per >= 1 input byte), index maps, plus a fixed allowance.
fn budget(n: usize) -> usize {
    n + 64 * n + (1 << 20)
}

/// Raw encoder that can write anything, including lies.
#[derive(Default, Clone)]
struct Raw(Vec<u8>);
impl Raw {
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, s: &str) -> Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }
    fn header(n_tensors: u64, n_kv: u64) -> Self {
        Raw::default().u32(0x4655_4747).u32(3).u64(n_tensors).u64(n_kv)
    }
    fn kv_u32(self, k: &str, v: u32) -> Self {
        self.str(k).u32(4).u32(v)
    }
    /// Tensor record.
    fn tensor(self, name: &str, dims: &[u64], ty: u32, rel: u64) -> Self {
        let mut r = self.str(name).u32(dims.len() as u32);
        for &d in dims {
            r = r.u64(d);
        }
        r.u32(ty).u64(rel)
    }
    fn pad_to(mut self, a: usize) -> Self {
        while self.0.len() % a != 0 {
            self.0.push(0);
        }
        self
    }
    fn zeros(mut self, n: usize) -> Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }
}

/// A valid two-tensor file, built raw (so the cases below can vary any one field).
fn valid() -> Raw {
    Raw::header(2, 1)
        .kv_u32("k", 7)
        .tensor("a", &[32], 0, 0)
        .tensor("b", &[32, 2], 8, 128)
        .pad_to(32)
        .zeros(128 + 68)
}

#[test]
fn raw_baseline_is_valid() {
    let (r, peak) = parse(&valid().0);
    let g = r.unwrap();
    assert!(peak > 0, "the allocation counter must see the parse");
    assert_eq!(g.tensors.len(), 2);
    assert_eq!(g.tensor("b").unwrap().ty, GgmlType::Q8_0);
}

#[test]
fn malformed_cases() {
    let deep = |depth: usize| {
        let mut r = Raw::header(0, 1).str("deep").u32(9);
        for _ in 0..depth {
            r = r.u32(9).u64(1);
        }
        r.u32(0).u64(0)
    };
    type Case = (&'static str, Vec<u8>, &'static str);
    let cases: Vec<Case> = vec![
        ("empty", vec![], "magic"),
        ("bad magic", Raw::default().u32(0x46554746).u32(3).u64(0).u64(0).0, "not GGUF"),
        ("version 2", Raw::default().u32(0x4655_4747).u32(2).u64(0).u64(0).0, "version 2"),
        ("version 4", Raw::default().u32(0x4655_4747).u32(4).u64(0).u64(0).0, "version 4"),
        ("huge tensor count", Raw::header(u64::MAX, 0).0, "tensor count"),
        ("huge kv count", Raw::header(0, u64::MAX).0, "metadata count"),
        ("lying kv count", Raw::header(0, 3).kv_u32("a", 1).kv_u32("b", 2).zeros(5).0, "metadata key #2"),
        ("lying tensor count", Raw::header(3, 0).tensor("a", &[32], 0, 0).zeros(39).0, "tensor ''"),
        ("huge string length", Raw::header(0, 1).u64(u64::MAX).zeros(16).0, "metadata key #0"),
        ("string past end", Raw::header(0, 1).u64(100).bytes(b"abc").zeros(2).0, "truncated"),
        ("kv cannot fit", Raw::header(0, 1).u64(100).bytes(b"abc").0, "cannot fit"),
        ("unknown value type", Raw::header(0, 1).str("k").u32(13).u32(0).0, "unknown value type 13"),
        ("value type u32::MAX", Raw::header(0, 1).str("k").u32(u32::MAX).u64(0).0, "unknown value type"),
        ("unknown array elem type", Raw::header(0, 1).str("k").u32(9).u32(77).u64(1).u64(0).0, "unknown array element type 77"),
        ("huge array count", Raw::header(0, 1).str("k").u32(9).u32(0).u64(u64::MAX).0, "array count"),
        ("lying array count", Raw::header(0, 1).str("k").u32(9).u32(4).u64(1000).zeros(100).0, "array count 1000"),
        ("lying string array", Raw::header(0, 1).str("k").u32(9).u32(8).u64(3).str("x").str("y").0, "array count 3"),
        ("array string huge len", Raw::header(0, 1).str("k").u32(9).u32(8).u64(1).u64(u64::MAX - 3).0, "metadata 'k'"),
        ("deep nesting", deep(1000).0, "nested too deeply"),
        ("nesting 9", deep(9).0, "nested too deeply"),
        ("bad utf8 key", Raw::header(0, 1).u64(2).bytes(&[0xff, 0xfe]).u32(4).u32(0).0, "UTF-8"),
        ("bad utf8 value", Raw::header(0, 1).str("k").u32(8).u64(3).bytes(&[b'a', 0xc3, 0x28]).0, "UTF-8"),
        ("bad utf8 in array", Raw::header(0, 1).str("k").u32(9).u32(8).u64(1).u64(1).bytes(&[0x80]).0, "UTF-8"),
        ("bad utf8 tensor name", Raw::header(1, 0).u64(1).bytes(&[0xc0]).u32(1).u64(32).u32(0).u64(0).zeros(200).0, "UTF-8"),
        ("bool byte 2", Raw::header(0, 1).str("k").u32(7).u8(2).0, "bool byte is 2"),
        ("bool byte 255 in array", Raw::header(0, 1).str("k").u32(9).u32(7).u64(2).u8(1).u8(255).0, "bool byte is 255"),
        ("duplicate key", Raw::header(0, 2).kv_u32("k", 1).kv_u32("k", 2).0, "duplicate key"),
        ("alignment 0", Raw::header(0, 1).kv_u32("general.alignment", 0).0, "power of two"),
        ("alignment 48", Raw::header(0, 1).kv_u32("general.alignment", 48).0, "power of two"),
        ("alignment 2^31", Raw::header(0, 1).kv_u32("general.alignment", 1 << 31).0, "power of two"),
        ("alignment string", Raw::header(0, 1).str("general.alignment").u32(8).str("32").0, "general.alignment"),
        ("0 dims", Raw::header(1, 0).tensor("t", &[], 0, 0).zeros(64).0, "0 dimensions"),
        ("5 dims", Raw::header(1, 0).tensor("t", &[1, 1, 1, 1, 1], 0, 0).zeros(64).0, "5 dimensions"),
        ("n_dims u32::MAX", Raw::header(1, 0).str("t").u32(u32::MAX).zeros(64).0, "dimensions"),
        ("dims overflow", Raw::header(1, 0).tensor("t", &[1 << 40, 1 << 40], 0, 0).zeros(64).0, "overflows"),
        ("bytes overflow", Raw::header(1, 0).tensor("t", &[1 << 62, 2], 0, 0).zeros(64).0, "overflows"),
        ("unknown ggml type", Raw::header(1, 0).tensor("t", &[32], 2, 0).zeros(64).0, "unsupported ggml type 2"),
        ("ggml type 99", Raw::header(1, 0).tensor("t", &[32], 99, 0).zeros(64).0, "unsupported ggml type 99"),
        ("partial block", Raw::header(1, 0).tensor("t", &[33], 8, 0).zeros(128).0, "not a multiple"),
        ("misaligned offset", Raw::header(1, 0).tensor("t", &[8], 0, 4).zeros(128).0, "not aligned"),
        ("offset beyond file", Raw::header(1, 0).tensor("t", &[8], 0, 1 << 20).zeros(64).0, "beyond the end"),
        ("offset overflow", Raw::header(1, 0).tensor("t", &[8], 0, u64::MAX - 31).zeros(64).0, "beyond the end"),
        ("data truncated", Raw::header(1, 0).tensor("t", &[64], 0, 0).pad_to(32).zeros(255).0, "beyond the end"),
        (
            "overlapping tensors",
            Raw::header(2, 0).tensor("a", &[64], 0, 0).tensor("b", &[8], 0, 32).pad_to(32).zeros(256).0,
            "overlaps tensor 'a'",
        ),
        (
            "aliased tensors",
            Raw::header(2, 0).tensor("a", &[64], 0, 0).tensor("b", &[64], 0, 0).pad_to(32).zeros(256).0,
            "overlaps",
        ),
        (
            "duplicate tensor",
            Raw::header(2, 0).tensor("a", &[8], 0, 0).tensor("a", &[8], 0, 32).pad_to(32).zeros(256).0,
            "duplicate tensor name",
        ),
    ];
    let mut failures = Vec::new();
    for (name, bytes, want) in &cases {
        let (r, peak) = parse(bytes);
        match r {
            Ok(_) => failures.push(format!("{name}: parsed OK")),
            Err(e) if !e.contains(want) => failures.push(format!("{name}: error '{e}' lacks '{want}'")),
            Err(e) => {
                assert!(e.contains("offset") || e.contains("GGUF"), "{name}: {e}");
                if peak > budget(bytes.len()) {
                    failures.push(format!("{name}: allocated {peak} bytes for a {}-byte input", bytes.len()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Depth 8 (the limit) still parses: real files use depth 1, the limit only stops recursion bombs.
#[test]
fn nesting_at_limit_parses() {
    let mut r = Raw::header(0, 1).str("deep").u32(9);
    for _ in 0..7 {
        r = r.u32(9).u64(1);
    }
    let (res, _) = parse(&r.u32(0).u64(1).u8(5).0);
    res.unwrap();
}

fn writer_sample() -> (Vec<u8>, u64) {
    let mut rng = common::Rng(11);
    let mut h = GgufHeader::new();
    h.set("general.architecture", MetaValue::Str("deepseek4".into()));
    h.set("deepseek4.attention.compress_ratios", MetaValue::Array(vec![MetaValue::I32(0), MetaValue::I32(4)]));
    h.set("tokenizer.ggml.tokens", MetaValue::Array(vec![MetaValue::Str("<｜User｜>".into()), MetaValue::Str("a".into())]));
    h.set("nested", MetaValue::Array(vec![MetaValue::Array(vec![MetaValue::F64(1.0)])]));
    h.set("flag", MetaValue::Bool(true));
    let specs = [
        TensorSpec::new("x.weight", &[32, 2], GgmlType::Q8_0),
        TensorSpec::new("y.weight", &[256], GgmlType::Iq2Xxs),
        TensorSpec::new("z.weight", &[5], GgmlType::F32),
    ];
    let mut datas = Vec::new();
    for s in &specs {
        h.add_tensor(s.clone());
        datas.push(common::random_tensor(&mut rng, s.ty, s.n_elements() as usize, 0.1));
    }
    let layout = h.layout().unwrap();
    let last_end = layout.data_start + layout.rel_offsets[2] + specs[2].n_bytes();
    let refs: Vec<&[u8]> = datas.iter().map(|d| &d[..]).collect();
    (h.to_bytes(&refs).unwrap(), last_end)
}

/// Truncation at every byte: an error before the last tensor's data ends, success after.
#[test]
fn truncated_at_every_byte() {
    let (file, last_end) = writer_sample();
    assert!(Gguf::from_bytes(file.clone()).is_ok());
    for len in 0..file.len() {
        let (r, peak) = parse(&file[..len]);
        assert!(peak <= budget(len), "cut at {len}: allocated {peak}");
        match r {
            Err(e) => assert!((len as u64) < last_end, "cut at {len} (trailing padding) failed: {e}"),
            Ok(_) => assert!(len as u64 >= last_end, "cut at {len} parsed"),
        }
    }
}

/// Single-byte corruption anywhere in the header: may parse or fail, never panics, never
/// allocates beyond the budget.
#[test]
fn every_header_byte_flipped() {
    let (file, _) = writer_sample();
    let g = Gguf::from_bytes(file.clone()).unwrap();
    let header_end = g.data_start as usize;
    for i in 0..header_end {
        for v in [0x00u8, 0xff, 0x80, 0x7f, file[i] ^ 1, file[i].wrapping_add(9)] {
            let mut f = file.clone();
            f[i] = v;
            let (r, peak) = parse(&f);
            assert!(peak <= budget(f.len()), "byte {i} = {v:#x}: allocated {peak}");
            if let Ok(g) = r {
                for t in &g.tensors {
                    let _ = g.tensor_data(t);
                }
            }
        }
    }
}

/// Fixture files: truncated at each section boundary and at many points of the header.
#[test]
fn fixture_truncations() {
    let p = common::shared_dir().join("fixtures/model/t256-q2/model.gguf");
    let file = std::fs::read(&p).unwrap();
    let g = Gguf::from_bytes(file.clone()).unwrap();
    let mut cuts: Vec<usize> = vec![0, 3, 4, 7, 8, 15, 16, 23, 24];
    cuts.extend((0..g.data_start as usize).step_by(97));
    cuts.push(g.data_start as usize);
    for t in &g.tensors {
        cuts.push(t.offset as usize);
        cuts.push((t.offset + t.n_bytes) as usize - 1);
    }
    for len in cuts {
        let (r, _) = parse(&file[..len]);
        let e = r.err().unwrap_or_else(|| panic!("cut at {len} parsed"));
        assert!(e.contains("offset"), "{e}");
    }
}

#[test]
fn open_errors_name_the_path() {
    let e = Gguf::open("/nonexistent/x.gguf").err().unwrap().to_string();
    assert!(e.contains("/nonexistent/x.gguf"), "{e}");
    let p = std::env::temp_dir().join(format!("ds4-gguf-empty-{}.gguf", std::process::id()));
    std::fs::write(&p, b"").unwrap();
    assert!(Gguf::open(&p).is_err());
    std::fs::write(&p, b"GGUF").unwrap();
    assert!(Gguf::open(&p).err().unwrap().to_string().contains("version"));
    std::fs::remove_file(&p).unwrap();
}
