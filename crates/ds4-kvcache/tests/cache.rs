//! Disk cache behaviour on a real directory with synthetic DSV4 payloads:
//! byte layout, lookup, bookkeeping, tool maps and the store rules.

mod common;

use std::collections::HashSet;
use std::fs;

use common::*;
use ds4_kvcache::format::{self, EXT_RESPONSES_VISIBLE, EXT_TOOL_MAP};
use ds4_kvcache::{
    sha1_hex, DiskCache, EngineInfo, KeyKind, KvcHeader, Lookup, PayloadWriter, SaveReason, StoreRequest,
    Stored, ToolMapEntry,
};

const CTX: u32 = 4096;
const ENG: EngineInfo = EngineInfo { quant_bits: 2, ctx: CTX };

fn toks(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 7 + salt) % 384).collect()
}

fn store(
    c: &DiskCache,
    text: &[u8],
    tokens: &[u32],
    reason: SaveReason,
    kind: KeyKind,
    tool_map: &[ToolMapEntry],
) -> Result<Stored, String> {
    let payload = synth_payload(&fixture_shape(CTX), CTX, tokens, tokens.len() as u64);
    let req = StoreRequest {
        reason,
        tokens,
        live_tokens: tokens,
        original_len: tokens.len(),
        text,
        key_kind: kind,
        engine: ENG,
        tool_map,
    };
    c.store(&req, PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) })
}

/// Loads with a loader that reads the whole payload and returns its tokens.
fn load(c: &DiskCache, prompt: &[u8], calls: &mut Vec<Vec<u8>>) -> Lookup {
    c.load(prompt, ENG, |r, hdr| {
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        assert_eq!(hdr.tokens as usize, payload_tokens(&b).len());
        let t = payload_tokens(&b);
        calls.push(b);
        Ok(t)
    })
}

#[test]
fn store_writes_ds4_layout_and_load_round_trips() {
    let dir = Scratch::new("layout");
    let (logs, clock) = (Logs::default(), Clock::new(1_000));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let tokens = toks(300, 1);
    let text = b"<BOS>system prompt<|User|>hello".to_vec();
    let st = store(&c, &text, &tokens, SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    assert_eq!(st.key, sha1_hex(&text));
    assert_eq!(st.path, dir.path().join(format!("{}.kv", st.key)));
    let bytes = fs::read(&st.path).unwrap();
    let payload = synth_payload(&fixture_shape(CTX), CTX, &tokens, 300);
    // Independent byte-level check of §2.
    assert_eq!(&bytes[0..8], &[b'K', b'V', b'C', 1, 2, 1, 0, 0]);
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 300);
    assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), 0);
    assert_eq!(u32::from_le_bytes(bytes[16..20].try_into().unwrap()), CTX);
    assert_eq!(&bytes[20..24], &[0; 4]);
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 1_000);
    assert_eq!(u64::from_le_bytes(bytes[32..40].try_into().unwrap()), 1_000);
    assert_eq!(u64::from_le_bytes(bytes[40..48].try_into().unwrap()), payload.len() as u64);
    assert_eq!(u32::from_le_bytes(bytes[48..52].try_into().unwrap()), text.len() as u32);
    assert_eq!(&bytes[52..52 + text.len()], &text[..]);
    assert_eq!(&bytes[52 + text.len()..], &payload[..]);
    assert_eq!(st.file_size, bytes.len() as u64);
    assert_eq!(logs.count("kv cache stored tokens=300 trimmed=0 reason=cold key=token-text"), 1);
    // No temp file left behind.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

    clock.set(5_000);
    let mut prompt = text.clone();
    prompt.extend_from_slice(b"<|Assistant|>more");
    let mut calls = Vec::new();
    let lk = load(&c, &prompt, &mut calls);
    let hit = lk.hit.expect("hit");
    assert!(!lk.session_invalidated);
    assert_eq!(calls, vec![payload.clone()]);
    assert_eq!(hit.tokens, tokens);
    assert_eq!(hit.text_len, text.len());
    assert_eq!((hit.quant_bits, hit.key_kind, hit.reason), (2, KeyKind::TokenText, SaveReason::Cold));
    assert!(!hit.consumed && hit.tool_map.is_empty());
    // hits += 1 and last_used = now, in place.
    let h = KvcHeader::decode(&fs::read(&st.path).unwrap()).unwrap();
    assert_eq!((h.hits, h.last_used, h.created_at), (1, 5_000, 1_000));
    assert_eq!(logs.count("kv cache hit text tokens=300"), 1);
    // Continued schedule set to the loaded length.
    assert_eq!(c.continued_target(300), None);
    // An exact-length prompt is also a hit.
    assert!(load(&c, &text, &mut Vec::new()).hit.is_some());
}

#[test]
fn lookup_picks_longest_prefix_and_rejects_one_byte_difference() {
    // KVCACHE.md §9.7
    let dir = Scratch::new("longest");
    let (logs, clock) = (Logs::default(), Clock::new(10));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let base = b"AAAA-system-".to_vec();
    let mid = [&base[..], b"user-one-"].concat();
    let long = [&mid[..], b"assistant-"].concat();
    store(&c, &base, &toks(40, 1), SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    store(&c, &long, &toks(120, 3), SaveReason::Evict, KeyKind::TokenText, &[]).unwrap();
    store(&c, &mid, &toks(80, 2), SaveReason::Continued, KeyKind::TokenText, &[]).unwrap();
    let prompt = [&long[..], b"next turn"].concat();
    let hit = load(&c, &prompt, &mut Vec::new()).hit.unwrap();
    assert_eq!((hit.text_len, hit.tokens.len()), (long.len(), 120));
    let prompt2 = [&mid[..], b"other branch"].concat();
    assert_eq!(load(&c, &prompt2, &mut Vec::new()).hit.unwrap().text_len, mid.len());
    let mut diff = prompt.clone();
    diff[2] = b'B';
    let mut calls = Vec::new();
    assert!(load(&c, &diff, &mut calls).hit.is_none());
    assert!(calls.is_empty());
    assert!(load(&c, b"", &mut calls).hit.is_none());
}

#[test]
fn candidate_filters_min_tokens_ctx_and_quant() {
    let dir = Scratch::new("filters");
    let (logs, clock) = (Logs::default(), Clock::new(10));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let text = b"prefix text".to_vec();
    store(&c, &text, &toks(64, 1), SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    let prompt = [&text[..], b" more"].concat();
    // Smaller session context than the writer's: not a candidate.
    let small = EngineInfo { quant_bits: 2, ctx: CTX / 2 };
    assert!(c.candidates(&prompt, small).is_empty());
    // 4-bit model may use a 2-bit checkpoint by default...
    let q4 = EngineInfo { quant_bits: 4, ctx: CTX };
    assert_eq!(c.candidates(&prompt, q4).len(), 1);
    // ...but not with --kv-cache-reject-different-quant.
    let mut o = options(CTX, 16, &logs, &clock);
    o.reject_different_quant = true;
    let strict = DiskCache::open(dir.path(), o).unwrap();
    assert!(strict.candidates(&prompt, q4).is_empty());
    assert_eq!(strict.candidates(&prompt, ENG).len(), 1);
    // Below --kv-cache-min-tokens: neither loaded nor stored.
    let big_min = DiskCache::open(dir.path(), options(CTX, 100, &logs, &clock)).unwrap();
    assert!(big_min.candidates(&prompt, ENG).is_empty());
    assert!(store(&big_min, b"x", &toks(99, 1), SaveReason::Cold, KeyKind::TokenText, &[]).is_err());
}

#[test]
fn store_requires_live_state_budget_and_payload_length() {
    let dir = Scratch::new("storerules");
    let (logs, clock) = (Logs::default(), Clock::new(10));
    let mut o = options(CTX, 16, &logs, &clock);
    o.budget_bytes = 1_000_000;
    let c = DiskCache::open(dir.path(), o).unwrap();
    let t = toks(100, 1);
    let payload = synth_payload(&fixture_shape(CTX), CTX, &t, 1);
    // The live state is longer than what we want to store: never rewind.
    let longer = toks(101, 1);
    let req = StoreRequest {
        reason: SaveReason::Cold,
        tokens: &t,
        live_tokens: &longer,
        original_len: 101,
        text: b"abc",
        key_kind: KeyKind::TokenText,
        engine: ENG,
        tool_map: &[],
    };
    let r = c.store(&req, PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) });
    assert!(r.unwrap_err().contains("live checkpoint is at 101"));
    // Over budget once the 1 % headroom is added.
    let req = StoreRequest { live_tokens: &t, ..req };
    let big = vec![0u8; 991_000];
    let r = c.store(&req, PayloadWriter { len: big.len() as u64, write: &mut |w| w.write_all(&big) });
    assert!(r.unwrap_err().contains("exceeds budget"));
    // A writer producing fewer bytes than declared: failed, no temp file left.
    let r = c.store(&req, PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload[..10]) });
    assert!(r.unwrap_err().contains("payload writer produced 10 bytes"));
    // Writer error.
    let r = c.store(
        &req,
        PayloadWriter { len: 10, write: &mut |_| Err(std::io::Error::other("engine busy")) },
    );
    assert!(r.unwrap_err().contains("engine busy"));
    // Bad quant bits, empty payload.
    let q3 = StoreRequest { engine: EngineInfo { quant_bits: 3, ctx: CTX }, ..req };
    assert!(c.store(&q3, PayloadWriter { len: 1, write: &mut |w| w.write_all(b"x") }).is_err());
    let q2 = StoreRequest { engine: ENG, ..q3 };
    assert!(c.store(&q2, PayloadWriter { len: 0, write: &mut |_| Ok(()) }).is_err());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    // And a proper one fits.
    assert!(c.store(&q2, PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) }).is_ok());
}

#[test]
fn same_key_reuses_compatible_file_and_refreshes_tool_map() {
    let dir = Scratch::new("samekey");
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let block = "\n\n<｜DSML｜tool_calls>run</｜DSML｜tool_calls>";
    let text = format!("sys<｜User｜>go<｜Assistant｜></think>{block}");
    let t = toks(50, 9);
    let first = store(&c, text.as_bytes(), &t, SaveReason::Evict, KeyKind::TokenText, &[]).unwrap();
    assert!(!first.reused_existing);
    let before = fs::read(&first.path).unwrap();
    assert_eq!(before[6] & EXT_TOOL_MAP, 0);
    clock.set(200);
    let tm = vec![ToolMapEntry { id: "call_a".into(), dsml: block.as_bytes().to_vec() }];
    let again = store(&c, text.as_bytes(), &t, SaveReason::Shutdown, KeyKind::TokenText, &tm).unwrap();
    assert!(again.reused_existing);
    let after = fs::read(&first.path).unwrap();
    let h = KvcHeader::decode(&after).unwrap();
    assert_eq!(h.ext_flags & EXT_TOOL_MAP, EXT_TOOL_MAP);
    assert_eq!((h.reason, h.created_at, h.last_used), (SaveReason::Evict, 100, 200));
    // Payload untouched, trailer appended.
    assert_eq!(&after[52..before.len()], &before[52..]);
    assert_eq!(&after[before.len()..], &format::encode_tool_map(&tm)[..]);
    // Load returns the trailer entries.
    let hit = load(&c, text.as_bytes(), &mut Vec::new()).hit.unwrap();
    assert_eq!(hit.tool_map, tm);
    // A file with the same name but different text (corrupt/colliding) is replaced.
    let mut bytes = fs::read(&first.path).unwrap();
    bytes[52] ^= 0x20;
    fs::write(&first.path, &bytes).unwrap();
    let third = store(&c, text.as_bytes(), &t, SaveReason::Evict, KeyKind::TokenText, &[]).unwrap();
    assert!(!third.reused_existing);
    assert_eq!(logs.count("replaced incompatible file"), 1);
}

#[test]
fn tool_map_trailer_restores_ids_before_rendering() {
    // KVCACHE.md §9.8
    let dir = Scratch::new("toolmap");
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let keep = "\n\n<｜DSML｜tool_calls><｜DSML｜invoke name=\"sh\">ls</｜DSML｜invoke></｜DSML｜tool_calls>";
    let gone = "\n\n<｜DSML｜tool_calls>gone</｜DSML｜tool_calls>";
    let text = format!("sys<｜User｜>list<｜Assistant｜></think>{keep}<｜end▁of▁sentence｜>");
    let memory = [("call_keep", keep), ("call_gone", gone)];
    let tm = ds4_kvcache::dsml::tool_map_for_text(text.as_bytes(), |b| {
        memory.iter().filter(|(_, d)| d.as_bytes() == b).map(|(i, _)| i.to_string()).collect()
    });
    assert_eq!(tm.len(), 1);
    let st = store(&c, text.as_bytes(), &toks(40, 2), SaveReason::Evict, KeyKind::TokenText, &tm).unwrap();
    assert_eq!(fs::read(&st.path).unwrap()[6] & EXT_TOOL_MAP, EXT_TOOL_MAP);
    // A different process (fresh cache object) imports only the wanted ids.
    let c2 = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let wanted: HashSet<String> = ["call_keep".to_string(), "call_other".to_string()].into();
    let got = c2.import_tool_ids(&wanted);
    assert_eq!(got, vec![ToolMapEntry { id: "call_keep".into(), dsml: keep.as_bytes().to_vec() }]);
    assert!(c2.import_tool_ids(&HashSet::from(["call_gone".to_string()])).is_empty());
    // Disabled exact replay: nothing imported, no trailers written.
    let mut o = options(CTX, 16, &logs, &clock);
    o.exact_tool_replay = false;
    let c3 = DiskCache::open(dir.path(), o).unwrap();
    assert!(c3.import_tool_ids(&wanted).is_empty());
    let st3 = store(&c3, b"other text", &toks(40, 3), SaveReason::Evict, KeyKind::TokenText, &tm).unwrap();
    assert_eq!(fs::read(&st3.path).unwrap()[6] & EXT_TOOL_MAP, 0);
}

#[test]
fn visible_transcript_keys_set_ext_bits() {
    let dir = Scratch::new("visible");
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    let visible = b"prompt</think>answer<eos>".to_vec();
    let st = store(&c, &visible, &toks(77, 5), SaveReason::Evict, KeyKind::ResponsesVisible, &[]).unwrap();
    assert_eq!(fs::read(&st.path).unwrap()[6], EXT_RESPONSES_VISIBLE);
    assert_eq!(logs.count("key=responses-visible"), 1);
    let hit = load(&c, &[&visible[..], b"<User>next"].concat(), &mut Vec::new()).hit.unwrap();
    assert_eq!(hit.key_kind, KeyKind::ResponsesVisible);
    assert_eq!(hit.tokens.len(), 77);
}

#[test]
fn consume_over_deletes_after_load() {
    let dir = Scratch::new("consume");
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let mut o = options(CTX, 16, &logs, &clock);
    o.policy.consume_over_tokens = 60;
    let c = DiskCache::open(dir.path(), o).unwrap();
    let a = store(&c, b"small one", &toks(50, 1), SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    let b = store(&c, b"big one", &toks(70, 1), SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    assert!(load(&c, b"small one!", &mut Vec::new()).hit.is_some());
    assert!(a.path.exists());
    let hit = load(&c, b"big one!", &mut Vec::new()).hit.unwrap();
    assert!(hit.consumed && !b.path.exists());
}

#[test]
fn directory_can_vanish_at_any_time() {
    let dir = Scratch::new("vanish");
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let c = DiskCache::open(dir.path().join("a/b"), options(CTX, 16, &logs, &clock)).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.path().join("a/b")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    store(&c, b"some text", &toks(30, 1), SaveReason::Cold, KeyKind::TokenText, &[]).unwrap();
    fs::remove_dir_all(dir.path()).unwrap();
    assert!(load(&c, b"some text", &mut Vec::new()).hit.is_none());
    assert!(c.entries().is_empty());
    assert!(c.import_tool_ids(&HashSet::from(["x".to_string()])).is_empty());
    c.evict(None);
    // The next store recreates it.
    store(&c, b"some text", &toks(30, 1), SaveReason::Evict, KeyKind::TokenText, &[]).unwrap();
    assert!(load(&c, b"some text", &mut Vec::new()).hit.is_some());
}

#[test]
fn stale_temp_files_of_dead_processes_are_removed_at_open() {
    let dir = Scratch::new("tmp");
    fs::create_dir_all(dir.path()).unwrap();
    let key = sha1_hex(b"x");
    // PID 0x7ffffff0 cannot be a live process on Linux (pid_max ≤ 2^22).
    let dead = dir.path().join(format!("{key}.kv.tmp.{}", 0x7fff_fff0u32));
    let unrelated = dir.path().join("notes.txt");
    fs::write(&dead, b"partial").unwrap();
    fs::write(&unrelated, b"keep").unwrap();
    let (logs, clock) = (Logs::default(), Clock::new(100));
    let _c = DiskCache::open(dir.path(), options(CTX, 16, &logs, &clock)).unwrap();
    if cfg!(target_os = "linux") {
        assert!(!dead.exists());
    }
    assert!(unrelated.exists());
}

#[test]
fn flags_build_a_cache() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        kv: ds4_kvcache::KvCacheArgs,
        #[command(flatten)]
        tools: ds4_kvcache::ToolReplayArgs,
    }
    let dir = Scratch::new("flags");
    let d = dir.path().to_str().unwrap();
    let cli = Cli::try_parse_from(["x", "--kv-disk-dir", d, "--kv-disk-space-mb", "64"]).unwrap();
    let logs = Logs::default();
    let l = logs.0.clone();
    let c = DiskCache::from_args(&cli.kv, &cli.tools, None, Some(std::sync::Arc::new(move |m: &str| {
        l.lock().unwrap().push(m.to_string())
    })))
    .unwrap()
    .unwrap();
    assert_eq!(c.options().budget_bytes, 64 << 20);
    assert_eq!(logs.count("budget=64 MiB, cross-quant=accept, min=512, cold_max=30000"), 1);
    let none = Cli::try_parse_from(["x"]).unwrap();
    assert!(DiskCache::from_args(&none.kv, &none.tools, None, None).unwrap().is_none());
    let bad = Cli::try_parse_from(["x", "--kv-disk-dir", d, "--kv-cache-cold-max-tokens", "3"]).unwrap();
    assert!(DiskCache::from_args(&bad.kv, &bad.tools, None, None).is_err());
}
