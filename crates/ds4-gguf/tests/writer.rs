//! Writer <-> reader round trips and writer misuse.

mod common;
use common::{random_tensor, Rng};
use ds4_gguf::{GgmlType, Gguf, GgufHeader, MetaValue, TensorSpec, WriteError};

fn all_value_types() -> Vec<(String, MetaValue)> {
    use MetaValue::*;
    vec![
        ("general.architecture".into(), Str("deepseek4".into())),
        ("t.u8".into(), U8(200)),
        ("t.i8".into(), I8(-5)),
        ("t.u16".into(), U16(65000)),
        ("t.i16".into(), I16(-30000)),
        ("t.u32".into(), U32(4_000_000_000)),
        ("t.i32".into(), I32(-2_000_000_000)),
        ("t.f32".into(), F32(1e-6)),
        ("t.bool".into(), Bool(true)),
        ("t.bool_f".into(), Bool(false)),
        ("t.str".into(), Str("<｜User｜> ünïcode ｜DSML｜".into())),
        ("t.empty_str".into(), Str(String::new())),
        ("t.u64".into(), U64(u64::MAX)),
        ("t.i64".into(), I64(i64::MIN)),
        ("t.f64".into(), F64(-2.5e300)),
        ("t.arr_i32".into(), Array(vec![I32(0), I32(0), I32(4), I32(128)])),
        ("t.arr_str".into(), Array(vec![Str("a".into()), Str("Ġb c".into()), Str("".into())])),
        ("t.arr_f32".into(), Array((0..43).map(|_| F32(10.0)).collect())),
        ("t.arr_bool".into(), Array(vec![Bool(true), Bool(false)])),
        ("t.arr_empty".into(), Array(vec![])),
        (
            "t.nested".into(),
            Array(vec![
                Array(vec![U8(1), U8(2)]),
                Array(vec![]),
                Array(vec![U8(3)]),
            ]),
        ),
        (
            "t.nested3".into(),
            Array(vec![Array(vec![Array(vec![Str("deep".into())]), Array(vec![Str("x".into())])])]),
        ),
    ]
}

fn sample_tensors(rng: &mut Rng) -> Vec<(TensorSpec, Vec<u8>)> {
    let specs = vec![
        TensorSpec::new("token_embd.weight", &[64, 10], GgmlType::F16),
        TensorSpec::new("output_hc_base.weight", &[4], GgmlType::F32),
        TensorSpec::new("output_hc_scale.weight", &[1], GgmlType::F32),
        TensorSpec::new("blk.0.attn_q_a.weight", &[64, 3], GgmlType::Q8_0),
        TensorSpec::new("blk.0.ffn_gate_exps.weight", &[256, 3, 2], GgmlType::Iq2Xxs),
        TensorSpec::new("blk.0.ffn_down_exps.weight", &[256, 2, 2], GgmlType::Q2K),
        TensorSpec::new("blk.0.ffn_up_exps.weight", &[512, 1, 3], GgmlType::Q4K),
        TensorSpec::new("blk.0.ffn_gate_tid2eid.weight", &[2, 10], GgmlType::I32),
        TensorSpec::new("b.weight", &[3], GgmlType::Bf16),
    ];
    specs
        .into_iter()
        .map(|s| {
            let n = s.n_elements() as usize;
            let data = match s.ty {
                GgmlType::I32 => (0..n as i32).flat_map(|v| (v % 8).to_le_bytes()).collect(),
                ty => random_tensor(rng, ty, n, 0.1),
            };
            assert_eq!(data.len() as u64, s.n_bytes());
            (s, data)
        })
        .collect()
}

fn build(alignment: Option<u32>, rng: &mut Rng) -> (GgufHeader, Vec<(TensorSpec, Vec<u8>)>) {
    let mut h = GgufHeader::new();
    for (k, v) in all_value_types() {
        h.set(k, v);
    }
    if let Some(a) = alignment {
        h.set("general.alignment", MetaValue::U32(a));
    }
    let ts = sample_tensors(rng);
    for (s, _) in &ts {
        h.add_tensor(s.clone());
    }
    (h, ts)
}

fn check_roundtrip(g: &Gguf, h: &GgufHeader, ts: &[(TensorSpec, Vec<u8>)], align: u64) {
    assert_eq!(g.version, 3);
    assert_eq!(g.alignment, align);
    assert_eq!(g.metadata, h.metadata().to_vec());
    assert_eq!(g.tensors.len(), ts.len());
    for ((s, data), t) in ts.iter().zip(&g.tensors) {
        assert_eq!(t.name, s.name);
        assert_eq!(t.dims, s.dims);
        assert_eq!(t.ty, s.ty);
        assert_eq!(t.offset % align, 0, "{} misaligned", t.name);
        assert_eq!(g.tensor_data(t), &data[..], "{} data", t.name);
        assert!(std::ptr::eq(g.tensor(&s.name).unwrap(), t));
    }
}

#[test]
fn roundtrip_in_memory_all_value_types() {
    for align in [None, Some(64), Some(1), Some(4096)] {
        let mut rng = Rng(1);
        let (h, ts) = build(align, &mut rng);
        let layout = h.layout().unwrap();
        let datas: Vec<&[u8]> = ts.iter().map(|(_, d)| &d[..]).collect();
        let bytes = h.clone().to_bytes(&datas).unwrap();
        assert_eq!(bytes.len() as u64, layout.total_bytes, "dry-run size equals the written size");
        assert_eq!(&bytes[..layout.header_bytes as usize], &h.table_bytes().unwrap()[..]);
        let g = Gguf::from_bytes(bytes).unwrap();
        assert_eq!(g.data_start, layout.data_start);
        for (t, rel) in g.tensors.iter().zip(&layout.rel_offsets) {
            assert_eq!(t.offset, layout.data_start + rel);
        }
        check_roundtrip(&g, &h, &ts, align.map_or(32, |a| a as u64));
        // Typed accessors on the parsed metadata.
        assert_eq!(g.meta("t.u32").unwrap().as_u64(), Some(4_000_000_000));
        assert_eq!(g.meta("t.i64").unwrap().as_i64(), Some(i64::MIN));
        assert_eq!(g.meta("t.f32").unwrap().as_f64(), Some(1e-6f32 as f64));
        assert_eq!(g.meta_str_array("t.arr_str").unwrap(), vec!["a", "Ġb c", ""]);
    }
}

#[test]
fn roundtrip_streamed_in_pieces_to_file() {
    let mut rng = Rng(2);
    let (h, ts) = build(Some(128), &mut rng);
    let path = std::env::temp_dir().join(format!("ds4-gguf-writer-{}.gguf", std::process::id()));
    let layout = h.layout().unwrap();
    let file = std::fs::File::create(&path).unwrap();
    let mut w = h.clone().write(file).unwrap();
    for (s, data) in &ts {
        assert_eq!(w.next_tensor().unwrap().name, s.name);
        // Uneven pieces, including empty ones.
        let mut at = 0;
        let mut step = 1;
        while at < data.len() {
            let end = (at + step).min(data.len());
            w.write_data(&data[at..end]).unwrap();
            w.write_data(&[]).unwrap();
            at = end;
            step = step * 3 + 1;
        }
    }
    assert!(w.next_tensor().is_none());
    w.finish().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), layout.total_bytes);
    let g = Gguf::open(&path).unwrap();
    check_roundtrip(&g, &h, &ts, 128);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn header_only_file_matches_layout() {
    let mut rng = Rng(3);
    let (h, _) = build(None, &mut rng);
    let table = h.table_bytes().unwrap();
    let layout = h.layout().unwrap();
    assert_eq!(table.len() as u64, layout.header_bytes);
    // A header-only image is correctly rejected by the reader as truncated, naming a tensor.
    let err = Gguf::from_bytes(table).err().unwrap().to_string();
    assert!(err.contains("token_embd.weight") && err.contains("beyond the end"), "{err}");
}

#[test]
fn writer_rejects_misuse() {
    let mut rng = Rng(4);
    let (h, ts) = build(None, &mut rng);
    // Wrong whole-tensor size.
    let mut w = h.clone().write(Vec::new()).unwrap();
    assert!(matches!(w.write_tensor(&ts[0].1[1..]), Err(WriteError::Invalid(_))));
    // Overrun of the current tensor.
    let mut big = ts[0].1.clone();
    big.push(0);
    assert!(w.write_data(&big).is_err());
    // Incomplete file.
    w.write_tensor(&ts[0].1).unwrap();
    let e = w.finish().err().unwrap().to_string();
    assert!(e.contains("output_hc_base.weight") && e.contains("incomplete"), "{e}");
    // Past the end.
    let mut w = h.clone().write(Vec::new()).unwrap();
    for (_, d) in &ts {
        w.write_tensor(d).unwrap();
    }
    assert!(w.write_tensor(&[1]).is_err());
    assert!(w.write_data(&[1]).is_err());
    w.finish().unwrap();

    let bad = |f: &dyn Fn(&mut GgufHeader)| {
        let mut h = GgufHeader::new();
        f(&mut h);
        h.layout().err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(bad(&|h| {
        h.set("a", MetaValue::Array(vec![MetaValue::U8(1), MetaValue::I8(1)]));
    })
    .contains("mixed"));
    assert!(bad(&|h| {
        h.add_tensor(TensorSpec::new("x", &[100], GgmlType::Q8_0));
    })
    .contains("multiple"));
    assert!(bad(&|h| {
        h.add_tensor(TensorSpec::new("x", &[32], GgmlType::F32));
        h.add_tensor(TensorSpec::new("x", &[32], GgmlType::F32));
    })
    .contains("duplicate"));
    assert!(bad(&|h| {
        h.add_tensor(TensorSpec::new("x", &[1, 1, 1, 1, 1], GgmlType::F32));
    })
    .contains("dims"));
    assert!(bad(&|h| {
        h.add_tensor(TensorSpec::new("x", &[u64::MAX, 2], GgmlType::F32));
    })
    .contains("overflow"));
    assert!(bad(&|h| {
        h.set("general.alignment", MetaValue::U32(48));
    })
    .contains("power of two"));
    let mut deep = MetaValue::Array(vec![MetaValue::U8(0)]);
    for _ in 0..9 {
        deep = MetaValue::Array(vec![deep]);
    }
    let d2 = deep.clone();
    assert!(bad(&move |h| {
        h.set("deep", d2.clone());
    })
    .contains("nested"));
    // `set` replaces in place, keeping file order.
    let mut h = GgufHeader::new();
    h.set("a", MetaValue::U8(1)).set("b", MetaValue::U8(2)).set("a", MetaValue::U8(3));
    assert_eq!(h.metadata(), &[("a".to_string(), MetaValue::U8(3)), ("b".to_string(), MetaValue::U8(2))]);
}

#[test]
fn zero_tensor_file() {
    let mut h = GgufHeader::new();
    h.set("k", MetaValue::Str("v".into()));
    let bytes = h.clone().to_bytes(&[]).unwrap();
    assert_eq!(bytes.len() as u64, h.layout().unwrap().total_bytes);
    let g = Gguf::from_bytes(bytes).unwrap();
    assert!(g.tensors.is_empty());
    assert_eq!(g.meta("k").unwrap().as_str(), Some("v"));
}

/// Re-writing each fixture GGUF (written by gguf-py) through our writer reproduces it byte for
/// byte: same value encodings, table, offsets and padding.
#[test]
fn fixture_files_rewrite_identically() {
    let dir = common::shared_dir().join("fixtures/model");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path().join("model.gguf");
        if !p.exists() {
            continue;
        }
        let orig = std::fs::read(&p).unwrap();
        let g = Gguf::open(&p).unwrap();
        let mut h = GgufHeader::new();
        for (k, v) in &g.metadata {
            h.set(k.clone(), v.clone());
        }
        for t in &g.tensors {
            h.add_tensor(TensorSpec::new(t.name.clone(), &t.dims, t.ty));
        }
        assert_eq!(h.layout().unwrap().total_bytes, orig.len() as u64, "{}", p.display());
        let datas: Vec<&[u8]> = g.tensors.iter().map(|t| g.tensor_data(t)).collect();
        let out = h.to_bytes(&datas).unwrap();
        assert!(out == orig, "{}: rewrite differs", p.display());
        n += 1;
    }
    assert_eq!(n, 4);
}
