//! ds4-bench (CLI.md §7): instantaneous prefill / generation throughput at growing context
//! frontiers, one CSV row per frontier, plus an SVG plot and (CUDA) the achieved weight
//! bandwidth per decoded token against a device-copy ceiling measured in the same run.
//!
//! Extra modes for the CUDA backend (device verification, run by tools/gpu/*.sh):
//!   --verify-fixtures DIR   every fixture case on the GPU + GPU-vs-CPU agreement
//!   --kernel-bench          matvec/GEMM bandwidth at the real shapes, random blocks

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use ds4_engine::backend_select::{BackendChoice, Device, LoadEvent, SessionConfig};
use ds4_engine::cuda::{self, CudaModel, CudaSession, Gpu, Precision};
use ds4_engine::model::Model;
use ds4_engine::{Session, Snapshot};
use ds4_gguf::Gguf;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[path = "ds4-bench/verify.rs"]
mod verify;

#[derive(Parser, Debug)]
#[command(name = "ds4-bench", about = "DeepSeek V4 Flash throughput at context frontiers")]
struct Args {
    #[arg(short = 'm', long = "model", default_value = "ds4flash.gguf")]
    model: PathBuf,
    #[arg(long = "prompt-file")]
    prompt_file: Option<PathBuf>,
    #[arg(long = "chat-prompt-file")]
    chat_prompt_file: Option<PathBuf>,
    /// Deterministic pseudo-random token ids instead of a text file (synthetic models).
    #[arg(long = "random-prompt")]
    random_prompt: Option<usize>,
    #[arg(long = "sys", alias = "system", default_value = "You are a helpful assistant.")]
    system: String,
    #[arg(long = "ctx-start", default_value_t = 2048)]
    ctx_start: usize,
    #[arg(long = "ctx-max", default_value_t = 32768)]
    ctx_max: usize,
    #[arg(long = "ctx-alloc")]
    ctx_alloc: Option<usize>,
    #[arg(long = "step-incr", default_value_t = 2048)]
    step_incr: usize,
    #[arg(long = "step-mul", default_value_t = 1.0)]
    step_mul: f64,
    #[arg(short = 'n', long = "gen-tokens", alias = "tokens", default_value_t = 128)]
    gen_tokens: usize,
    #[arg(long = "csv")]
    csv: Option<PathBuf>,
    /// SVG plot of the CSV (default: the CSV path with .svg).
    #[arg(long = "svg")]
    svg: Option<PathBuf>,
    #[arg(long = "cuda")]
    cuda: bool,
    #[arg(long = "cpu")]
    cpu: bool,
    #[arg(long = "metal")]
    metal: bool,
    #[arg(long = "backend")]
    backend: Option<String>,
    #[arg(short = 't', long = "threads")]
    threads: Option<usize>,
    /// Reference precision on the GPU (f32 prefill GEMMs).
    #[arg(long = "quality")]
    quality: bool,
    #[arg(long = "warm-weights")]
    warm_weights: bool,
    /// Turn off the FP8/FP4 QAT simulation.
    #[arg(long = "no-qat")]
    no_qat: bool,
    /// Disable CUDA graphs for decode.
    #[arg(long = "no-graphs")]
    no_graphs: bool,
    /// No warm-up prefill before the timed ones (the first then includes the kernels'
    /// first-use costs, as a process's first prompt does).
    #[arg(long = "no-warm-up")]
    no_warm_up: bool,
    #[arg(long = "verify-fixtures")]
    verify_fixtures: Option<PathBuf>,
    #[arg(long = "kernel-bench")]
    kernel_bench: bool,
}

enum Bk {
    /// The raw GPU session: greedy steps take the argmax on the device (no logits copy).
    Cuda(Box<CudaSession>),
    Cpu(Session),
}

enum Snap {
    Cuda(Vec<u8>),
    Cpu(Box<Snapshot>),
}

/// Counts bytes written (the size of a payload without keeping it).
struct ByteCount(usize);

impl Write for ByteCount {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Bk {
    fn sync(&mut self, toks: &[u32]) -> Result<()> {
        match self {
            Bk::Cuda(s) => s.sync(toks).map_err(|e| anyhow!("{e}")),
            Bk::Cpu(s) => s.sync(toks, &mut |_| true).map(|_| ()).map_err(|e| anyhow!("{e}")),
        }
    }
    /// A snapshot and the size of the DSV4 payload of the state (KVCACHE.md §3).
    fn snapshot(&mut self) -> Result<(Snap, usize)> {
        match self {
            Bk::Cuda(s) => {
                let p = s.save_payload().map_err(|e| anyhow!("{e}"))?;
                let n = p.len();
                Ok((Snap::Cuda(p), n))
            }
            Bk::Cpu(s) => {
                let mut n = ByteCount(0);
                s.save_payload(&mut n).map_err(|e| anyhow!("{e}"))?;
                Ok((Snap::Cpu(Box::new(s.snapshot())), n.0))
            }
        }
    }
    fn restore(&mut self, s: Snap) -> Result<()> {
        match (self, s) {
            (Bk::Cuda(c), Snap::Cuda(p)) => c.load_payload(&p).map_err(|e| anyhow!("{e}")),
            (Bk::Cpu(c), Snap::Cpu(snap)) => c.restore(&snap).map_err(|e| anyhow!("{e}")),
            _ => bail!("snapshot from another backend"),
        }
    }
    /// One greedy step: argmax (never `excl`) of the current logits, then decode it. On the
    /// GPU the token stays on the device (eval_greedy: the step may still be running when
    /// this returns; `wait` before reading a clock); DS4_GREEDY=host: argmax read back, then
    /// eval (the host round trip per token).
    fn step(&mut self, excl: Option<u32>) -> Result<u32> {
        match self {
            Bk::Cuda(s) if let Some((p, host)) = bench_sampling() => {
                let vocab = s.vocab();
                let cut = ds4_engine::sampling::near_max_cut(&p, vocab);
                let near = match (cut, ds4_engine::sampling::top_k_cut(&p, vocab), host) {
                    (Some((t, floor)), _, false) => s.near_max(t, floor, ds4_engine::sampling::near_max_wants_sum(&p)).map_err(|e| anyhow!("{e}"))?,
                    (None, Some(k), false) => s.top_k(k).map_err(|e| anyhow!("{e}"))?,
                    _ => None,
                };
                let tok = SAMPLE_RNG.with(|r| {
                    let mut rng = r.borrow_mut();
                    // (None: no set, or a nucleus the set cannot decide: every logit read back)
                    let pick = |n: &ds4_engine::sampling::NearMax, rng: &mut ds4_engine::sampling::Rng| {
                        if p.top_k > 0 {
                            Some(ds4_engine::sampling::sample_top_k(n, &p, rng))
                        } else {
                            ds4_engine::sampling::sample_near_max(n, &p, vocab, rng)
                        }
                    };
                    match near.as_ref().and_then(|n| pick(n, &mut rng).map(|t| (t, n.ids.len()))) {
                        Some((t, k)) => {
                            SAMPLE_STATS.with(|c| c.set((c.get().0 + 1, c.get().1 + k)));
                            Ok(t)
                        }
                        None => s.logits().map(|lg| ds4_engine::sampling::sample(lg, &p, &mut rng)).map_err(|e| anyhow!("{e}")),
                    }
                })?;
                s.eval(tok).map_err(|e| anyhow!("{e}"))?;
                Ok(tok)
            }
            Bk::Cuda(s) if !greedy_host() => s.eval_greedy(excl).map_err(|e| anyhow!("{e}")),
            Bk::Cuda(s) => {
                let t = s.argmax(excl).map_err(|e| anyhow!("{e}"))?;
                s.eval(t).map_err(|e| anyhow!("{e}"))?;
                Ok(t)
            }
            Bk::Cpu(s) => {
                let best = greedy_excluding(s.logits(), excl);
                s.eval(best).map_err(|e| anyhow!("{e}"))?;
                Ok(best)
            }
        }
    }
    /// Get ready for `n` decode steps without running them (CUDA: their graphs are built;
    /// DS4_BENCH_GRAPHS=timed leaves that to the timed steps, as before session 13).
    fn prepare(&mut self, n: usize) -> Result<()> {
        match self {
            Bk::Cuda(s) if !graphs_timed() => s.prepare_decode(n).map_err(|e| anyhow!("{e}")),
            _ => Ok(()),
        }
    }
    /// Wait for the queued decode work.
    fn wait(&mut self) -> Result<()> {
        match self {
            Bk::Cuda(s) => s.wait().map_err(|e| anyhow!("{e}")),
            Bk::Cpu(_) => Ok(()),
        }
    }
}

/// `DS4_BENCH_GRAPHS=timed`: decode graphs built inside the timed steps (see `Bk::prepare`).
fn graphs_timed() -> bool {
    std::env::var("DS4_BENCH_GRAPHS").is_ok_and(|v| v == "timed")
}

/// `DS4_GREEDY=host`: greedy decoding through the host (see `Bk::step`).
/// `DS4_BENCH_TOKENS=1`: print each frontier's generated tokens (comparing runs).
fn print_tokens() -> bool {
    std::env::var("DS4_BENCH_TOKENS").is_ok_and(|v| v == "1")
}

/// `DS4_BENCH_SAMPLE=T` (CUDA): sampled decoding at temperature T (min_p 0.05, as the
/// engine Session's runs do it: the min_p set gathered on the device and sampled on the host,
/// `CudaSession::near_max`; `DS4_BENCH_TOP_P=P`: top_p P too, the set with the vocabulary's
/// sum; `DS4_BENCH_TOP_K=K`: top_k K, the device's top-k set, `CudaSession::top_k`); with
/// `DS4_BENCH_SAMPLE_HOST=1` the logits read back and sampled on the host every token (the
/// path before). Returns the params and whether to read back.
fn bench_sampling() -> Option<(ds4_engine::sampling::SamplerParams, bool)> {
    // (read once: the decode steps ask every token)
    static SET: std::sync::OnceLock<Option<(ds4_engine::sampling::SamplerParams, bool)>> = std::sync::OnceLock::new();
    *SET.get_or_init(|| {
        let t: f32 = std::env::var("DS4_BENCH_SAMPLE").ok()?.parse().ok()?;
        let host = std::env::var("DS4_BENCH_SAMPLE_HOST").is_ok_and(|v| v == "1");
        let top_p = std::env::var("DS4_BENCH_TOP_P").ok().and_then(|v| v.parse().ok()).unwrap_or(ds4_engine::sampling::DEFAULT_TOP_P);
        let top_k = std::env::var("DS4_BENCH_TOP_K").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        Some((ds4_engine::sampling::SamplerParams { temperature: t, top_p, top_k, ..Default::default() }, host))
    })
}

thread_local! {
    /// DS4_BENCH_SAMPLE's random stream (a fixed seed: runs compare).
    static SAMPLE_RNG: std::cell::RefCell<ds4_engine::sampling::Rng> = std::cell::RefCell::new(ds4_engine::sampling::Rng::new(1));
    /// DS4_BENCH_SAMPLE: steps sampled from a device-gathered set, and the sets' total size.
    static SAMPLE_STATS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

fn greedy_host() -> bool {
    std::env::var("DS4_GREEDY").is_ok_and(|v| v == "host")
}

/// Argmax of `logits` never returning `excl` (ties to the smaller id), as the GPU kernel does.
fn greedy_excluding(logits: &[f32], excl: Option<u32>) -> u32 {
    let mut best: Option<usize> = None;
    for (i, &v) in logits.iter().enumerate() {
        if Some(i as u32) == excl {
            continue;
        }
        if best.is_none_or(|b| v > logits[b]) {
            best = Some(i);
        }
    }
    best.unwrap_or(0) as u32
}

/// One CSV row: context, prefill tokens, prefill t/s, generated tokens, decode t/s, payload bytes.
type Row = (usize, usize, f64, usize, f64, usize);

fn frontiers(a: &Args) -> Result<Vec<usize>> {
    if a.ctx_start == 0 || a.ctx_max < a.ctx_start {
        bail!("--ctx-max must be >= --ctx-start > 0");
    }
    if a.step_mul < 1.0 || !a.step_mul.is_finite() {
        bail!("--step-mul must be >= 1");
    }
    if a.step_mul == 1.0 && a.step_incr == 0 {
        bail!("--step-incr must be > 0 when --step-mul is 1");
    }
    let mut v = vec![a.ctx_start];
    let mut cur = a.ctx_start;
    // (diagnostic: `DS4_BENCH_INCR=2,8,64`: frontiers --ctx-start + 2, + 8 more, + 64 more, i.e.
    // prefill batches of exactly those sizes, up to --ctx-max)
    if let Ok(list) = std::env::var("DS4_BENCH_INCR") {
        for x in list.split(',') {
            let d: usize = x.trim().parse().ok().filter(|&d| d > 0).ok_or_else(|| anyhow!("DS4_BENCH_INCR: {x:?} is not a positive count"))?;
            if cur + d > a.ctx_max {
                break;
            }
            cur += d;
            v.push(cur);
        }
        return Ok(v);
    }
    while cur < a.ctx_max {
        let next = if a.step_mul == 1.0 { cur + a.step_incr } else { ((cur as f64 * a.step_mul).ceil() as usize).max(cur + 1) };
        cur = next.min(a.ctx_max);
        v.push(cur);
    }
    Ok(v)
}

/// The prefill batch sizes the timed frontiers run, in order of first use, each once: every
/// frontier's new tokens (from the previous frontier, as the snapshot restores it) in chunks
/// of at most `max_chunk`, as the session splits a prefill.
fn timed_batches(fr: &[usize], max_chunk: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut prev = 0;
    for &f in fr {
        let mut d = f.saturating_sub(prev);
        while d > 0 {
            let c = d.min(max_chunk.max(1));
            if !v.contains(&c) {
                v.push(c);
            }
            d -= c;
        }
        prev = f;
    }
    v
}

fn prompt_tokens(a: &Args, g: &Gguf) -> Result<Vec<u32>> {
    let n_sources = a.prompt_file.is_some() as u8 + a.chat_prompt_file.is_some() as u8 + a.random_prompt.is_some() as u8;
    if n_sources != 1 {
        bail!("exactly one of --prompt-file, --chat-prompt-file (or --random-prompt N) is required");
    }
    if let Some(n) = a.random_prompt {
        let vocab = g.meta("deepseek4.vocab_size").and_then(|v| v.as_u64()).unwrap_or(129280);
        // xorshift: a fixed sequence, avoiding the first 3 ids (BOS/EOS/PAD)
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut v = vec![0u32];
        while v.len() < n {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(3 + (s % (vocab - 3)) as u32);
        }
        return Ok(v);
    }
    let tok = ds4_tok::Tokenizer::from_gguf(g).map_err(|e| anyhow!("tokenizer: {e:?}"))?;
    if let Some(p) = &a.prompt_file {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(tok.encode(&text));
    }
    let p = a.chat_prompt_file.as_ref().unwrap();
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    let rendered = ds4_tok::chat::render_completion(&a.system, &text, ds4_tok::chat::ThinkingMode::None);
    Ok(tok.encode_chat(&rendered))
}

fn main() {
    let a = Args::parse();
    let r = if let Some(dir) = &a.verify_fixtures {
        verify::run(dir, &a)
    } else if a.kernel_bench {
        cuda::kbench::run().map_err(|e| anyhow!("{e}"))
    } else {
        bench(&a)
    };
    if let Err(e) = r {
        eprintln!("ds4-bench: {e:#}");
        std::process::exit(1);
    }
}

/// `--cpu` / `--cuda` / `--backend` / `--metal`: the engine's rule.
fn backend_choice(a: &Args) -> Result<BackendChoice> {
    Ok(BackendChoice::from_flags(a.cpu, a.cuda, a.metal, a.backend.as_deref())?)
}

static GPU: std::sync::OnceLock<Arc<Gpu>> = std::sync::OnceLock::new();

/// Upload `model` to the GPU (opened once per process: --verify-fixtures loads several
/// models), with a progress bar and the achieved upload rate.
pub fn load_cuda(model: Arc<Model>) -> Result<Device> {
    let gpu = match GPU.get() {
        Some(g) => g.clone(),
        None => {
            let g = Arc::new(Gpu::new(0).map_err(|e| anyhow!("{e}"))?);
            let _ = GPU.set(g.clone());
            g
        }
    };
    let total: u64 = model.gguf().tensors.iter().map(|t| t.n_bytes).sum();
    let t0 = Instant::now();
    let mut bar = None;
    let dev = Device::upload(model, gpu, &mut |ev| match ev {
        LoadEvent::Gpu(gpu) => eprintln!(
            "GPU: {} ({} SMs, {:.1} GiB), kernels built in {:.1} s",
            gpu.name,
            gpu.sm_count,
            gpu.total_mem as f64 / (1u64 << 30) as f64,
            gpu.compile_s
        ),
        LoadEvent::Upload { done, total } => bar.get_or_insert_with(|| ds4_cli::progress::ByteBar::new(total, "uploading weights")).set(done),
    })?;
    if let Some(b) = bar {
        b.finish();
    }
    let dt = t0.elapsed().as_secs_f64();
    eprintln!("weights: {:.2} GiB uploaded in {:.1} s ({:.1} GB/s)", total as f64 / (1u64 << 30) as f64, dt, total as f64 / dt / 1e9);
    Ok(dev)
}

fn bench(a: &Args) -> Result<()> {
    let fr = frontiers(a)?;
    let ctx_alloc = a.ctx_alloc.unwrap_or(a.ctx_max + a.gen_tokens + 1);
    if ctx_alloc <= a.ctx_max + a.gen_tokens {
        bail!("--ctx-alloc must be larger than ctx-max + gen-tokens");
    }
    if let Some(t) = a.threads {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(t).build_global();
    }
    let choice = backend_choice(a)?;
    let use_cuda = choice.use_cuda()?;
    let model = Model::load(&a.model).map_err(|e| anyhow!("{}: {e}", a.model.display()))?;
    let cfg = SessionConfig {
        qat: !a.no_qat,
        precision: if a.quality { Precision::Reference } else { Precision::Fast },
        prefill_chunk: Some(2048),
        graphs: !a.no_graphs,
        mtp: None,
        // the timed prefills measure steady state, not the kernels' first use
        warm_up: !a.no_warm_up,
    };
    let (mut bk, eos, weight_bytes, ceiling) = if use_cuda {
        let dev = load_cuda(model.clone())?;
        let m: &Arc<CudaModel> = dev.cuda_weights().expect("a CUDA device");
        let ceiling = cuda::kbench::copy_ceiling(&m.gpu).map_err(|e| anyhow!("{e}"))?;
        eprintln!("device-copy ceiling: {:.2} TB/s (read+write)", ceiling / 1e12);
        let (eos, wb) = (m.eos, m.decode_weight_bytes);
        (Bk::Cuda(Box::new(dev.cuda_session(ctx_alloc, &cfg)?)), eos, wb, Some(ceiling))
    } else {
        let eos = model.gguf().meta("tokenizer.ggml.eos_token_id").and_then(|v| v.as_u64()).map(|v| v as u32);
        (Bk::Cpu(Device::cpu(model.clone()).session(ctx_alloc, &cfg)?), eos, 0, None)
    };
    // the timed prefills' batch sizes that the session's warm-up did not run, once each (its
    // prompt is capped by the context: an 8K prompt's context warmed an 8208-token batch, and
    // cuBLAS loads the 8192-row kernels on first use, inside the timing)
    if let (Bk::Cuda(s), false) = (&mut bk, a.no_warm_up) {
        let sizes = timed_batches(&fr, s.max_chunk());
        s.warm_up_batches(&sizes).map_err(|e| anyhow!("CUDA warm-up: {e}"))?;
    }
    let g = model.gguf();
    let toks = prompt_tokens(a, g)?;
    if toks.len() < a.ctx_max {
        bail!("the prompt has {} tokens, fewer than --ctx-max {}", toks.len(), a.ctx_max);
    }
    let mut out: Box<dyn Write> = match &a.csv {
        Some(p) => Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(std::io::stdout()),
    };
    writeln!(out, "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes")?;
    out.flush()?;
    let mut rows: Vec<Row> = Vec::new();
    let mut prev = 0;
    let mut failure: Option<anyhow::Error> = None;
    for &f in &fr {
        let r = (|| -> Result<()> {
            let t0 = Instant::now();
            let exp0 = ds4_engine::cuda::blas::exp_host_time();
            bk.sync(&toks[..f])?;
            let pt = t0.elapsed().as_secs_f64();
            let exp1 = ds4_engine::cuda::blas::exp_host_time();
            if exp1.1 > exp0.1 {
                eprintln!(
                    "ctx {f}: cuBLAS routed experts: {:.0} ms of host time issuing {} expert matrices ({:.0}% of the prefill's {:.0} ms)",
                    (exp1.0 - exp0.0) * 1e3,
                    exp1.1 - exp0.1,
                    100.0 * (exp1.0 - exp0.0) / pt,
                    pt * 1e3
                );
            }
            print_profile(&bk, f, "prefill");
            let ts = Instant::now();
            let (snap, kvb) = bk.snapshot()?;
            let save_s = ts.elapsed().as_secs_f64();
            bk.prepare(a.gen_tokens)?;
            let t1 = Instant::now();
            let mut toks = Vec::with_capacity(a.gen_tokens);
            for _ in 0..a.gen_tokens {
                toks.push(bk.step(eos)?);
            }
            bk.wait()?;
            let gt = t1.elapsed().as_secs_f64();
            // (diagnostic: the last decode step's indexer scores of its last ratio-4 layer, the
            // visible rows, as f32 to DIR/scores_CTX.f32: the kernel bench times topk_select on
            // them with DS4_KBENCH_SCORES)
            if let (Ok(dir), Bk::Cuda(s)) = (std::env::var("DS4_BENCH_SCORES"), &bk) {
                let v = s.scores_head((f + a.gen_tokens) / 4).map_err(|e| anyhow!("{e}"))?;
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                std::fs::write(std::path::Path::new(&dir).join(format!("scores_{f}.f32")), bytes)?;
            }
            if print_tokens() {
                // (greedy tokens of the same prompt: two builds or switches that change no
                // arithmetic must print the same list)
                eprintln!("ctx {f}: tokens {toks:?}");
            }
            let tr = Instant::now();
            bk.restore(snap)?;
            // (what the server's KV-cache checkpoint of this context costs, less the disk)
            eprintln!("ctx {f}: KV payload {:.1} MB saved in {:.1} ms, restored in {:.1} ms", kvb as f64 / 1e6, save_s * 1e3, tr.elapsed().as_secs_f64() * 1e3);
            print_profile(&bk, f, "decode");
            if let Some((p, host)) = bench_sampling() {
                let (n, sum) = SAMPLE_STATS.with(|c| c.replace((0, 0)));
                eprintln!(
                    "ctx {f}: sampled T {} top_p {} top_k {} ({}): {n} of {} steps from the device's set, {:.1} logits per set",
                    p.temperature,
                    p.top_p,
                    p.top_k,
                    if host { "host reads all logits" } else { "device sets" },
                    a.gen_tokens,
                    sum as f64 / n.max(1) as f64
                );
            }
            let row = (f, f - prev, (f - prev) as f64 / pt, a.gen_tokens, a.gen_tokens as f64 / gt, kvb);
            writeln!(out, "{},{},{:.2},{},{:.2},{}", row.0, row.1, row.2, row.3, row.4, row.5)?;
            out.flush()?;
            if let Some(c) = ceiling {
                let bw = weight_bytes as f64 * row.4;
                eprintln!(
                    "ctx {f}: prefill {:.0} t/s, decode {:.1} t/s = {:.2} TB/s of weights ({:.0}% of the {:.2} TB/s copy ceiling)",
                    row.2,
                    row.4,
                    bw / 1e12,
                    100.0 * bw / c,
                    c / 1e12
                );
            }
            rows.push(row);
            prev = f;
            Ok(())
        })();
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    drop(out);
    if let Some(p) = &a.csv {
        let svg = a.svg.clone().unwrap_or_else(|| p.with_extension("svg"));
        std::fs::write(&svg, plot_svg(&rows, weight_bytes, ceiling))?;
        if let Some(c) = ceiling {
            let mut s = String::new();
            s += &format!("weights streamed per decoded token: {:.3} GB\n", weight_bytes as f64 / 1e9);
            s += &format!("device-copy ceiling (same run): {:.3} TB/s\n", c / 1e12);
            for r in &rows {
                let bw = weight_bytes as f64 * r.4;
                s += &format!("ctx {}: decode {:.1} t/s -> {:.3} TB/s ({:.1}% of ceiling); prefill {:.0} t/s\n", r.0, r.4, bw / 1e12, 100.0 * bw / c, r.2);
            }
            std::fs::write(p.with_extension("summary.txt"), s)?;
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(())
}

fn print_profile(bk: &Bk, f: usize, what: &str) {
    if let Bk::Cuda(s) = bk {
        let _ = s.model().gpu.sync();
        for (k, ms, n) in s.model().gpu.take_profile() {
            eprintln!("profile {what} ctx {f}: {k:<16} {ms:>10.3} ms {n:>7} launches {:>9.2} us/launch", 1e3 * ms / n as f64);
        }
    }
}

fn plot_svg(rows: &[Row], weight_bytes: u64, ceiling: Option<f64>) -> String {
    let (w, h, ml, mr, mt, mb) = (900.0, 420.0, 70.0, 70.0, 40.0, 50.0);
    let xmax = rows.iter().map(|r| r.0).max().unwrap_or(1) as f64;
    let pmax = rows.iter().map(|r| r.2).fold(1.0, f64::max) * 1.1;
    let gmax = rows.iter().map(|r| r.4).fold(1.0, f64::max) * 1.1;
    let x = |v: f64| ml + (w - ml - mr) * v / xmax;
    let yp = |v: f64| h - mb - (h - mt - mb) * v / pmax;
    let yg = |v: f64| h - mb - (h - mt - mb) * v / gmax;
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s += &format!("<line x1=\"{ml}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", h - mb, w - mr, h - mb);
    s += &format!("<line x1=\"{ml}\" y1=\"{mt}\" x2=\"{ml}\" y2=\"{}\" stroke=\"#1f77b4\"/>\n", h - mb);
    s += &format!("<line x1=\"{}\" y1=\"{mt}\" x2=\"{}\" y2=\"{}\" stroke=\"#d62728\"/>\n", w - mr, w - mr, h - mb);
    for i in 0..=5 {
        let f = i as f64 / 5.0;
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#1f77b4\">{:.0}</text>\n", ml - 5.0, yp(f * pmax) + 4.0, f * pmax);
        s += &format!("<text x=\"{}\" y=\"{}\" fill=\"#d62728\">{:.0}</text>\n", w - mr + 5.0, yg(f * gmax) + 4.0, f * gmax);
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.0}</text>\n", x(f * xmax), h - mb + 18.0, f * xmax);
    }
    let line = |f: &dyn Fn(&Row) -> (f64, f64), col: &str| {
        let pts: Vec<String> = rows.iter().map(|r| { let (a, b) = f(r); format!("{a:.1},{b:.1}") }).collect();
        format!("<polyline fill=\"none\" stroke=\"{col}\" stroke-width=\"2\" points=\"{}\"/>\n", pts.join(" "))
    };
    s += &line(&|r| (x(r.0 as f64), yp(r.2)), "#1f77b4");
    s += &line(&|r| (x(r.0 as f64), yg(r.4)), "#d62728");
    s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">context tokens</text>\n", (w + ml - mr) / 2.0, h - 10.0);
    s += &format!("<text x=\"{ml}\" y=\"{}\" fill=\"#1f77b4\">prefill tokens/s</text>\n", mt - 10.0);
    s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#d62728\">decode tokens/s</text>\n", w - mr, mt - 10.0);
    if let Some(c) = ceiling {
        let g = c / weight_bytes.max(1) as f64;
        if g < gmax {
            s += &format!("<line x1=\"{ml}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#d62728\" stroke-dasharray=\"4 4\"/>\n", yg(g), w - mr);
        }
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">dashed: decode rate at the measured copy ceiling ({:.2} TB/s, {:.2} GB weights/token)</text>\n", (w + ml - mr) / 2.0, mt - 24.0, c / 1e12, weight_bytes as f64 / 1e9);
    }
    s += "</svg>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut v = vec!["ds4-bench"];
        v.extend_from_slice(extra);
        Args::parse_from(v)
    }

    #[test]
    fn frontiers_linear_and_multiplicative() {
        let a = args(&["--ctx-start", "2048", "--ctx-max", "8192", "--step-incr", "2048"]);
        assert_eq!(frontiers(&a).unwrap(), vec![2048, 4096, 6144, 8192]);
        let a = args(&["--ctx-start", "2048", "--ctx-max", "7000", "--step-incr", "2048"]);
        assert_eq!(frontiers(&a).unwrap(), vec![2048, 4096, 6144, 7000]);
        let a = args(&["--ctx-start", "1000", "--ctx-max", "5000", "--step-mul", "2"]);
        assert_eq!(frontiers(&a).unwrap(), vec![1000, 2000, 4000, 5000]);
        let a = args(&["--ctx-start", "3", "--ctx-max", "6", "--step-mul", "1.1"]);
        assert_eq!(frontiers(&a).unwrap(), vec![3, 4, 5, 6]); // at least +1
        assert!(frontiers(&args(&["--ctx-start", "10", "--ctx-max", "5"])).is_err());
        assert!(frontiers(&args(&["--step-mul", "0.5"])).is_err());
        assert!(frontiers(&args(&["--step-incr", "0"])).is_err());
    }

    /// The batch sizes of the committed sweep and of an 8K prompt, worked out by hand from
    /// their frontiers (2K, then 8K steps to 64K, the last 6K; one 8K batch in an 8209-token
    /// session), and a prompt longer than one batch.
    #[test]
    fn timed_batches_follow_the_frontiers() {
        let sweep = frontiers(&args(&["--ctx-start", "2048", "--ctx-max", "65536", "--step-incr", "8192"])).unwrap();
        assert_eq!(timed_batches(&sweep, 16384), vec![2048, 8192, 6144]);
        let one = frontiers(&args(&["--ctx-start", "8192", "--ctx-max", "8192"])).unwrap();
        assert_eq!(timed_batches(&one, 8209), vec![8192]);
        assert_eq!(timed_batches(&[10000], 4096), vec![4096, 1808]);
        assert_eq!(timed_batches(&[10000, 14096], 4096), vec![4096, 1808]);
    }

    #[test]
    fn greedy_never_picks_the_excluded_token() {
        assert_eq!(greedy_excluding(&[0.0, 5.0, 1.0], Some(1)), 2);
        assert_eq!(greedy_excluding(&[0.0, 5.0, 1.0], None), 1);
        assert_eq!(greedy_excluding(&[2.0, 2.0, 1.0], None), 0);
        assert_eq!(greedy_excluding(&[9.0, 2.0, 2.0], Some(0)), 1);
    }

    /// CPU end to end on the tiny fixture: header, one row per frontier, 6 columns, SVG written.
    #[test]
    fn cpu_bench_writes_csv_and_svg() {
        let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/model/tiny-f32/model.gguf");
        if !model.exists() {
            eprintln!("SKIPPED: {} not found", model.display());
            return;
        }
        let dir = std::env::temp_dir().join(format!("ds4-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("b.csv");
        let a = args(&[
            "--cpu", "-m", model.to_str().unwrap(), "--random-prompt", "300", "--ctx-start", "100", "--ctx-max", "300",
            "--step-incr", "100", "--gen-tokens", "3", "--csv", csv.to_str().unwrap(),
        ]);
        bench(&a).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes");
        assert_eq!(lines.len(), 4);
        for (i, l) in lines[1..].iter().enumerate() {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 6);
            assert_eq!(f[0].parse::<usize>().unwrap(), 100 * (i + 1));
            assert_eq!(f[1], "100");
            assert_eq!(f[3], "3");
            assert!(f[2].parse::<f64>().unwrap() > 0.0 && f[4].parse::<f64>().unwrap() > 0.0);
        }
        // the payload grows with the context
        let kv: Vec<usize> = lines[1..].iter().map(|l| l.split(',').nth(5).unwrap().parse().unwrap()).collect();
        assert!(kv[0] < kv[1] && kv[1] < kv[2]);
        assert!(std::fs::read_to_string(csv.with_extension("svg")).unwrap().starts_with("<svg"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
