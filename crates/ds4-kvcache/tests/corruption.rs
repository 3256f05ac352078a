//! Damaged files are survived: truncation at every section boundary, every
//! flipped byte of the structured regions, wrong magic, foreign version,
//! other-model payloads and engine rejections. Each is skipped with at most
//! one log line, removed when broken for every reader, and never retried.

mod common;

use std::fs;
use std::path::PathBuf;

use common::*;
use ds4_kvcache::format::{self, ToolMapEntry};
use ds4_kvcache::payload::compressor_state_bytes;
use ds4_kvcache::{DiskCache, EngineInfo, KeyKind, PayloadWriter, SaveReason, StoreRequest};

const CTX: u32 = 4096;
const ENG: EngineInfo = EngineInfo { quant_bits: 4, ctx: CTX };
const T: usize = 140; // > raw window, several ratio-4 rows, one ratio-128 row

struct Fixture {
    text: Vec<u8>,
    tokens: Vec<u32>,
    bytes: Vec<u8>,
    /// Named offsets of every section start inside the file.
    boundaries: Vec<(String, usize)>,
    payload_end: usize,
}

fn build() -> Fixture {
    let dir = Scratch::new("build");
    let (logs, clock) = (Logs::default(), Clock::new(1000));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let text = "<｜begin▁of▁sentence｜>system<｜User｜>do it<｜Assistant｜></think>ok\n\n<｜DSML｜tool_calls>x</｜DSML｜tool_calls>"
        .as_bytes()
        .to_vec();
    let tokens: Vec<u32> = (0..T as u32).map(|i| (i * 13 + 5) % 384).collect();
    let shape = fixture_shape(CTX);
    let payload = synth_payload(&shape, CTX, &tokens, 77);
    let tm = vec![
        ToolMapEntry { id: "call_1".into(), dsml: b"\n\n<\xef\xbd\x9cDSML".to_vec() },
        ToolMapEntry { id: "call_2".into(), dsml: b"second".to_vec() },
    ];
    let st = c
        .store(
            &StoreRequest {
                reason: SaveReason::Cold,
                tokens: &tokens,
                live_tokens: &tokens,
                original_len: T,
                text: &text,
                key_kind: KeyKind::TokenText,
                engine: ENG,
                tool_map: &tm,
            },
            PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
        )
        .unwrap();
    let bytes = fs::read(&st.path).unwrap();

    // Section map from the spec layout, computed here independently.
    let mut b: Vec<(String, usize)> = Vec::new();
    for (name, off) in [
        ("magic", 0),
        ("version", 3),
        ("quant", 4),
        ("reason", 5),
        ("ext", 6),
        ("tokens", 8),
        ("hits", 12),
        ("ctx", 16),
        ("created", 24),
        ("last_used", 32),
        ("payload_len", 40),
        ("text_len", 48),
        ("text", 52),
    ] {
        b.push((name.into(), off));
    }
    let p0 = 52 + text.len();
    b.push(("text_mid".into(), 52 + text.len() / 2));
    b.push(("payload".into(), p0));
    for w in 1..13 {
        b.push((format!("payload_hdr_word{w}"), p0 + 4 * w));
    }
    let tok0 = p0 + 52;
    b.push(("payload_tokens".into(), tok0));
    b.push(("payload_tokens_mid".into(), tok0 + 2 * T));
    let logits = tok0 + 4 * T;
    b.push(("logits".into(), logits));
    let counts = logits + 4 * 384;
    b.push(("n_comp".into(), counts));
    b.push(("n_idx".into(), counts + 24));
    let mut off = counts + 48;
    let r = 128usize.min(T);
    for (l, &ratio) in shape.compress_ratios.iter().enumerate() {
        b.push((format!("layer{l}_raw"), off));
        off += r * 80 * 4;
        if ratio != 0 {
            b.push((format!("layer{l}_comp"), off));
            off += (T / ratio as usize) * 80 * 4;
            let s = compressor_state_bytes(80, ratio) as usize;
            b.push((format!("layer{l}_state_kv"), off));
            off += s;
            b.push((format!("layer{l}_state_score"), off));
            off += s;
        }
        if ratio == 4 {
            b.push((format!("layer{l}_idx"), off));
            off += (T / 4) * 32 * 4;
            let s = compressor_state_bytes(32, 4) as usize;
            b.push((format!("layer{l}_idx_state_kv"), off));
            off += s;
            b.push((format!("layer{l}_idx_state_score"), off));
            off += s;
        }
    }
    assert_eq!(off, p0 + payload.len(), "section map must cover the payload exactly");
    b.push(("payload_last_byte".into(), off - 1));
    b.push(("trailer".into(), off));
    b.push(("trailer_count".into(), off + 4));
    b.push(("trailer_entry0".into(), off + 8));
    b.push(("trailer_entry1".into(), off + 8 + 8 + 6 + 10));
    b.push(("trailer_last_byte".into(), bytes.len() - 1));
    assert_eq!(bytes.len(), off + format::tool_map_len(&tm) as usize);
    Fixture { text, tokens, bytes, boundaries: b, payload_end: off }
}

struct Run {
    hit: Option<ds4_kvcache::Hit>,
    loader_calls: usize,
    file_exists: bool,
    logs: Vec<String>,
    second_loader_calls: usize,
    second_hit: bool,
    second_new_logs: Vec<String>,
}

/// Writes `bytes` as the file for the fixture text in a fresh directory and
/// runs two lookups of a prompt that extends the text.
fn run(fx: &Fixture, bytes: &[u8]) -> Run {
    let dir = Scratch::new("case");
    fs::create_dir_all(dir.path()).unwrap();
    let path: PathBuf = dir.path().join(format!("{}.kv", ds4_kvcache::sha1_hex(&fx.text)));
    fs::write(&path, bytes).unwrap();
    let (logs, clock) = (Logs::default(), Clock::new(2000));
    // min_tokens 1: a damaged token count never hides the file behind the minimum.
    let c = DiskCache::open(dir.path(), options(CTX, 1, &logs, &clock)).unwrap();
    logs.clear(); // ignore the startup line; open may already have removed the file
    let prompt = [&fx.text[..], b"<|User|>next"].concat();
    let mut calls = 0;
    let lk = c.load(&prompt, ENG, |r, _| {
        calls += 1;
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        Ok(payload_tokens(&b))
    });
    let first_logs = logs.lines();
    let mut calls2 = 0;
    let lk2 = c.load(&prompt, ENG, |r, _| {
        calls2 += 1;
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        Ok(payload_tokens(&b))
    });
    let all = logs.lines();
    let second_new: Vec<String> =
        all[first_logs.len()..].iter().filter(|l| !l.contains("kv cache hit")).cloned().collect();
    Run {
        hit: lk.hit,
        loader_calls: calls,
        file_exists: path.exists(),
        logs: first_logs,
        second_loader_calls: calls2,
        second_hit: lk2.hit.is_some(),
        second_new_logs: second_new,
    }
}

#[test]
fn intact_file_loads_with_tool_map() {
    let fx = build();
    let r = run(&fx, &fx.bytes);
    let hit = r.hit.expect("intact file must load");
    assert_eq!(hit.tokens, fx.tokens);
    assert_eq!(hit.tool_map.len(), 2);
    assert_eq!(r.loader_calls, 1);
}

#[test]
fn truncation_at_every_section_boundary() {
    let fx = build();
    for (name, off) in &fx.boundaries {
        for cut in [*off, off + 1] {
            if cut >= fx.bytes.len() {
                continue;
            }
            let r = run(&fx, &fx.bytes[..cut]);
            if cut < fx.payload_end {
                assert!(r.hit.is_none(), "{name}@{cut}: truncated file loaded");
                assert_eq!(r.loader_calls, 0, "{name}@{cut}: engine saw a truncated payload");
                assert!(!r.file_exists, "{name}@{cut}: truncated file not removed");
                let n = r.logs.iter().filter(|l| l.contains("removed corrupt")).count();
                assert!(n <= 1, "{name}@{cut}: {:?}", r.logs);
                // Removed at open/listing or at lookup: exactly one line either way
                // (open's line was cleared only if removal happened at startup).
                assert!(r.second_new_logs.is_empty(), "{name}@{cut}: retried: {:?}", r.second_new_logs);
                assert_eq!(r.second_loader_calls, 0);
            } else {
                // Payload intact; the trailer is read up to the damage.
                let hit = r.hit.unwrap_or_else(|| panic!("{name}@{cut}: trailer damage lost the checkpoint"));
                assert_eq!(hit.tokens, fx.tokens);
                assert!(hit.tool_map.len() < 2, "{name}@{cut}");
                assert!(r.file_exists);
            }
        }
    }
}

#[test]
fn truncated_files_are_removed_by_listing_with_one_log_line() {
    let fx = build();
    let dir = Scratch::new("list");
    fs::create_dir_all(dir.path()).unwrap();
    let path = dir.path().join(format!("{}.kv", ds4_kvcache::sha1_hex(&fx.text)));
    fs::write(&path, &fx.bytes[..fx.payload_end - 100]).unwrap();
    let (logs, clock) = (Logs::default(), Clock::new(2000));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    assert!(!path.exists());
    assert_eq!(logs.count("removed corrupt file"), 1);
    assert!(c.entries().is_empty());
    assert_eq!(logs.count("removed corrupt file"), 1);
}

#[test]
fn every_flipped_byte_of_structured_regions_is_survived() {
    let fx = build();
    let p0 = 52 + fx.text.len();
    let counts = p0 + 52 + 4 * T + 4 * 384;
    let mut offsets: Vec<usize> = (0..p0 + 52 + 8).collect(); // header, text, payload header, first tokens
    offsets.extend(counts..counts + 48); // row counts
    offsets.extend(fx.payload_end..fx.bytes.len()); // trailer
    // A spread of offsets through the float sections.
    offsets.extend((counts + 48..fx.payload_end).step_by(997));
    for off in offsets {
        for mask in [0x01u8, 0x80] {
            let mut b = fx.bytes.clone();
            b[off] ^= mask;
            let r = run(&fx, &b);
            let ctx = format!("byte {off} ^ {mask:#x}");
            assert!(r.loader_calls <= 1, "{ctx}");
            if r.hit.is_none() {
                // Never retried: no second engine call, no second log line.
                assert_eq!(r.second_loader_calls, 0, "{ctx}: retried");
                assert!(!r.second_hit, "{ctx}");
                assert!(r.second_new_logs.is_empty(), "{ctx}: {:?}", r.second_new_logs);
                let lines = r.logs.iter().filter(|l| !l.contains("kv cache hit")).count();
                assert!(lines <= 1, "{ctx}: {:?}", r.logs);
            }
            // Region-specific outcomes.
            match off {
                0..=2 => assert!(r.hit.is_none() && !r.file_exists, "{ctx}: bad magic must be removed"),
                3 => assert!(r.hit.is_none() && r.file_exists, "{ctx}: foreign version must be kept"),
                4 => assert!(r.hit.is_none() && r.file_exists, "{ctx}: unknown quant bits are ignored"),
                8..=11 => assert!(r.hit.is_none() && !r.file_exists, "{ctx}: token count mismatch"),
                12..=15 | 20..=39 => assert!(r.hit.is_some(), "{ctx}: bookkeeping fields are not structural"),
                40..=47 => assert!(r.hit.is_none() && !r.file_exists, "{ctx}: payload length"),
                o if (52..p0).contains(&o) => {
                    assert!(r.hit.is_none() && !r.file_exists, "{ctx}: text no longer hashes to the name")
                }
                o if (p0..p0 + 8).contains(&o) => {
                    assert!(r.hit.is_none() && !r.file_exists, "{ctx}: payload magic/version")
                }
                o if (p0 + 28..p0 + 32).contains(&o) => {
                    assert!(r.hit.is_none() && !r.file_exists, "{ctx}: payload token count")
                }
                // Row counts that size a section (compressed layers 2-5, indexer
                // layers 2 and 4); counts of absent sections are not read.
                o if (counts + 8..counts + 24).contains(&o)
                    || (counts + 32..counts + 36).contains(&o)
                    || (counts + 40..counts + 44).contains(&o) =>
                {
                    assert!(r.hit.is_none() && !r.file_exists, "{ctx}: row counts")
                }
                o if o >= fx.payload_end => {
                    assert!(r.hit.is_some(), "{ctx}: trailer damage must not lose the checkpoint")
                }
                o if o >= counts + 48 => assert!(r.hit.is_some(), "{ctx}: float data is opaque"),
                _ => {}
            }
        }
    }
}

#[test]
fn wrong_magic_file_removed_with_one_line() {
    let fx = build();
    let mut b = fx.bytes.clone();
    b[0..3].copy_from_slice(b"GGU");
    let r = run(&fx, &b);
    assert!(r.hit.is_none() && !r.file_exists);
}

#[test]
fn other_model_payload_is_skipped_once_and_kept() {
    let fx = build();
    let p0 = 52 + fx.text.len();
    // Vocabulary word of the payload header: a 129280-vocab writer.
    let mut b = fx.bytes.clone();
    b[p0 + 44..p0 + 48].copy_from_slice(&129280u32.to_le_bytes());
    let r = run(&fx, &b);
    assert!(r.hit.is_none() && r.file_exists && r.loader_calls == 0);
    assert_eq!(r.logs.iter().filter(|l| l.contains("payload is for another model")).count(), 1, "{:?}", r.logs);
    assert!(r.second_new_logs.is_empty());
    // Written for a larger context than ours is a filter, not an error.
    let mut b = fx.bytes.clone();
    b[16..20].copy_from_slice(&(2 * CTX).to_le_bytes());
    let r = run(&fx, &b);
    assert!(r.hit.is_none() && r.file_exists && r.loader_calls == 0 && r.logs.is_empty());
}

#[test]
fn engine_rejection_is_logged_once_and_not_retried() {
    let fx = build();
    let dir = Scratch::new("reject");
    fs::create_dir_all(dir.path()).unwrap();
    let path = dir.path().join(format!("{}.kv", ds4_kvcache::sha1_hex(&fx.text)));
    fs::write(&path, &fx.bytes).unwrap();
    let (logs, clock) = (Logs::default(), Clock::new(2000));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let prompt = [&fx.text[..], b"more"].concat();
    let mut calls = 0;
    for _ in 0..3 {
        let lk = c.load(&prompt, ENG, |_, _| {
            calls += 1;
            Err("saved prefill chunk 2048 != current 1024".to_string())
        });
        assert!(lk.hit.is_none());
    }
    assert_eq!(calls, 1);
    assert_eq!(logs.count("kv cache load failed"), 1);
    assert!(path.exists());
    // A loader that leaves payload bytes unread fails the same way.
    let c2 = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let lk = c2.load(&prompt, ENG, |r, _| {
        let mut b = [0u8; 100];
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        Ok(fx.tokens.clone())
    });
    assert!(lk.hit.is_none() && lk.session_invalidated);
    assert_eq!(logs.count("payload bytes not consumed"), 1);
    // A loader whose session ends with another token count: file removed.
    let c3 = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let lk = c3.load(&prompt, ENG, |r, _| {
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        Ok(vec![1, 2, 3])
    });
    assert!(lk.hit.is_none() && lk.session_invalidated && !path.exists());
}

#[test]
fn fallback_to_next_candidate_after_a_bad_one() {
    let fx = build();
    let dir = Scratch::new("fallback");
    let (logs, clock) = (Logs::default(), Clock::new(2000));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    // A good shorter checkpoint...
    let short_text = &fx.text[..20];
    let short_tokens: Vec<u32> = fx.tokens[..40].to_vec();
    let payload = synth_payload(&fixture_shape(CTX), CTX, &short_tokens, 3);
    c.store(
        &StoreRequest {
            reason: SaveReason::Cold,
            tokens: &short_tokens,
            live_tokens: &short_tokens,
            original_len: 40,
            text: short_text,
            key_kind: KeyKind::TokenText,
            engine: ENG,
            tool_map: &[],
        },
        PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
    )
    .unwrap();
    // ...and a longer one whose payload is damaged.
    let mut b = fx.bytes.clone();
    let p0 = 52 + fx.text.len();
    b[p0] ^= 0xff;
    fs::write(dir.path().join(format!("{}.kv", ds4_kvcache::sha1_hex(&fx.text))), &b).unwrap();
    let prompt = [&fx.text[..], b"more"].concat();
    let hit = c
        .load(&prompt, ENG, |r, _| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map_err(|e| e.to_string())?;
            Ok(payload_tokens(&v))
        })
        .hit
        .unwrap();
    assert_eq!(hit.text_len, 20);
    assert_eq!(hit.tokens, short_tokens);
}
