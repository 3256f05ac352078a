//! `ds4-gguf`: inspect GGUF files and write random-weight DeepSeek V4 models.
//!
//! ```text
//! ds4-gguf info FILE [--all]
//! ds4-gguf synth --preset tiny|full --quant q2|q4|f16 --seed N --out FILE [--dry-run] [--mtp] [--layers N]
//! ```

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use ds4_engine::layout::{self, Variant};
use ds4_engine::synth::{self, Preset, Quant, SynthOptions};
use ds4_engine::Hparams;
use ds4_gguf::{Gguf, MetaValue};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "ds4-gguf", about = "Inspect GGUF files and write random-weight DeepSeek V4 models")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Metadata, tensor table and DS4 binding verdict (exit status 2 if it does not bind).
    Info {
        file: PathBuf,
        /// Print arrays in full (default: first 8 elements).
        #[arg(long)]
        all: bool,
    },
    /// Write a random-weight model with the published tensor names, shapes and types.
    Synth {
        #[arg(long, value_enum)]
        preset: PresetArg,
        #[arg(long, value_enum, default_value = "q2")]
        quant: QuantArg,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (with --dry-run: receives the header and tensor table only).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Compute the tensor table and file size without generating data.
        #[arg(long)]
        dry_run: bool,
        /// Write the preset's MTP drafter file (MODEL.md §4.4; experts Q4_K, or F16 with
        /// --quant f16) instead of the model.
        #[arg(long)]
        mtp: bool,
        /// Keep only the first N layers (same per-layer shapes; e.g. the full preset on an
        /// 80 GB GPU, which all 43 overflow).
        #[arg(long)]
        layers: Option<usize>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum PresetArg {
    Tiny,
    Full,
}

#[derive(Clone, Copy, ValueEnum)]
enum QuantArg {
    Q2,
    Q4,
    F16,
}

fn main() {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ds4-gguf: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> Result<i32> {
    match cli.cmd {
        Cmd::Info { file, all } => {
            let g = Gguf::open(&file)?;
            let mut out = std::io::stdout().lock();
            print_info(&mut out, &g, all)?;
            let (ok, verdict) = binding_verdict(&g);
            writeln!(out, "\n{verdict}")?;
            Ok(if ok { 0 } else { 2 })
        }
        Cmd::Synth { preset, quant, seed, out, dry_run, mtp, layers } => {
            let opts = SynthOptions {
                preset: match preset {
                    PresetArg::Tiny => Preset::Tiny,
                    PresetArg::Full => Preset::Full,
                },
                quant: match quant {
                    QuantArg::Q2 => Quant::Q2,
                    QuantArg::Q4 => Quant::Q4,
                    QuantArg::F16 => Quant::F16,
                },
                seed,
                layers,
            };
            synth_cmd(&opts, mtp, out, dry_run)?;
            Ok(0)
        }
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn fmt_value(v: &MetaValue, all: bool) -> String {
    match v {
        MetaValue::Array(a) => {
            let n = if all { a.len() } else { a.len().min(8) };
            let items: Vec<String> = a[..n].iter().map(|e| fmt_value(e, all)).collect();
            let more = if n < a.len() { format!(", … ({} total)", a.len()) } else { String::new() };
            format!("[{}{more}]", items.join(", "))
        }
        MetaValue::Str(s) => format!("{s:?}"),
        MetaValue::U8(x) => x.to_string(),
        MetaValue::I8(x) => x.to_string(),
        MetaValue::U16(x) => x.to_string(),
        MetaValue::I16(x) => x.to_string(),
        MetaValue::U32(x) => x.to_string(),
        MetaValue::I32(x) => x.to_string(),
        MetaValue::U64(x) => x.to_string(),
        MetaValue::I64(x) => x.to_string(),
        MetaValue::F32(x) => format!("{x:e}"),
        MetaValue::F64(x) => format!("{x:e}"),
        MetaValue::Bool(x) => x.to_string(),
    }
}

fn array_type(v: &MetaValue) -> String {
    match v {
        MetaValue::Array(a) => format!("array<{}>", a.first().map_or("?".to_string(), array_type)),
        v => v.type_name().to_string(),
    }
}

fn print_info(out: &mut impl Write, g: &Gguf, all: bool) -> Result<()> {
    let file_len = g.bytes().len() as u64;
    writeln!(out, "GGUF v{}  {} bytes ({:.2} GiB)  alignment {}  data at {}", g.version, file_len, gib(file_len), g.alignment, g.data_start)?;
    writeln!(out, "\nmetadata ({} keys):", g.metadata.len())?;
    for (k, v) in &g.metadata {
        writeln!(out, "  {k}: {} = {}", array_type(v), fmt_value(v, all))?;
    }
    writeln!(out, "\ntensors ({}):", g.tensors.len())?;
    writeln!(out, "  {:<44} {:>26} {:>8} {:>14} {:>14}", "name", "dims", "type", "offset", "bytes")?;
    let mut by_type: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for t in &g.tensors {
        let dims = format!("{:?}", t.dims);
        writeln!(out, "  {:<44} {:>26} {:>8} {:>14} {:>14}", t.name, dims, t.ty.name(), t.offset, t.n_bytes)?;
        let e = by_type.entry(t.ty.name()).or_default();
        e.0 += 1;
        e.1 += t.n_bytes;
    }
    writeln!(out, "\nby type:")?;
    for (ty, (n, b)) in by_type {
        writeln!(out, "  {ty:<8} {n:>5} tensors {:>10.3} GiB", gib(b))?;
    }
    Ok(())
}

/// Whether the file binds as a DS4 main model (or as the MTP GGUF), with the reason.
fn binding_verdict(g: &Gguf) -> (bool, String) {
    let is_mtp = g.tensor("token_embd.weight").is_none() && g.tensors.iter().any(|t| t.name.starts_with("mtp.0."));
    if is_mtp {
        // The MTP GGUF is bound by tensor name only (MODEL.md §1.2).
        let specs = layout::expected_mtp_tensors(&Hparams::published(), Variant::Any);
        return match layout::check(&specs, |n| g.tensor(n)) {
            Ok(()) => (true, format!("binding: OK (MTP GGUF, {} tensors)", specs.len())),
            Err(e) => (false, format!("binding: FAILED (MTP GGUF)\n{e}")),
        };
    }
    let hp = match Hparams::from_gguf(g) {
        Ok(hp) => hp,
        Err(e) => return (false, format!("binding: FAILED (metadata): {e}")),
    };
    let specs = layout::expected_tensors(&hp, Variant::Any);
    match layout::check(&specs, |n| g.tensor(n)) {
        Ok(()) => {
            let ty = |n: &str| g.tensor(n).map_or("?", |t| t.ty.name());
            (
                true,
                format!(
                    "binding: OK ({} model, {} layers, width {}, vocab {}; experts gate/up {} down {})",
                    if hp.is_full_model() { "full" } else { "test-size" },
                    hp.n_layer,
                    hp.n_embd,
                    hp.n_vocab,
                    ty("blk.0.ffn_gate_exps.weight"),
                    ty("blk.0.ffn_down_exps.weight"),
                ),
            )
        }
        Err(e) => (false, format!("binding: FAILED\n{e}")),
    }
}

fn synth_cmd(opts: &SynthOptions, mtp: bool, out: Option<PathBuf>, dry_run: bool) -> Result<()> {
    let hp = opts.hparams()?;
    let mtp_variant = synth::mtp_variant(opts.quant);
    let (h, _) = if mtp { synth::mtp_plan(&hp, mtp_variant, opts.seed)? } else { synth::plan(opts)? };
    let layout = h.layout()?;
    let n = h.tensors().len();
    if dry_run {
        let mut by_type: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
        for t in h.tensors() {
            let e = by_type.entry(t.ty.name()).or_default();
            e.0 += 1;
            e.1 += t.n_bytes();
        }
        println!("{n} tensors, header {} bytes, data at {}", layout.header_bytes, layout.data_start);
        for (ty, (k, b)) in by_type {
            println!("  {ty:<8} {k:>5} tensors {:>10.3} GiB", gib(b));
        }
        println!("total {} bytes ({:.2} GiB)", layout.total_bytes, gib(layout.total_bytes));
        if let Some(p) = out {
            std::fs::write(&p, h.table_bytes()?).with_context(|| format!("writing {}", p.display()))?;
            println!("wrote the header and tensor table ({} bytes, no tensor data) to {}", layout.header_bytes, p.display());
        }
        return Ok(());
    }
    let Some(path) = out else { bail!("--out FILE is required (or use --dry-run)") };
    let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let bar = indicatif::ProgressBar::new(layout.total_bytes);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .unwrap(),
    );
    let progress = |done, _| {
        bar.set_position(done);
        true
    };
    let res = if mtp { synth::write_mtp(&hp, mtp_variant, opts.seed, file, progress) } else { synth::write(opts, file, progress) };
    bar.finish_and_clear();
    match res {
        Ok(f) => {
            f.sync_all().ok();
            println!("wrote {} ({n} tensors, {} bytes, {:.2} GiB)", path.display(), layout.total_bytes, gib(layout.total_bytes));
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(e).with_context(|| format!("writing {}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The synthesized vocabulary renders and round-trips DS4 chats through the real tokenizer.
    #[test]
    fn synth_tiny_tokenizer_renders_chats() {
        let g = Gguf::from_bytes(synth::synth_tiny(1)).unwrap();
        let tok = ds4_tok::Tokenizer::from_gguf(&g).unwrap();
        assert_eq!(tok.vocab_size(), 512);
        let chat = "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>What is the weather in the city?<｜Assistant｜><think>The user asks.</think>It is sunny.<｜end▁of▁sentence｜>";
        let ids = tok.encode_chat(chat);
        assert_eq!(tok.decode(&ids), chat.as_bytes());
        for s in ds4_tok::SERVING_SPECIALS {
            let id = tok.added_token_id(s).unwrap_or_else(|| panic!("{s} missing"));
            assert!(ids.contains(&id) || s == ds4_tok::DSML, "{s}");
        }
        // Learned merges apply: " the" is one token.
        assert!(tok.encode(" the").len() == 1);
    }

    #[test]
    fn info_reports_binding() {
        let g = Gguf::from_bytes(synth::synth_tiny(2)).unwrap();
        let (ok, v) = binding_verdict(&g);
        assert!(ok, "{v}");
        assert!(v.contains("IQ2_XXS") && v.contains("Q2_K"), "{v}");
        let mut s = Vec::new();
        print_info(&mut s, &g, false).unwrap();
        let s = String::from_utf8(s).unwrap();
        assert!(s.contains("blk.5.ffn_down_exps.weight") && s.contains("tokenizer.ggml.merges: array<string>"));
        // A fixture GGUF binds too.
        let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/model/t256-q4/model.gguf");
        let (ok, v) = binding_verdict(&Gguf::open(fx).unwrap());
        assert!(ok, "{v}");
    }
}
