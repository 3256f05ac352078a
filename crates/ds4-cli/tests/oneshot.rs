//! The `ds4` binary in one-shot and diagnostic modes, against the reference
//! fixtures (logits of an independent implementation) and the demo model.

mod common;
use common::*;

fn ids_arg(ids: &[i32]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// `--dump-logits` in one mode against a fixture logits file (all positions).
fn check_dump(model: &str, seq: &str, extra: &[&str], fixture_file: &str, label: &str) {
    let dir = fixtures().join(model).join(seq);
    let ids = read_i32(&dir.join("tokens.i32.bin"));
    let vocab = sequence(model, seq); // presence check
    assert!(vocab.is_object());
    let out = scratch(&format!("{model}-{seq}-{label}.f32"));
    let mp = model_path(model);
    let ids_s = ids_arg(&ids);
    let mut args = vec!["--cpu", "-m", mp.to_str().unwrap(), "--tokens", &ids_s, "--dump-logits", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", show(&o));
    let got = read_f32(&out);
    let want = read_f32(&dir.join(fixture_file));
    let n_vocab = want.len() / ids.len();
    assert_eq!(got.len(), ids.len() * n_vocab, "{label}: [n_tokens x vocab] layout");
    let (max, mean, at) = compare(&got, &want, n_vocab);
    println!("{model}/{seq} {label}: max |d| {max:.3e} at position {at}, mean {mean:.3e}");
    assert!(max <= 0.002, "{label}: max |d| {max} at position {at}");
    assert!(mean <= 1e-4, "{label}: mean |d| {mean}");
    for p in 0..ids.len() {
        let r = p * n_vocab..(p + 1) * n_vocab;
        assert_eq!(argmax(&got[r.clone()]), argmax(&want[r]), "{label}: argmax at position {p}");
    }
    let _ = std::fs::remove_file(out);
}

#[test]
fn dump_logits_matches_fixture_exact_prefill_chunked_and_decode() {
    // Exact numerics: every position, prefill in one call, in uneven chunks
    // (not dividing 4 or 128), and token-by-token decode.
    check_dump("tiny-f32", "short", &["--no-qat"], "prefill.exact.logits.f32.bin", "prefill");
    check_dump("tiny-f32", "short", &["--no-qat", "--prefill-chunk", "3"], "prefill.exact.logits.f32.bin", "chunk3");
    check_dump("tiny-f32", "short", &["--no-qat", "--decode"], "prefill.exact.logits.f32.bin", "decode");
    check_dump("tiny-f32", "medium", &["--no-qat", "--prefill-chunk", "130"], "prefill.exact.logits.f32.bin", "chunk130");
}

#[test]
fn dump_logits_matches_fixture_official_short() {
    // Official numerics (FP8 KV + FP4 indexer on): the short sequence is
    // within the reference's own noise at every position.
    check_dump("tiny-f32", "short", &[], "prefill.official.logits.f32.bin", "official");
}

#[test]
fn dump_logits_rejects_bad_tokens_and_usage() {
    let mp = model_path("tiny-f32");
    let out = scratch("bad.f32");
    let o = run(&["-m", mp.to_str().unwrap(), "--tokens", "0,384", "--dump-logits", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("outside the vocabulary"), "{}", show(&o));
    let o = run(&["-m", mp.to_str().unwrap(), "--tokens", "0,,x", "--dump-logits", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

#[test]
fn dump_logprobs_first_step_matches_fixture_last_row() {
    // The fixture's short chat sequence as --prompt-tokens: the first step's
    // alternatives are the top of the reference's last prefill row.
    let ids = read_i32(&fixtures().join("vocab-f16/short/tokens.i32.bin"));
    let ids_s = ids_arg(&ids);
    let last = read_f32(&fixtures().join("vocab-f16/short/prefill.exact.last.logits.f32.bin"));
    let out = scratch("logprobs.json");
    let mp = model_path("vocab-f16");
    let o = run(&[
        "-m", mp.to_str().unwrap(), "--no-qat", "--prompt-tokens", &ids_s, "-n", "4",
        "--dump-logprobs", out.to_str().unwrap(), "--logprobs-top-k", "5",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("valid JSON");
    assert_eq!(v["source"], "ds4");
    assert_eq!(v["prompt_tokens"].as_u64(), Some(ids.len() as u64));
    assert_eq!(v["top_k"], 5);
    assert_eq!(v["ctx"], 32768);
    let steps = v["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= 4);

    // Independent f64 log-softmax of the reference row.
    let max = last.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = max + last.iter().map(|&l| (l as f64 - max).exp()).sum::<f64>().ln();
    let mut order: Vec<usize> = (0..last.len()).collect();
    order.sort_by(|&a, &b| last[b].partial_cmp(&last[a]).unwrap());
    let top = steps[0]["top_logprobs"].as_array().unwrap();
    assert_eq!(top.len(), 5);
    for (i, alt) in top.iter().enumerate() {
        let id = alt["token"]["id"].as_u64().unwrap() as usize;
        assert_eq!(id, order[i], "alternative {i}");
        let logit = alt["logit"].as_f64().unwrap();
        let logprob = alt["logprob"].as_f64().unwrap();
        assert!((logit - last[id] as f64).abs() < 2e-3, "logit {logit} vs {}", last[id]);
        assert!((logprob - (last[id] as f64 - lse)).abs() < 2e-3, "logprob {logprob}");
        if i > 0 {
            assert!(top[i - 1]["logit"].as_f64().unwrap() >= logit, "sorted by logit");
        }
        // bytes are authoritative and match the text when it is valid UTF-8.
        let bytes: Vec<u8> = alt["token"]["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
        if let Ok(s) = std::str::from_utf8(&bytes) {
            assert_eq!(alt["token"]["text"].as_str().unwrap(), s);
        }
    }
    // Greedy: the selected token is the best alternative at every step.
    for s in steps {
        assert_eq!(s["selected"]["id"], s["top_logprobs"][0]["token"]["id"]);
    }
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["step"].as_u64(), Some(i as u64));
        if s["selected"]["id"] == 1 {
            assert_eq!(i, steps.len() - 1, "EOS ends the run");
        }
    }
}

#[test]
fn one_shot_on_fixture_model_is_greedy_consistent_with_logprobs() {
    // The same prompt, greedy: the text printed by one-shot generation is
    // the concatenation of the tokens --dump-logprobs selects.
    let mp = model_path("vocab-f16");
    let m = mp.to_str().unwrap();
    let out = scratch("greedy.json");
    let o = run(&["-m", m, "--nothink", "-p", "Tell me a story", "-n", "6", "--dump-logprobs", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut want = Vec::new();
    for s in v["steps"].as_array().unwrap() {
        if s["selected"]["id"] == 1 {
            break;
        }
        want.extend(s["selected"]["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8));
    }
    let o = run(&["-m", m, "--nothink", "-p", "Tell me a story", "-n", "6", "--temp", "0"]);
    assert!(o.status.success(), "{}", show(&o));
    want.push(b'\n');
    assert_eq!(o.stdout, want, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ds4: prefill: ") && err.contains(" t/s, generation: "), "{err}");
    assert!(err.contains("processing "), "prefill progress: {err}");
}

#[test]
fn demo_one_shot_runs_and_seed_reproduces() {
    let run_demo = |seed: &str| run(&["--demo", "-p", "Hello", "-n", "12", "--seed", seed]);
    let a = run_demo("11");
    assert!(a.status.success(), "{}", show(&a));
    assert!(!a.stdout.is_empty());
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.contains("gibberish"), "the demo says what it is: {err}");
    assert!(err.contains("ds4: prefill: "), "{err}");
    let b = run_demo("11");
    assert_eq!(a.stdout, b.stdout, "same seed, same text");
    let c = run_demo("12");
    assert!(c.status.success());
    // Different seeds draw different samples (compare a longer run to make
    // an accidental match negligible).
    let long = |seed: &str| run(&["--demo", "-p", "Hello", "-n", "40", "--seed", seed]).stdout;
    assert_ne!(long("1"), long("2"));
}

#[test]
fn trace_records_the_turn() {
    let tr = scratch("oneshot.trace");
    let o = run(&["--demo", "--nothink", "-p", "Hi", "-n", "3", "--temp", "0", "--trace", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let t = std::fs::read_to_string(&tr).unwrap();
    assert!(t.contains("===== turn 1 ====="), "{t}");
    assert!(t.contains("think_mode: none"));
    assert!(t.contains("reused_tokens: 0"));
    assert!(t.contains("prefilled_text: <｜begin▁of▁sentence｜>You are a helpful assistant<｜User｜>Hi<｜Assistant｜></think>"), "{t}");
}

#[test]
fn missing_model_says_how_to_get_one() {
    let o = ds4().current_dir(std::env::temp_dir()).args(["-p", "hi"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("model file not found: ds4flash.gguf"), "{e}");
    assert!(e.contains("download_model.sh") && e.contains("--demo"), "{e}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--bogus"][..],
        &["--temp", "200"],
        &["-p", "a", "--prompt-file", "b"],
        &["--dump-tokens"],
        &["--server"],
        &["--ctx", "0"],
        &["--prompt-file", "/nonexistent/prompt.txt", "--demo"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
    }
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = String::from_utf8_lossy(&o.stdout);
    for flag in ["--demo", "--prompt-file", "--think-max", "--nothink", "--dump-logits", "--no-qat", "--trace", "/read FILE"] {
        assert!(h.contains(flag), "help mentions {flag}");
    }
}

#[test]
fn dump_tokens_plain_and_chat_on_real_tokenizer() {
    // Plain entry point against the real tokenizer's ids.
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("tokenizer_cases.json")).unwrap()).unwrap();
    let mp = model_path("vocab-f16");
    let m = mp.to_str().unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u64> = case["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let o = run(&["-m", m, "--dump-tokens", "-p", text]);
        assert!(o.status.success(), "{}", show(&o));
        let out = String::from_utf8(o.stdout).unwrap();
        let mut got = Vec::new();
        let mut bytes = Vec::new();
        for line in out.lines() {
            let (id, js) = line.split_once('\t').expect("id TAB json");
            got.push(id.parse::<u64>().unwrap());
            // Pieces that are not valid UTF-8 use \udcXX escapes (not
            // representable in a Rust String); the ASCII cases never have them.
            if let Ok(s) = serde_json::from_str::<String>(js) {
                bytes.extend_from_slice(s.as_bytes());
            }
        }
        assert_eq!(got, want, "{text:?}");
        if text.is_ascii() {
            assert_eq!(bytes, text.as_bytes(), "pieces concatenate to the text");
        }
    }

    // --chat: only the serving specials are special; byte-for-byte prompt file.
    let f = scratch("prompt.bin");
    std::fs::write(&f, "<｜User｜>hi<｜latest_reminder｜>\u{0}".as_bytes()).unwrap();
    let o = run(&["-m", m, "--dump-tokens", "--chat", "--prompt-file", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let first: Vec<&str> = out.lines().collect();
    assert!(first[0].starts_with("128803\t"), "{out}");
    assert!(!out.contains("128828\t"), "latest_reminder is not special in the chat tokenizer: {out}");
    let o = run(&["-m", m, "--dump-tokens", "--prompt-file", f.to_str().unwrap()]);
    assert!(String::from_utf8(o.stdout).unwrap().contains("128828\t"), "but it is in the plain one");
}

#[test]
fn perplexity_matches_nll_from_dumped_logits() {
    // Teacher-forced NLL after the 32-token warm-up, recomputed in f64 from
    // the --dump-logits rows of the same tokens.
    let mp = model_path("tiny-f32");
    let m = mp.to_str().unwrap();
    let text = "The quick brown fox jumps over the lazy dog while the cat sleeps in the warm afternoon sun.";
    let f = scratch("ppl.txt");
    std::fs::write(&f, text).unwrap();
    let o = run(&["-m", m, "--dump-tokens", "--prompt-file", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let ids: Vec<usize> = String::from_utf8(o.stdout).unwrap().lines().map(|l| l.split('\t').next().unwrap().parse().unwrap()).collect();
    assert!(ids.len() > 40, "{} tokens", ids.len());
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let lg = scratch("ppl.f32");
    let o = run(&["-m", m, "--tokens", &list, "--dump-logits", lg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let logits = read_f32(&lg);
    let v = logits.len() / ids.len();
    let mut nll = 0f64;
    for i in 32..ids.len() {
        let row = &logits[(i - 1) * v..i * v];
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let lse = max + row.iter().map(|&x| (x as f64 - max).exp()).sum::<f64>().ln();
        nll += lse - row[ids[i]] as f64;
    }
    let scored = ids.len() - 32;
    let o = run(&["-m", m, "--perplexity-file", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let line = String::from_utf8(o.stdout).unwrap();
    let field = |k: &str| -> f64 {
        line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("{k} in {line}")).parse().unwrap()
    };
    assert_eq!(field("tokens") as usize, ids.len());
    assert_eq!(field("scored") as usize, scored);
    let avg = nll / scored as f64;
    assert!((field("avg_nll") - avg).abs() < 1e-4, "avg_nll {} vs {avg}", field("avg_nll"));
    assert!((field("ppl") - avg.exp()).abs() / avg.exp() < 1e-4);

    // -n caps the scored tokens; too short a text is an error.
    let o = run(&["-m", m, "--perplexity-file", f.to_str().unwrap(), "-n", "5"]);
    assert!(String::from_utf8(o.stdout).unwrap().contains("scored=5 "));
    std::fs::write(&f, "short").unwrap();
    let o = run(&["-m", m, "--perplexity-file", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
}

#[test]
fn inspect_prints_the_model_summary() {
    let mp = model_path("t256-q2");
    let o = run(&["-m", mp.to_str().unwrap(), "--inspect"]);
    assert!(o.status.success(), "{}", show(&o));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("layers: 6  width: 256  vocabulary: 384"), "{s}");
    assert!(s.contains("compress ratios: [0, 0, 4, 128, 4, 128]"), "{s}");
    assert!(s.contains("experts: 8 routed (2 used"), "{s}");
}

#[test]
fn raw_rendered_prompt_is_used_as_is() {
    // A prompt starting with BOS is tokenized with the rendered-chat
    // tokenizer and no template is added around it.
    let tr = scratch("raw.trace");
    let text = "<｜begin▁of▁sentence｜><｜User｜>Hi there!<｜Assistant｜></think>";
    let mp = model_path("vocab-f16");
    let o = run(&["-m", mp.to_str().unwrap(), "-p", text, "-n", "2", "--temp", "0", "--trace", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let t = std::fs::read_to_string(&tr).unwrap();
    assert!(t.contains(&format!("prefilled_text: {text}\n")), "{t}");
    assert!(t.contains("prefilled_tokens: 7\n"), "{t}");
}
