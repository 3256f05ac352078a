//! `ds4 --mtp`: speculative greedy decoding prints exactly what plain greedy decoding prints
//! (one-shot and interactive), reports its acceptance on stderr, and is off unless CLI.md §4.1
//! says it applies.

mod common;
use common::*;
use ds4_engine::layout::Variant;
use ds4_engine::{synth, Model};
use ds4_gguf::Gguf;
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
        assert!((1..=40).contains(&committed) && steps <= committed, "{err}");
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

/// The one-layer mirror model and its MTP file ([`synth::mirror_model_bytes`]): with
/// `--mtp-pairing ds4` each MTP row recomputes the model's own layer row, so its drafts are
/// the model's greedy choices (the engine's tests explain why).
fn mirror_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let main = synth::mirror_model_bytes(0x9e37_79b9_7f4a_7c15).unwrap();
    let mtp = synth::mirror_mtp_bytes(&Gguf::from_bytes(main.clone()).unwrap(), true).unwrap();
    let (mp, tp) = (dir.join("mirror.gguf"), dir.join("mirror-mtp.gguf"));
    std::fs::write(&mp, main).unwrap();
    std::fs::write(&tp, mtp).unwrap();
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
