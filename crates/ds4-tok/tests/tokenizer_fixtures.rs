//! Tokenizer checks that need no Python: the fixture ids produced by the real tokenizer, the
//! special-token table, and hostile inputs.

mod common;
use common::*;
use ds4_tok::{StreamDecoder, Tokenizer};

#[test]
fn tokenizer_cases_json() {
    let v = read_json(shared_dir().join("fixtures/model/tokenizer_cases.json"));
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let text = c["text"].as_str().unwrap();
        assert_eq!(tok().encode(text), ids_of(&c["ids"]), "{text:?}");
    }
}

#[test]
fn chat_fixture_official_ids_in_both_entry_points() {
    let dir = shared_dir().join("fixtures/chat");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let v = read_json(p.clone());
        let text = v["expected_official"].as_str().unwrap();
        let want = ids_of(&v["expected_official_token_ids"]);
        assert_eq!(tok().encode(text), want, "{}", p.display());
        // Only the seven serving specials occur in these texts, so the chat entry point agrees.
        assert_eq!(tok().encode_chat(text), want, "{}", p.display());
        n += 1;
    }
    assert_eq!(n, 22);
}

#[test]
fn special_ids_match_the_spec() {
    let t = tok();
    let s = t.special();
    assert_eq!((s.bos, s.eos, s.user, s.assistant, s.think, s.think_end, s.dsml), (0, 1, 128803, 128804, 128821, 128822, 128825));
    assert_eq!(t.vocab_size(), 129280);
    assert_eq!(t.added_token_id("<｜latest_reminder｜>"), Some(128828));
    assert_eq!(t.added_token_id("<｜▁pad▁｜>"), Some(2));
    assert_eq!(t.token_bytes(0), Some(ds4_tok::BOS.as_bytes()));
    assert_eq!(t.token_text(223), Some("Ġ"));
    assert_eq!(t.token_to_id("Ġ"), Some(223));
    assert_eq!(t.token_bytes(129280), None);
    // Plain matches every added token; chat only the seven serving specials.
    let x = "a<｜latest_reminder｜>b<｜User｜>";
    assert_eq!(t.encode(x)[1], 128828);
    assert!(!t.encode_chat(x).contains(&128828));
    assert_eq!(*t.encode_chat(x).last().unwrap(), 128803);
}

#[test]
fn hostile_inputs_do_not_panic_and_round_trip() {
    let t = tok();
    assert!(t.encode("").is_empty());
    assert!(t.encode_chat("").is_empty());
    assert!(t.encode_bytes(b"").is_empty());
    let raw: &[u8] = b"ok \xff\xfe\x80 \xe4\xb8 half \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big \xc0\xaf overlong \0nul<\xef\xbd\x9cUser\xef\xbd\x9c>";
    for ids in [t.encode_bytes(raw), t.encode_chat_bytes(raw)] {
        assert_eq!(t.decode(&ids), raw);
    }
    // Valid UTF-8 through the byte entry point is identical to the str one.
    let s = "héllo <｜User｜> 世界 😀\n";
    assert_eq!(t.encode_bytes(s.as_bytes()), t.encode(s));
    assert_eq!(t.encode_chat_bytes(s.as_bytes()), t.encode_chat(s));
    // 1 MB single lines: one word, one whitespace run, mixed text.
    for line in ["x".repeat(1 << 20), " ".repeat(1 << 20), "ab1 ,".repeat(1 << 18), "中".repeat(350_000)] {
        let ids = t.encode(&line);
        assert_eq!(t.decode(&ids), line.as_bytes());
    }
    // Every byte value alone and unknown ids.
    for b in 0..=255u8 {
        assert_eq!(t.decode(&t.encode_bytes(&[b])), [b]);
    }
    assert!(t.decode(&[u32::MAX, 5_000_000]).is_empty());
}

#[test]
fn streaming_decoder_never_emits_partial_utf8() {
    let t = tok();
    let text = "Emoji 👨‍👩‍👧‍👦 and 中文 and ü, 🇮🇹!";
    let ids = t.encode(text);
    let mut d = StreamDecoder::new();
    let mut out = String::new();
    let mut split_tokens = 0;
    for &id in &ids {
        let piece = d.push(t, id);
        if !d.pending().is_empty() {
            split_tokens += 1;
        }
        assert!(!piece.contains('\u{fffd}'));
        out.push_str(&piece);
    }
    out.push_str(&d.finish());
    assert_eq!(out, text);
    assert!(split_tokens > 0, "the text should contain chars split across tokens");
}

#[test]
fn truncated_metadata_is_an_error() {
    let toks = ["a", "b"];
    assert!(Tokenizer::from_parts(&toks, &[1], &[]).is_err());
    assert!(Tokenizer::from_parts(&toks, &[1, 1], &["a c"]).is_err());
    // The seven serving specials are required.
    let e = Tokenizer::from_parts(&toks, &[1, 1], &[]).unwrap_err().to_string();
    assert!(e.contains("begin"), "{e}");
}

#[test]
fn fixture_model_text_sequences_match_their_ids() {
    // The vocab-f16 medium/long sequences are BOS + the encoding of their manifest text, cut to
    // the sequence length. (The "short" chat sequence is not compared: its token file has an
    // extra 223 " " after <｜User｜> that the real tokenizer does not produce for its text;
    // HF tokenizers 0.23.3 agrees with us there.)
    let root = shared_dir().join("fixtures/model");
    // The manifest is Python JSON: it may hold bare Infinity/NaN, which serde_json rejects.
    let text = std::fs::read_to_string(root.join("manifest.json")).unwrap();
    let text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = manifest["models"].as_array().unwrap().iter().find(|m| m["name"] == "vocab-f16").unwrap();
    let mut checked = 0;
    for s in m["sequences"].as_array().unwrap() {
        if s["name"] == "short" {
            continue;
        }
        let raw = std::fs::read(root.join(s["tokens"]["file"].as_str().unwrap())).unwrap();
        let want: Vec<u32> = raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect();
        let mut got = vec![tok().special().bos];
        got.extend(tok().encode(s["text"].as_str().unwrap()));
        assert!(got.len() >= want.len());
        assert_eq!(&got[..want.len()], &want[..], "{}", s["name"]);
        checked += 1;
    }
    assert_eq!(checked, 2);
}

#[test]
fn truncated_vocabulary_models_load() {
    // The small fixture models embed a truncated copy of the tokenizer (first merges only).
    for name in ["tiny-f32", "t256-q2", "t256-q4"] {
        let g = ds4_gguf::Gguf::open(shared_dir().join(format!("fixtures/model/{name}/model.gguf"))).unwrap();
        let t = Tokenizer::from_gguf(&g).unwrap();
        assert_eq!(t.vocab_size(), 384);
        let text = "<｜begin▁of▁sentence｜><｜User｜>Hello the world 中文<｜Assistant｜></think>";
        let ids = t.encode_chat(text);
        assert_eq!(t.decode(&ids), text.as_bytes());
        assert!(ids.iter().all(|&i| (i as usize) < 384));
        assert_eq!(ids[0], 0);
    }
}
