//! Eviction on a real directory under tiny budgets (KVCACHE.md §6, §7, §9.9-10).

mod common;

use std::fs;

use common::*;
use ds4_kvcache::{DiskCache, EngineInfo, KeyKind, PayloadWriter, SaveReason, StoreRequest, Stored};

const CTX: u32 = 4096;
const ENG: EngineInfo = EngineInfo { quant_bits: 2, ctx: CTX };

fn store(c: &DiskCache, text: &str, n: usize, reason: SaveReason) -> Stored {
    let tokens: Vec<u32> = (0..n as u32).map(|i| i % 384).collect();
    let payload = synth_payload(&fixture_shape(CTX), CTX, &tokens, n as u64);
    c.store(
        &StoreRequest {
            reason,
            tokens: &tokens,
            live_tokens: &tokens,
            original_len: n,
            text: text.as_bytes(),
            key_kind: KeyKind::TokenText,
            engine: ENG,
            tool_map: &[],
        },
        PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
    )
    .unwrap()
}

fn open(dir: &Scratch, budget: u64, logs: &Logs, clock: &Clock) -> DiskCache {
    let mut o = options(CTX, 16, logs, clock);
    o.budget_bytes = budget;
    DiskCache::open(dir.path(), o).unwrap()
}

fn hit(c: &DiskCache, text: &str) {
    let lk = c.load(text.as_bytes(), ENG, |r, _| {
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        Ok(payload_tokens(&b))
    });
    assert!(lk.hit.is_some(), "expected a hit for {text}");
}

#[test]
fn cold_anchor_outranks_denser_dumps() {
    // §9.10 with real files: a 64-token cold anchor (~0.36 MB) against
    // 256-token continued/evict files (~0.53 MB, 2.7x denser).
    let dir = Scratch::new("weights");
    let (logs, clock) = (Logs::default(), Clock::new(1_000_000));
    let c = open(&dir, 0, &logs, &clock);
    let cold = store(&c, "anchor: system + tools", 64, SaveReason::Cold);
    let cont = store(&c, "continued: long live tail", 256, SaveReason::Continued);
    let dump = store(&c, "evict: another live tail", 256, SaveReason::Evict);
    assert!(cont.file_size > cold.file_size);
    // Budget for anchor + dump: the continued file goes.
    let c = open(&dir, cold.file_size + dump.file_size, &logs, &clock);
    assert!(cold.path.exists() && dump.path.exists() && !cont.path.exists());
    assert_eq!(logs.count("kv cache evicted reason=disk-cache-full tokens=256 hits=0"), 1);
    // Budget for one file: the anchor survives the denser dump.
    drop(c);
    let _c = open(&dir, cold.file_size.max(dump.file_size), &logs, &clock);
    assert!(cold.path.exists() && !dump.path.exists());
}

#[test]
fn evict_dump_outranks_denser_continued() {
    let dir = Scratch::new("dump");
    let (logs, clock) = (Logs::default(), Clock::new(1_000_000));
    let c = open(&dir, 0, &logs, &clock);
    let dump = store(&c, "dump", 130, SaveReason::Shutdown);
    let cont = store(&c, "continued", 512, SaveReason::Continued);
    drop(c);
    let _c = open(&dir, dump.file_size.max(cont.file_size), &logs, &clock);
    assert!(dump.path.exists() && !cont.path.exists());
}

#[test]
fn just_stored_file_is_protected() {
    let dir = Scratch::new("protect");
    let (logs, clock) = (Logs::default(), Clock::new(1_000_000));
    let c0 = open(&dir, 0, &logs, &clock);
    let size_probe = store(&c0, "probe", 256, SaveReason::Continued);
    fs::remove_file(&size_probe.path).unwrap();
    // Room for exactly one 256-token file (plus the 1 % store headroom).
    let budget = size_probe.file_size + size_probe.file_size / 50;
    let c = open(&dir, budget, &logs, &clock);
    let cold = store(&c, "cold anchor", 256, SaveReason::Cold);
    clock.set(1_000_100);
    // The new continued file scores lower but was just written: the anchor goes.
    let cont = store(&c, "fresh continued", 256, SaveReason::Continued);
    assert!(cont.path.exists() && !cold.path.exists());
}

#[test]
fn hits_keep_files_until_they_decay() {
    let dir = Scratch::new("hits");
    let (logs, clock) = (Logs::default(), Clock::new(1_000_000));
    let c = open(&dir, 0, &logs, &clock);
    let a = store(&c, "file a", 200, SaveReason::Continued);
    let b = store(&c, "file b", 200, SaveReason::Continued);
    // a is used three times, then b is touched later (fresh last_used, no hits).
    for _ in 0..3 {
        hit(&c, "file a");
    }
    clock.set(1_000_060);
    let one = a.file_size;
    // Equal tokens/size: the hits decide.
    let mut o = options(CTX, 16, &logs, &clock);
    o.budget_bytes = one;
    drop(DiskCache::open(dir.path(), o.clone()).unwrap());
    assert!(a.path.exists() && !b.path.exists());
    // Recreate b fresh, then let a's hits age for 30 days: a now goes.
    let b = store(&c, "file b", 200, SaveReason::Continued);
    clock.set(1_000_060 + 30 * 86_400);
    // b written at 1_000_060 (zero hits) vs a (3 hits, decayed to ~0 → 0):
    // equal scores, the older last_used goes first: a was last used at 1_000_000.
    drop(DiskCache::open(dir.path(), o).unwrap());
    assert!(!a.path.exists() && b.path.exists());
}

#[test]
fn eviction_order_matches_independent_scoring() {
    // Five files, a budget for about two: the survivors are the ones with the
    // highest (decayed hits + reason weight) × tokens / size, computed here
    // from the spec formula.
    let dir = Scratch::new("order");
    let (logs, clock) = (Logs::default(), Clock::new(2_000_000));
    let c = open(&dir, 0, &logs, &clock);
    let specs = [
        ("f-cold-small", 40, SaveReason::Cold),
        ("f-cont-big", 600, SaveReason::Continued),
        ("f-evict-mid", 300, SaveReason::Evict),
        ("f-unknown", 300, SaveReason::Unknown),
        ("f-shutdown", 150, SaveReason::Shutdown),
    ];
    let mut stored = Vec::new();
    for (i, (t, n, r)) in specs.iter().enumerate() {
        clock.set(2_000_000 + i as u64);
        stored.push(store(&c, t, *n, *r));
    }
    clock.set(2_000_000 + 10);
    hit(&c, "f-cont-big");
    let now = 2_000_000 + 3600;
    clock.set(now);
    let weight = |r: SaveReason| match r {
        SaveReason::Cold => 16.0,
        SaveReason::Evict | SaveReason::Shutdown => 4.0,
        _ => 1.0,
    };
    let mut scored: Vec<(f64, usize)> = specs
        .iter()
        .enumerate()
        .map(|(i, (t, n, r))| {
            let hits = if *t == "f-cont-big" { 2f64.powf(-((now - 2_000_010) as f64) / 21600.0) } else { 0.0 };
            ((hits + weight(*r)) * *n as f64 / stored[i].file_size as f64, i)
        })
        .collect();
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    let keep: Vec<usize> = scored.iter().take(2).map(|s| s.1).collect();
    let budget: u64 = keep.iter().map(|&i| stored[i].file_size).sum::<u64>() + 1000;
    logs.clear();
    let _c = open(&dir, budget, &logs, &clock);
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(s.path.exists(), keep.contains(&i), "{}: scores {scored:?}", specs[i].0);
    }
    // Deleted lowest score first.
    let evicted: Vec<String> = logs.lines().into_iter().filter(|l| l.contains("evicted")).collect();
    assert_eq!(evicted.len(), 3);
    for (line, (_, i)) in evicted.iter().zip(scored.iter().rev()) {
        assert!(line.contains(&format!("tokens={} ", specs[*i].1)), "{line} vs {}", specs[*i].0);
    }
}
