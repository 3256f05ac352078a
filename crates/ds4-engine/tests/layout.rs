//! Loading: every fixture binds with all widths from metadata; mutated files report every
//! mismatch; the metadata validation policy.

mod common;
use common::*;
use ds4_engine::layout::{self, Variant};
use ds4_engine::{Hparams, Model, ModelError};
use ds4_gguf::{GgmlType, Gguf, MetaValue};

#[test]
fn every_fixture_binds_with_manifest_dims() {
    let man = manifest();
    for m in man["models"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let model = Model::load(fixtures().join(m["gguf"].as_str().unwrap())).unwrap_or_else(|e| panic!("{name}: {e}"));
        let hp = &model.hp;
        let d = &m["dims"];
        let u = |k: &str| d[k].as_u64().unwrap() as usize;
        assert_eq!(hp.n_layer, u("n_layer"), "{name}");
        assert_eq!(hp.n_vocab, u("n_vocab"));
        assert_eq!(hp.n_embd, u("n_embd"));
        assert_eq!(hp.n_head, u("n_head"));
        assert_eq!(hp.head_dim, u("head_dim"));
        assert_eq!(hp.rope_dim, u("rope_dim"));
        assert_eq!(hp.q_lora_rank, u("q_lora_rank"));
        assert_eq!(hp.o_groups, u("output_groups"));
        assert_eq!(hp.o_lora_rank, u("output_lora_rank"));
        assert_eq!(hp.n_expert, u("n_expert"));
        assert_eq!(hp.n_expert_used, u("n_expert_used"));
        assert_eq!(hp.expert_ff, u("expert_ff"));
        assert_eq!(hp.idx_heads, u("indexer_heads"));
        assert_eq!(hp.idx_head_dim, u("indexer_head_dim"));
        assert_eq!(hp.idx_top_k, u("indexer_top_k"));
        assert_eq!(hp.n_hc, u("n_hc"));
        assert_eq!(hp.sinkhorn_iters, u("sinkhorn_iters"));
        assert_eq!(hp.sliding_window, u("sliding_window"));
        assert_eq!(hp.n_hash_layers, u("hash_layers"));
        assert_eq!(hp.nope_dim(), u("fp8_kv_nope_dims"));
        let ratios: Vec<usize> = d["compress_ratios"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        assert_eq!(hp.compress_ratios, ratios);
        let et: Vec<&str> = m["expert_types"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        for l in &model.layers {
            assert_eq!([l.gate_exps.ty.name(), l.up_exps.ty.name(), l.down_exps.ty.name()], et[..]);
            assert_eq!(l.tid2eid.is_some(), l.index < hp.n_hash_layers);
            assert_eq!(l.exp_probs_b.is_some(), l.index >= hp.n_hash_layers);
        }
        // The exact-variant table matches the file too (what the synth tool will write).
        let v = match et[0] {
            "F32" => Variant::F32,
            "F16" => Variant::F16,
            "IQ2_XXS" => Variant::Q2,
            _ => Variant::Q4,
        };
        layout::check(&layout::expected_tensors(hp, v), |n| model.gguf().tensor(n)).unwrap();
        // And every tensor in the file is in the table (nothing unbound).
        let specs = layout::expected_tensors(hp, Variant::Any);
        for t in &model.gguf().tensors {
            assert!(specs.iter().any(|s| s.name == t.name), "{name}: unexpected tensor {}", t.name);
        }
        eprintln!("{name}: bound {} tensors, {} layers", model.gguf().tensors.len(), hp.n_layer);
    }
}

#[test]
fn mutated_file_reports_all_mismatches() {
    let g = Gguf::open(fixtures().join("t256-q4/model.gguf")).unwrap();
    let mut tensors = tensor_list(&g);
    let mut expect = Vec::new();
    // 1. wrong type of a Q8_0 projection
    let i = tensors.iter().position(|t| t.0 == "blk.1.attn_q_a.weight").unwrap();
    tensors[i].2 = GgmlType::F16;
    expect.push("blk.1.attn_q_a.weight");
    // 2. wrong dims of a norm
    let i = tensors.iter().position(|t| t.0 == "blk.3.attn_kv_a_norm.weight").unwrap();
    tensors[i].1 = vec![81];
    expect.push("blk.3.attn_kv_a_norm.weight");
    // 3. missing compressor tensor
    tensors.retain(|t| t.0 != "blk.4.attn_compressor_gate.weight");
    expect.push("blk.4.attn_compressor_gate.weight");
    // 4. gate/up type disagreement in one layer
    let i = tensors.iter().position(|t| t.0 == "blk.5.ffn_up_exps.weight").unwrap();
    tensors[i].2 = GgmlType::Iq2Xxs;
    expect.push("blk.5.ffn_up_exps.weight");
    // 5. unsupported routed type for experts (Q8_0)
    let i = tensors.iter().position(|t| t.0 == "blk.0.ffn_down_exps.weight").unwrap();
    tensors[i].2 = GgmlType::Q8_0;
    expect.push("blk.0.ffn_down_exps.weight");
    // an extra unknown tensor is tolerated
    tensors.push(("blk.0.some_future.weight".into(), vec![32], GgmlType::F32));
    let bytes = write_gguf(&g.metadata, &tensors, Some(&g));
    let err = Model::from_gguf(Gguf::from_bytes(bytes).unwrap()).unwrap_err();
    let ModelError::Layout(le) = &err else { panic!("expected a layout error, got {err}") };
    eprintln!("{err}");
    let names: Vec<&str> = le.mismatches.iter().map(|m| m.tensor.as_str()).collect();
    assert_eq!(names.len(), expect.len(), "{names:?}");
    for e in expect {
        assert!(names.contains(&e), "{e} not reported in {names:?}");
    }
    let m = le.mismatches.iter().find(|m| m.tensor == "blk.1.attn_q_a.weight").unwrap();
    assert_eq!(m.expected, "Q8_0 [256, 64]");
    assert_eq!(m.found, "F16 [256, 64]");
    assert!(err.to_string().contains("blk.4.attn_compressor_gate.weight: expected F16 [256, 160], found missing"));
}

#[test]
fn hash_table_out_of_range_is_reported() {
    let g = Gguf::open(fixtures().join("tiny-f32/model.gguf")).unwrap();
    let t = g.tensor("blk.1.ffn_gate_tid2eid.weight").unwrap().clone();
    let mut bytes = g.bytes().to_vec();
    bytes[t.offset as usize + 8..t.offset as usize + 12].copy_from_slice(&99i32.to_le_bytes());
    let err = Model::from_gguf(Gguf::from_bytes(bytes).unwrap()).unwrap_err();
    assert!(err.to_string().contains("blk.1.ffn_gate_tid2eid.weight: expected expert ids in 0..8, found 99 at entry 2"), "{err}");
}

fn meta_with(g: &Gguf, edits: &[(&str, Option<MetaValue>)]) -> Vec<(String, MetaValue)> {
    let mut meta: Vec<(String, MetaValue)> = g.metadata.clone();
    for (k, v) in edits {
        let k = format!("deepseek4.{k}");
        meta.retain(|(kk, _)| *kk != k);
        if let Some(v) = v {
            meta.push((k, v.clone()));
        }
    }
    meta
}

fn hp_of(meta: &[(String, MetaValue)]) -> Result<Hparams, ds4_engine::HparamsError> {
    Hparams::from_gguf(&Gguf::from_bytes(write_gguf(meta, &[], None)).unwrap())
}

#[test]
fn metadata_policy() {
    let g = Gguf::open(fixtures().join("tiny-f32/model.gguf")).unwrap();
    let base = hp_of(&g.metadata).unwrap();
    // Tolerated: longer per-layer arrays (MTP entry), missing optional keys, unknown keys,
    // f64/u32 coercion of float keys.
    let mut ratios: Vec<MetaValue> = base.compress_ratios.iter().map(|&r| MetaValue::I32(r as i32)).collect();
    ratios.push(MetaValue::I32(0));
    let mut clamp: Vec<MetaValue> = vec![MetaValue::F32(10.0); base.n_layer];
    clamp.push(MetaValue::F32(10.0));
    let hp = hp_of(&meta_with(
        &g,
        &[
            ("attention.compress_ratios", Some(MetaValue::Array(ratios))),
            ("swiglu_clamp_exp", Some(MetaValue::Array(clamp))),
            ("expert_group_count", None),
            ("expert_group_used_count", None),
            ("swiglu_clamp_shexp", None),
            ("some.future_key", Some(MetaValue::Str("x".into()))),
            ("rope.freq_base", Some(MetaValue::F64(10000.0))),
            ("expert_weights_scale", Some(MetaValue::F64(1.5))),
            ("attention.compress_rope_freq_base", Some(MetaValue::U32(160000))),
        ],
    ))
    .unwrap();
    assert_eq!(hp.compress_ratios, base.compress_ratios);
    assert_eq!(hp.extra_compress_ratios, vec![0]);
    assert_eq!(hp.compress_rope_freq_base, 160000.0);

    // Structural violations are refused at any width.
    let bad: Vec<(&str, MetaValue, &str)> = vec![
        ("attention.head_count_kv", MetaValue::U32(2), "head_count_kv"),
        ("rope.dimension_count", MetaValue::U32(15), "rope.dimension_count"),
        ("attention.key_length", MetaValue::U32(96), "key_length"),
        ("attention.output_group_count", MetaValue::U32(3), "output_group_count"),
        ("expert_used_count", MetaValue::U32(9), "expert_used_count"),
        ("attention.indexer.key_length", MetaValue::U32(48), "indexer.key_length"),
        ("expert_group_count", MetaValue::U32(2), "expert_group_count"),
        (
            "attention.compress_ratios",
            MetaValue::Array([0, 0, 128, 4, 4, 128].iter().map(|&r| MetaValue::I32(r)).collect()),
            "compress_ratios",
        ),
        ("attention.compress_ratios", MetaValue::Array(vec![MetaValue::I32(0); 3]), "compress_ratios"),
        ("hyper_connection.epsilon", MetaValue::Str("1e-6".into()), "hyper_connection.epsilon"),
    ];
    for (k, v, want) in bad {
        let err = hp_of(&meta_with(&g, &[(k, Some(v.clone()))])).expect_err(k);
        assert!(err.to_string().contains(want), "{k}={v:?}: {err}");
    }
    let err = hp_of(&meta_with(&g, &[("block_count", None)])).unwrap_err();
    assert_eq!(err.to_string(), "metadata key 'deepseek4.block_count' is missing");

    // A file claiming the full width must carry every published value.
    let full = ds4_engine::Hparams::published();
    let published_meta = |edits: &[(&str, MetaValue)]| {
        let mut m = vec![("general.architecture".to_string(), MetaValue::Str("deepseek4".into()))];
        let u = |v: usize| MetaValue::U32(v as u32);
        let mut kv: Vec<(&str, MetaValue)> = vec![
            ("block_count", u(full.n_layer)),
            ("embedding_length", u(full.n_embd)),
            ("vocab_size", u(full.n_vocab)),
            ("attention.head_count", u(64)),
            ("attention.head_count_kv", u(1)),
            ("attention.key_length", u(512)),
            ("attention.value_length", u(512)),
            ("rope.dimension_count", u(64)),
            ("attention.q_lora_rank", u(1024)),
            ("attention.output_lora_rank", u(1024)),
            ("attention.output_group_count", u(8)),
            ("expert_count", u(256)),
            ("expert_used_count", u(6)),
            ("expert_feed_forward_length", u(2048)),
            ("expert_shared_count", u(1)),
            ("hash_layer_count", u(3)),
            ("attention.sliding_window", u(128)),
            ("attention.indexer.head_count", u(64)),
            ("attention.indexer.key_length", u(128)),
            ("attention.indexer.top_k", u(512)),
            ("hyper_connection.count", u(4)),
            ("hyper_connection.sinkhorn_iterations", u(20)),
            ("hyper_connection.epsilon", MetaValue::F32(1e-6)),
            (
                "attention.compress_ratios",
                MetaValue::Array((0..44).map(|l| MetaValue::I32(if l == 43 { 0 } else { ds4_engine::hparams::flash_ratio(l) as i32 })).collect()),
            ),
            ("swiglu_clamp_exp", MetaValue::Array(vec![MetaValue::F32(10.0); 44])),
            ("rope.freq_base", MetaValue::F32(10000.0)),
            ("rope.scaling.factor", MetaValue::F32(16.0)),
            ("rope.scaling.original_context_length", u(65536)),
            ("rope.scaling.yarn_beta_fast", MetaValue::F32(32.0)),
            ("rope.scaling.yarn_beta_slow", MetaValue::F32(1.0)),
            ("attention.compress_rope_freq_base", MetaValue::F32(160000.0)),
            ("expert_weights_scale", MetaValue::F32(1.5)),
            ("attention.layer_norm_rms_epsilon", MetaValue::F32(1e-6)),
            ("expert_weights_norm", MetaValue::Bool(true)),
        ];
        for (k, v) in edits {
            kv.retain(|(kk, _)| kk != k);
            kv.push((k, v.clone()));
        }
        m.extend(kv.into_iter().map(|(k, v)| (format!("deepseek4.{k}"), v)));
        m
    };
    let hp = hp_of(&published_meta(&[])).unwrap();
    assert_eq!(hp, full);
    for (k, v) in [
        ("vocab_size", MetaValue::U32(1000)),
        ("attention.indexer.top_k", MetaValue::U32(256)),
        ("expert_weights_scale", MetaValue::F32(2.0)),
        ("rope.freq_base", MetaValue::F32(10001.0)),
        ("expert_weights_norm", MetaValue::Bool(false)),
    ] {
        let err = hp_of(&published_meta(&[(k, v)])).expect_err(k);
        assert!(err.to_string().contains(k), "{err}");
        eprintln!("refused: {err}");
    }
}

#[test]
fn mtp_table_is_self_consistent() {
    // No MTP fixture exists; check the table against a synthetic tensor list built from it,
    // then against one with an F16 mixer (accepted) and a missing router bias (refused).
    let hp = Hparams::published();
    let specs = layout::expected_mtp_tensors(&hp, Variant::Q4);
    assert!(specs.iter().all(|s| s.name.starts_with("mtp.0.")));
    assert!(specs.iter().any(|s| s.name == "mtp.0.e_proj.weight"));
    assert!(!specs.iter().any(|s| s.name.contains("compressor") || s.name.contains("tid2eid")));
    let mut infos: Vec<ds4_gguf::TensorInfo> = specs
        .iter()
        .map(|s| ds4_gguf::TensorInfo { name: s.name.clone(), dims: s.dims.clone(), ty: s.types[0], offset: 0, n_bytes: 0 })
        .collect();
    let any = layout::expected_mtp_tensors(&hp, Variant::Any);
    layout::check(&any, |n| infos.iter().find(|t| t.name == n)).unwrap();
    infos.iter_mut().find(|t| t.name == "mtp.0.hc_attn_fn.weight").unwrap().ty = GgmlType::F16;
    infos.retain(|t| t.name != "mtp.0.exp_probs_b.bias");
    let err = layout::check(&any, |n| infos.iter().find(|t| t.name == n)).unwrap_err();
    assert_eq!(err.mismatches.len(), 1);
    assert_eq!(err.mismatches[0].tensor, "mtp.0.exp_probs_b.bias");
}

#[test]
fn mtp_file_binds_and_reports_mismatches() {
    // A synthetic MTP GGUF for the tiny model's widths (zero data; binding only reads the table
    // and small vectors).
    let model = Model::load(fixtures().join("tiny-f32/model.gguf")).unwrap();
    let hp = &model.hp;
    let specs = layout::expected_mtp_tensors(hp, Variant::F32);
    let mut tensors: Vec<(String, Vec<u64>, GgmlType)> = specs.iter().map(|s| (s.name.clone(), s.dims.clone(), s.types[0])).collect();
    let meta = vec![("general.architecture".to_string(), MetaValue::Str("deepseek4-mtp".into()))];
    let mtp = ds4_engine::model::MtpWeights::from_gguf(Gguf::from_bytes(write_gguf(&meta, &tensors, None)).unwrap(), hp).unwrap();
    assert_eq!(mtp.block.index, hp.n_layer);
    assert_eq!(mtp.block.ratio, 0);
    assert!(mtp.block.exp_probs_b.is_some() && mtp.block.tid2eid.is_none() && mtp.block.comp.is_none());
    assert_eq!((mtp.e_proj.rows, mtp.e_proj.cols), (hp.n_embd, hp.n_embd));
    // Break three tensors: all three reported.
    tensors.retain(|t| t.0 != "mtp.0.h_proj.weight");
    tensors.iter_mut().find(|t| t.0 == "mtp.0.ffn_up_exps.weight").unwrap().2 = GgmlType::F16;
    tensors.iter_mut().find(|t| t.0 == "mtp.0.hnorm.weight").unwrap().1 = vec![65];
    let err = ds4_engine::model::MtpWeights::from_gguf(Gguf::from_bytes(write_gguf(&meta, &tensors, None)).unwrap(), hp).err().unwrap();
    let ModelError::Layout(le) = &err else { panic!("{err}") };
    let mut names: Vec<&str> = le.mismatches.iter().map(|m| m.tensor.as_str()).collect();
    names.sort();
    assert_eq!(names, ["mtp.0.ffn_up_exps.weight", "mtp.0.h_proj.weight", "mtp.0.hnorm.weight"], "{err}");
}
