//! Fuzz the GGUF parser and, for files that parse, the dequantizers on their tensor bytes.
#![no_main]

use ds4_gguf::{quant, Gguf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(g) = Gguf::from_bytes(data.to_vec()) else { return };
    for (k, v) in &g.metadata {
        assert!(g.meta(k).is_some());
        let _ = (v.as_u64(), v.as_i64(), v.as_f64(), v.as_str(), v.as_array());
    }
    for t in &g.tensors {
        let bytes = g.tensor_data(t);
        assert_eq!(bytes.len() as u64, t.n_bytes);
        // Bounded work: decode at most a few blocks of each tensor.
        let n = (t.n_elements().min(1024) as usize) / t.ty.block_len() * t.ty.block_len();
        let nb = t.ty.bytes_for(n as u64).unwrap() as usize;
        let mut out = vec![0f32; n];
        let _ = quant::dequantize(t.ty, &bytes[..nb], &mut out);
    }
});
