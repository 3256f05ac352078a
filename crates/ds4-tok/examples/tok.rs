//! Tokenize text with the tokenizer of a GGUF file.
//! cargo run --release -p ds4-tok --example tok -- MODEL.gguf [--chat] TEXT|@FILE
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: tok MODEL.gguf [--chat] TEXT|@FILE");
        std::process::exit(2);
    }
    let chat = args.iter().any(|a| a == "--chat");
    let text = args.iter().skip(1).find(|a| *a != "--chat").cloned().unwrap_or_default();
    let bytes = match text.strip_prefix('@') {
        Some(f) => std::fs::read(f).unwrap_or_else(|e| {
            eprintln!("{f}: {e}");
            std::process::exit(1)
        }),
        None => text.into_bytes(),
    };
    let t0 = Instant::now();
    let g = ds4_gguf::Gguf::open(&args[0]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let t1 = Instant::now();
    let tok = ds4_tok::Tokenizer::from_gguf(&g).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let t2 = Instant::now();
    eprintln!("gguf open {:.1} ms, tokenizer build {:.1} ms", (t1 - t0).as_secs_f64() * 1e3, (t2 - t1).as_secs_f64() * 1e3);
    print!("{}", ds4_tok::dump_prompt(&tok, &bytes, chat));
}
