//! The model-level rounding steps against `numerics/` (bit-exact expected).

mod common;
use common::*;
use ds4_engine::ops;

fn case(name: &str, f: impl Fn(&mut [f32])) {
    let man = manifest();
    let c = &man["numerics"][name];
    let input = read_f32(&fixtures().join(c["input"]["file"].as_str().unwrap()));
    let want = read_f32(&fixtures().join(c["output"]["file"].as_str().unwrap()));
    let cols = c["input"]["shape"][1].as_u64().unwrap() as usize;
    let mut got = input.clone();
    for row in got.chunks_mut(cols) {
        f(row);
    }
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // == treats -0 and +0 alike (the sign of a zero carries no information here).
        if g != w {
            if bad < 5 {
                eprintln!("{name}: row {} col {}: in {} got {g:e} want {w:e}", i / cols, i % cols, input[i]);
            }
            bad += 1;
        }
    }
    eprintln!("{name}: {} values, {bad} differ", got.len());
    assert_eq!(bad, 0, "{name}");
}

#[test]
fn fp8_kv_roundtrip_bit_exact() {
    let n_nope = manifest()["numerics"]["fp8_kv_roundtrip"]["n_nope"].as_u64().unwrap() as usize;
    case("fp8_kv_roundtrip", |r| ops::fp8_roundtrip(r, n_nope));
}

#[test]
fn fp4_roundtrip_bit_exact() {
    case("fp4_roundtrip", ops::fp4_roundtrip);
}

#[test]
fn indexer_qat_bit_exact() {
    for n in ["indexer_qat_32", "indexer_qat_64", "indexer_qat_128"] {
        case(n, ops::indexer_qat);
    }
}
