fn main() {
    let p = std::env::args().nth(1).expect("usage: ls FILE");
    let g = ds4_gguf::Gguf::open(&p).unwrap_or_else(|e| { eprintln!("{e}"); std::process::exit(1) });
    for (k, v) in &g.metadata {
        let s = match v { ds4_gguf::MetaValue::Array(a) => format!("array[{}] {:?}", a.len(), &a[..a.len().min(8)]), v => format!("{v:?}") };
        println!("{k} = {s}");
    }
    for t in &g.tensors { println!("{} {:?} {}", t.name, t.dims, t.ty); }
}
