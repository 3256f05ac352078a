//! `ds4-server`: load the model and serve (SERVING.md §10).

use std::sync::Arc;

use clap::Parser;
use ds4_server::config::Args;
use ds4_server::real::{TokCodec, TokRender};
use ds4_server::slog;

fn main() {
    let args = Args::parse();
    if let Err(e) = args.validate() {
        eprintln!("ds4-server: {e}");
        std::process::exit(2);
    }
    std::process::exit(real_main(&args));
}

fn real_main(args: &Args) -> i32 {
    if let Some(d) = &args.chdir {
        if let Err(e) = std::env::set_current_dir(d) {
            slog!("cannot chdir to {}: {e}", d.display());
            return 1;
        }
    }
    let _lock = match ds4_server::server::acquire_lock(&args.lock_file) {
        Ok(f) => f,
        Err(e) => {
            slog!("{e}");
            return 1;
        }
    };
    if let Some(n) = args.threads {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
    }
    // Fail fast on an impossible backend request, before loading anything.
    if let Err(e) = ds4_server::backend::backend_choice(args) {
        slog!("{e}");
        return 2;
    }
    let t0 = std::time::Instant::now();
    let gguf = match ds4_gguf::Gguf::open(&args.model) {
        Ok(g) => g,
        Err(e) => {
            slog!("cannot open model {}: {e}", args.model.display());
            return 1;
        }
    };
    let tok = match ds4_tok::Tokenizer::from_gguf(&gguf) {
        Ok(t) => t,
        Err(e) => {
            slog!("cannot build tokenizer from {}: {e}", args.model.display());
            return 1;
        }
    };
    let model = match ds4_engine::Model::from_gguf(gguf) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            slog!("cannot load model {}: {e}", args.model.display());
            return 1;
        }
    };
    let disk = match open_disk_cache(args, &model.hp) {
        Ok(d) => d,
        Err(e) => {
            slog!("{e}");
            return 1;
        }
    };
    let kv_mib = ds4_engine::session::memory_bytes(&model.hp, args.ctx) >> 20;
    let (session, backend) = match ds4_server::backend::open_session(args, model, tok.special().eos) {
        Ok(s) => s,
        Err(e) => {
            slog!("{e}");
            return 1;
        }
    };
    slog!(
        "model {} loaded in {:.1}s, ctx {} (KV ~{kv_mib} MiB), backend {backend}",
        args.model.display(),
        t0.elapsed().as_secs_f64(),
        args.ctx,
    );
    ds4_server::server::run(args, session, Arc::new(TokCodec { tok }), Arc::new(TokRender), disk)
}

/// `--kv-disk-dir`: open (create) the checkpoint directory with the model's
/// payload shape, so other models' files are rejected before loading.
fn open_disk_cache(args: &Args, hp: &ds4_engine::Hparams) -> Result<Option<Arc<ds4_kvcache::DiskCache>>, String> {
    let shape = ds4_kvcache::ModelShape::for_context(
        hp.head_dim as u32,
        hp.idx_head_dim as u32,
        hp.n_vocab as u32,
        hp.compress_ratios.iter().map(|&r| r as u32).collect(),
        u32::try_from(args.ctx).unwrap_or(u32::MAX),
    );
    let tools = ds4_kvcache::ToolReplayArgs {
        tool_memory_max_ids: u32::try_from(args.tool_memory_max_ids).unwrap_or(u32::MAX),
        disable_exact_dsml_tool_replay: args.disable_exact_dsml_tool_replay,
    };
    let log: ds4_kvcache::LogFn = Arc::new(|m: &str| slog!("{m}"));
    ds4_kvcache::DiskCache::from_args(&args.kv, &tools, Some(shape), Some(log))
        .map(|d| d.map(Arc::new))
        .map_err(|e| format!("cannot open the KV disk cache: {e}"))
}
