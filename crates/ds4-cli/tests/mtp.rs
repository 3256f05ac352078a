//! `ds4 --mtp`: speculative greedy decoding prints exactly what plain greedy decoding prints
//! (one-shot and interactive), reports its acceptance on stderr, and is off unless CLI.md §4.1
//! says it applies.

mod common;
use common::*;
use ds4_engine::layout::Variant;
use ds4_engine::{synth, Model};
use ds4_gguf::writer::{GgufHeader, TensorSpec as WSpec};
use ds4_gguf::{GgmlType, Gguf};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn ids_arg(ids: &[u32]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// A random MTP file for a fixture model (experts typed like the model's).
fn synth_mtp_for(model: &str) -> PathBuf {
    let m = Model::load(model_path(model)).unwrap();
    let l = m.layers.last().unwrap();
    let v = Variant::Experts { gate_up: l.gate_exps.ty, down: l.down_exps.ty };
    let path = scratch(&format!("{model}-mtp.gguf"));
    std::fs::write(&path, synth::synth_mtp_bytes(&m.hp, v, 21).unwrap()).unwrap();
    path
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `(accepted, drafted, committed, steps)` from the `mtp:` stderr line(s), summed.
fn mtp_counts(err: &str) -> Option<(u64, u64, u64, u64)> {
    let mut sum: Option<(u64, u64, u64, u64)> = None;
    for line in err.lines().filter(|l| l.starts_with("ds4: mtp: ")) {
        // "ds4: mtp: A/D drafted tokens accepted (P%), C tokens in S steps (R tokens/step)"
        let w: Vec<&str> = line.split_whitespace().collect();
        let (a, d) = w[2].split_once('/').unwrap();
        let c = w[7].parse::<u64>().unwrap();
        let s = w[10].parse::<u64>().unwrap();
        let e = sum.get_or_insert((0, 0, 0, 0));
        *e = (e.0 + a.parse::<u64>().unwrap(), e.1 + d.parse::<u64>().unwrap(), e.2 + c, e.3 + s);
    }
    sum
}

#[test]
fn one_shot_output_is_identical_with_mtp() {
    let model = "t256-q2";
    let mp = model_path(model);
    let mtp = synth_mtp_for(model);
    let ids = read_i32(&fixtures().join(model).join("medium/tokens.i32.bin"));
    let prompt: Vec<u32> = ids[..90].iter().map(|&i| i as u32).collect();
    let p = ids_arg(&prompt);
    let base = ["--cpu", "-m", mp.to_str().unwrap(), "--prompt-tokens", &p, "--temp", "0", "-n", "40", "--ctx", "512"];
    let plain = run(&base);
    assert!(plain.status.success(), "{}", show(&plain));
    assert!(!plain.stdout.is_empty());
    let m = mtp.to_str().unwrap();
    let mut generated = None;
    for extra in [
        &["--mtp", m, "--mtp-draft", "4", "--mtp-margin", "0"][..],
        &["--mtp", m, "--mtp-draft", "16", "--mtp-margin", "0", "--mtp-pairing", "ds4"],
        &["--mtp", m, "--mtp-draft", "3", "--mtp-margin", "0", "--quality"],
        &["--mtp", m, "--mtp-draft", "2"],
    ] {
        let o = run(&[&base[..], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", show(&o));
        assert_eq!(o.stdout, plain.stdout, "{extra:?}: generated text differs");
        let err = stderr(&o);
        assert!(err.contains("MTP speculative decoding"), "{err}");
        let (_, _, committed, steps) = mtp_counts(&err).unwrap_or_else(|| panic!("no mtp line: {err}"));
        // Every variant generates the same tokens (up to EOS or the cap of 40).
        assert!(committed >= 1 && committed <= 40 && steps <= committed, "{err}");
        assert_eq!(*generated.get_or_insert(committed), committed, "{err}");
    }
    // Not speculating: default draft count, sampling, the env switch.
    let sampled: Vec<&str> = base.iter().map(|&a| if a == "0" { "0.5" } else { a }).collect();
    for (args, why) in [([&base[..], &["--mtp", m]].concat(), "--mtp-draft is 1"), ([&sampled[..], &["--mtp", m, "--mtp-draft", "4"]].concat(), "not greedy")] {
        let o = run(&args);
        assert!(o.status.success(), "{}", show(&o));
        assert!(stderr(&o).contains(why), "{}", show(&o));
        assert!(mtp_counts(&stderr(&o)).is_none());
    }
    let o = ds4().args(base).args(["--mtp", m, "--mtp-draft", "4"]).env("DS4_MTP_SPEC_DISABLE", "1").output().unwrap();
    assert!(stderr(&o).contains("DS4_MTP_SPEC_DISABLE"), "{}", show(&o));
    assert_eq!(o.stdout, plain.stdout);
    // A file that is not an MTP GGUF for this model is an error.
    let o = run(&[&base[..], &["--mtp", mp.to_str().unwrap(), "--mtp-draft", "4"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stderr(&o).contains("--mtp"), "{}", show(&o));
    let o = run(&[&base[..], &["--mtp", "/nonexistent/mtp.gguf"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let o = run(&[&base[..], &["--mtp", m, "--mtp-draft", "17"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

// ---- a model whose MTP file predicts it exactly -------------------------------------------

fn image(meta: &[(String, ds4_gguf::MetaValue)], tensors: &[(String, Vec<u64>, GgmlType, Vec<u8>)]) -> Vec<u8> {
    let mut h = GgufHeader::new();
    for (k, v) in meta {
        h.set(k.clone(), v.clone());
    }
    for (n, d, t, _) in tensors {
        h.add_tensor(WSpec::new(n.clone(), d, *t));
    }
    let mut w = h.write(Vec::new()).unwrap();
    for (_, _, _, data) in tensors {
        w.write_tensor(data).unwrap();
    }
    w.finish().unwrap()
}

const F16_ONE: u16 = 0x3c00;
const F16_MINUS_ONE: u16 = 0xbc00;

/// A one-layer model (ratio 0, learned router, ±1 embeddings) and an MTP file whose block, HC
/// head and norm are that model's and whose `e_proj` is the identity (`h_proj` zero): with
/// `--mtp-pairing ds4` each MTP row recomputes the model's own layer row, so its drafts are
/// the model's greedy choices (the engine's tests explain why).
fn mirror_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let mut hp = synth::hparams(synth::Preset::Tiny);
    hp.n_layer = 1;
    hp.n_hash_layers = 0;
    hp.compress_ratios = vec![0];
    hp.swiglu_clamp = vec![10.0];
    hp.swiglu_clamp_shexp = vec![10.0];
    let g = Gguf::from_bytes(synth::synth_model_bytes(&hp, Variant::F16, 11).unwrap()).unwrap();
    let d = hp.n_embd;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut main = Vec::new();
    for t in &g.tensors {
        let data = if t.name == "token_embd.weight" {
            (0..d * hp.n_vocab)
                .flat_map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (if rng & 1 == 0 { F16_ONE } else { F16_MINUS_ONE }).to_le_bytes()
                })
                .collect()
        } else {
            g.tensor_data(t).to_vec()
        };
        main.push((t.name.clone(), t.dims.clone(), t.ty, data));
    }
    let mut mtp = Vec::new();
    for (n, dims, ty, data) in &main {
        if let Some(rest) = n.strip_prefix("blk.0.") {
            mtp.push((format!("mtp.0.{rest}"), dims.clone(), *ty, data.clone()));
        }
    }
    for (to, from) in [("hc_head_fn", "output_hc_fn"), ("hc_head_base", "output_hc_base"), ("hc_head_scale", "output_hc_scale"), ("norm", "output_norm")] {
        let (_, dims, ty, data) = main.iter().find(|t| t.0 == format!("{from}.weight")).unwrap();
        mtp.push((format!("mtp.0.{to}.weight"), dims.clone(), *ty, data.clone()));
    }
    let blocks = d / 32;
    let q8 = |identity: bool| {
        let mut out = vec![0u8; d * blocks * 34];
        if identity {
            for r in 0..d {
                let b = (r * blocks + r / 32) * 34;
                out[b..b + 2].copy_from_slice(&F16_ONE.to_le_bytes());
                out[b + 2 + r % 32] = 1;
            }
        }
        out
    };
    let dd = vec![d as u64, d as u64];
    mtp.push(("mtp.0.e_proj.weight".into(), dd.clone(), GgmlType::Q8_0, q8(true)));
    mtp.push(("mtp.0.h_proj.weight".into(), dd, GgmlType::Q8_0, q8(false)));
    for n in ["enorm", "hnorm"] {
        mtp.push((format!("mtp.0.{n}.weight"), vec![d as u64], GgmlType::F32, 1f32.to_le_bytes().repeat(d)));
    }
    let (mp, tp) = (dir.join("mirror.gguf"), dir.join("mirror-mtp.gguf"));
    std::fs::write(&mp, image(&g.metadata, &main)).unwrap();
    std::fs::write(&tp, image(&[], &mtp)).unwrap();
    (mp, tp)
}

#[test]
fn mirror_mtp_accepts_multi_token_runs_one_shot_and_interactive() {
    let dir = scratch("mirror");
    std::fs::create_dir_all(&dir).unwrap();
    let (mp, tp) = mirror_pair(&dir);
    let (mp, tp) = (mp.to_str().unwrap(), tp.to_str().unwrap());
    let prompt = ids_arg(&(0..20u32).map(|i| (i * 131 + 7) % 512).collect::<Vec<_>>());
    let base = ["--cpu", "-m", mp, "--no-qat", "--prompt-tokens", &prompt, "--temp", "0", "-n", "150", "--ctx", "512"];
    let plain = run(&base);
    assert!(plain.status.success(), "{}", show(&plain));
    let o = run(&[&base[..], &["--mtp", tp, "--mtp-draft", "6", "--mtp-margin", "0", "--mtp-pairing", "ds4"]].concat());
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(o.stdout, plain.stdout, "speculative output differs");
    let (a, d, c, s) = mtp_counts(&stderr(&o)).unwrap();
    eprintln!("one-shot mirror: accepted {a}/{d}, {c} tokens in {s} steps");
    assert_eq!(c, 150);
    assert!(a * 10 >= d * 9 && s * 4 <= c, "acceptance {a}/{d}, {c} tokens in {s} steps");

    // Interactive (lines on stdin): two turns, the second reusing the first's KV; the
    // transcript printed is the same with and without MTP.
    let chat = |extra: &[&str]| {
        let mut c = ds4();
        c.args(["--cpu", "-m", mp, "--no-qat", "--temp", "0", "-n", "60", "--ctx", "1024", "--nothink"]).args(extra);
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"Hello there\nTell me more\n/quit\n").unwrap();
        child.wait_with_output().unwrap()
    };
    let p = chat(&[]);
    let q = chat(&["--mtp", tp, "--mtp-draft", "4", "--mtp-margin", "0", "--mtp-pairing", "ds4"]);
    assert!(p.status.success() && q.status.success(), "{}\n{}", show(&p), show(&q));
    assert_eq!(q.stdout, p.stdout, "interactive transcript differs");
    let err = stderr(&q);
    assert_eq!(err.lines().filter(|l| l.starts_with("ds4: mtp: ")).count(), 2, "{err}");
    let (a, d, _, _) = mtp_counts(&err).unwrap();
    assert!(a * 10 >= d * 9, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
