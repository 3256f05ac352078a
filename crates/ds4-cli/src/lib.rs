//! The `ds4` command-line tool (spec CLI.md): one-shot prompts, interactive
//! multi-turn chat, diagnostics (`--dump-tokens`, `--dump-logits`,
//! `--dump-logprobs`, `--perplexity-file`, `--inspect`) and the demo model.

pub mod args;
pub mod engine;
pub mod logprobs;
pub mod printer;
pub mod progress;
pub mod prompt;
pub mod repl;
pub mod session;
pub mod trace;

use anyhow::{bail, Context, Result};
use ds4_engine::sampling::{self, seed_from_time, Sampler, SamplerParams};
use std::io::{BufWriter, IsTerminal, Write};
use std::sync::atomic::AtomicBool;

use args::{Args, TokensArg};
use engine::{Loaded, SessionConfig};
use printer::TokenPrinter;
use progress::{PrefillProgress, Spinner};
use prompt::{think_max_warning, ThinkMode};
use session::{generate, generation_budget, rate, LiveSession};

/// Exit status of a failed run (usage errors exit 2).
const EXIT_FAILURE: i32 = 1;
const EXIT_USAGE: i32 = 2;

/// Entry point of the `ds4` binary; returns the process exit status.
pub fn main_entry() -> i32 {
    let args = Args::from_env();
    if let Err(msg) = args.validate() {
        eprintln!("ds4: {msg}");
        return EXIT_USAGE;
    }
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ds4: {e:#}");
            EXIT_FAILURE
        }
    }
}

fn prompt_bytes(args: &Args) -> Result<Option<Vec<u8>>, i32> {
    if let Some(p) = &args.prompt {
        return Ok(Some(p.as_bytes().to_vec()));
    }
    if let Some(path) = &args.prompt_file {
        return match engine::read_prompt_file(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) => {
                eprintln!("ds4: {e:#}");
                Err(EXIT_USAGE)
            }
        };
    }
    Ok(None)
}

pub fn run(args: &Args) -> Result<i32> {
    let prompt = match prompt_bytes(args) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if args.dump_tokens {
        // Only the tokenizer metadata is needed.
        let (g, _) = engine::open_gguf(&args.model, args.demo)?;
        let tok = engine::tokenizer(&g)?;
        let text = prompt.unwrap_or_default();
        let mut out = std::io::stdout().lock();
        out.write_all(ds4_tok::dump_prompt(&tok, &text, args.chat).as_bytes())?;
        out.flush()?;
        return Ok(0);
    }
    if let Some(t) = args.threads {
        // Ignore the error of a pool already built (only possible in tests).
        let _ = rayon::ThreadPoolBuilder::new().num_threads(t).build_global();
    }
    let backend = args.backend().map_err(anyhow::Error::msg)?;

    if !args.demo && !args.model.exists() {
        bail!("{}", engine::missing_model_message(&args.model));
    }
    let spinner = Spinner::start(if args.demo {
        "building the demo model (tiny, random weights: its output is gibberish)".into()
    } else {
        format!("loading {}", args.model.display())
    });
    let mut loaded = engine::load(&args.model, args.demo, backend)?;
    spinner.finish(format!(
        "model {}: {} layers, width {}, vocabulary {}",
        loaded.name, loaded.model.hp.n_layer, loaded.model.hp.n_embd, loaded.model.hp.n_vocab
    ));
    if let Some(path) = &args.mtp {
        engine::load_mtp(&mut loaded, path)?;
        match args.speculation() {
            Ok(c) if !loaded.device.supports_mtp() => {
                let _ = c;
                eprintln!("ds4: --mtp: the MTP drafter runs on the CPU backend only; decoding without speculation");
            }
            Ok(c) => eprintln!(
                "ds4: MTP speculative decoding: up to {} drafts per step, {}{} pairing \
                 (CPU kernels are compute-bound: verifying n tokens costs about n decode steps, so expect no speed-up)",
                c.max_draft,
                if c.strict { "strict verification, ".to_string() } else { format!("margin {}, ", c.margin) },
                args.mtp_pairing
            ),
            Err(why) => eprintln!("ds4: --mtp loaded, speculation off: {why}"),
        }
    }

    if args.inspect {
        inspect(&loaded);
        return Ok(0);
    }
    if let Some(path) = &args.dump_logits {
        return dump_logits(args, &loaded, prompt.as_deref(), path);
    }
    if let Some(path) = &args.perplexity_file {
        return perplexity(args, &loaded, path);
    }
    let mode = args.think_mode();
    if mode == ThinkMode::Max && crate::prompt::effective(mode, args.ctx) != ThinkMode::Max {
        eprintln!("ds4: {}", think_max_warning("--think-max", args.ctx));
    }
    eprintln!("ds4: {}", loaded.memory_note(args.ctx, &session_config(args)));
    if let Some(path) = &args.dump_logprobs {
        let tokens = build_prompt(args, &loaded, prompt.as_deref())?;
        return dump_logprobs(args, &loaded, &tokens, path);
    }
    if prompt.is_none() && args.prompt_tokens.is_none() {
        return interactive(args, &loaded);
    }
    one_shot(args, &loaded, &build_prompt(args, &loaded, prompt.as_deref())?)
}

/// The one-shot prompt tokens: `--prompt-tokens` as given, else the chat
/// layout of CLI.md §2.1 around the text.
fn build_prompt(args: &Args, l: &Loaded, text: Option<&[u8]>) -> Result<Vec<u32>> {
    if let Some(list) = &args.prompt_tokens {
        let ids = args::parse_id_list(list).map_err(anyhow::Error::msg)?;
        let vocab = l.model.hp.n_vocab;
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= vocab) {
            bail!("token id {bad} is outside the vocabulary (0..{vocab})");
        }
        return Ok(ids);
    }
    let eff = crate::prompt::effective(args.think_mode(), args.ctx);
    Ok(prompt::one_shot(&l.tok, &args.system, text.unwrap_or_default(), eff))
}

fn inspect(l: &Loaded) {
    let hp = &l.model.hp;
    let g = l.model.gguf();
    println!("model: {}", l.name);
    println!("tensors: {}", g.tensors.len());
    println!("bytes of tensor data: {}", g.tensors.iter().map(|t| t.n_bytes).sum::<u64>());
    println!("layers: {}  width: {}  vocabulary: {}", hp.n_layer, hp.n_embd, hp.n_vocab);
    println!("heads: {} x {} (rope {})  q_lora: {}  o_lora: {} x {}", hp.n_head, hp.head_dim, hp.rope_dim, hp.q_lora_rank, hp.o_groups, hp.o_lora_rank);
    println!("experts: {} routed ({} used, ff {}), {} shared, {} hash layers", hp.n_expert, hp.n_expert_used, hp.expert_ff, hp.n_expert_shared, hp.n_hash_layers);
    println!("compress ratios: {:?}", hp.compress_ratios);
    println!("indexer: {} heads x {}, top {}", hp.idx_heads, hp.idx_head_dim, hp.idx_top_k);
    println!("expert quantization: {} bits", l.model.expert_bits());
    let sp = l.tok.special();
    println!("special ids: bos {} eos {} user {} assistant {} think {} /think {} dsml {}", sp.bos, sp.eos, sp.user, sp.assistant, sp.think, sp.think_end, sp.dsml);
}

fn sampler_params(args: &Args) -> SamplerParams {
    SamplerParams { temperature: args.temp, top_k: args.top_k, top_p: args.top_p, min_p: args.min_p }
}

fn session_config(args: &Args) -> SessionConfig {
    SessionConfig { qat: !args.no_qat, chunk: args.prefill_chunk, quality: args.quality, spec: args.speculation().ok() }
}

/// Diagnostics (logit dumps, logprobs, perplexity) decode token by token.
fn diag_config(args: &Args) -> SessionConfig {
    SessionConfig { spec: None, ..session_config(args) }
}

fn prefill(session: &mut dyn LiveSession, prompt: &[u32]) -> Result<(usize, f64)> {
    let t0 = std::time::Instant::now();
    let mut progress = PrefillProgress::new(prompt.len());
    let r = session.sync(prompt, &mut |done, _| {
        progress.update(done);
        true
    });
    progress.end();
    let reused = r.context("prompt processing failed")?;
    Ok((reused, t0.elapsed().as_secs_f64()))
}

fn one_shot(args: &Args, l: &Loaded, prompt: &[u32]) -> Result<i32> {
    let eff = crate::prompt::effective(args.think_mode(), args.ctx);
    let sp = *l.tok.special();
    // A raw (already rendered) prompt thinks if it ends inside <think>.
    let thinking = prompt.last() == Some(&sp.think);
    let mut session = l.new_session(args.ctx, session_config(args))?;
    let (_, prefill_s) = prefill(session.as_mut(), prompt)?;
    let budget = generation_budget(args.max_new_tokens(), args.ctx, session.tokens().len());
    let mut sampler = Sampler::new(sampler_params(args), args.seed.unwrap_or_else(seed_from_time));
    let stdout = std::io::stdout();
    let color = stdout.is_terminal();
    let mut printer = TokenPrinter::new(stdout.lock(), thinking, color);
    let never = AtomicBool::new(false);
    let tok = &l.tok;
    let gen = generate(session.as_mut(), &mut sampler, budget, sp.eos, &never, &mut |id| {
        printer.write(tok.token_bytes(id).unwrap_or(&[]))?;
        Ok(())
    });
    printer.finish()?;
    let gen = gen.context("decode failed")?;
    eprintln!(
        "ds4: prefill: {:.2} t/s, generation: {:.2} t/s",
        rate(prompt.len(), prefill_s),
        rate(gen.tokens.len(), gen.seconds)
    );
    if let Some(s) = &gen.spec {
        eprintln!("ds4: {}", session::spec_line(s));
    }
    if let Some(path) = &args.trace {
        let mut t = trace::Trace::create(path).with_context(|| format!("--trace {}", path.display()))?;
        t.turn(&trace::TurnRecord {
            turn: 1,
            mode: crate::prompt::mode_name(eff),
            transcript_tokens: prompt.len() + gen.tokens.len(),
            reused_tokens: 0,
            prefilled_tokens: prompt.len(),
            prefilled_text: &l.tok.decode(prompt),
            generated_tokens: gen.tokens.len(),
            reasoning: &printer.reasoning,
            answer: &printer.answer,
            stop: gen.stop.as_str(),
            prefill_seconds: prefill_s,
            generation_seconds: gen.seconds,
        })?;
    }
    Ok(0)
}

fn interactive(args: &Args, l: &Loaded) -> Result<i32> {
    let trace = match &args.trace {
        Some(p) => Some(trace::Trace::create(p).with_context(|| format!("--trace {}", p.display()))?),
        None => None,
    };
    let factory = engine::Factory { loaded: l, cfg: session_config(args) };
    let opts = repl::ChatOptions {
        system: args.system.clone(),
        mode: args.think_mode(),
        max_new: args.max_new_tokens(),
        params: sampler_params(args),
        seed: args.seed,
        color: std::io::stdout().is_terminal(),
    };
    let mut chat = repl::Chat::new(&l.tok, Box::new(factory), args.ctx, opts, trace)?;
    repl::run(&mut chat)?;
    Ok(0)
}

/// `--dump-logits`: logits of every position as LE f32 `[n × vocab]`.
fn dump_logits(args: &Args, l: &Loaded, prompt: Option<&[u8]>, path: &std::path::Path) -> Result<i32> {
    let tokens = match args.tokens_arg().map_err(anyhow::Error::msg)? {
        TokensArg::Ids(ids) => ids,
        TokensArg::MaxNew(_) => build_prompt(args, l, prompt)?,
    };
    let vocab = l.model.hp.n_vocab;
    if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
        bail!("token id {bad} is outside the vocabulary (0..{vocab})");
    }
    let ctx = args.ctx.max(tokens.len());
    let mut session = l.new_session(ctx, diag_config(args))?;
    let mut progress = PrefillProgress::new(tokens.len());
    let logits = if args.decode {
        let mut all = Vec::with_capacity(tokens.len() * vocab);
        for (i, &t) in tokens.iter().enumerate() {
            session.eval(t)?;
            all.extend_from_slice(session.logits());
            progress.update(i + 1);
        }
        all
    } else {
        session.extend_all(&tokens, &mut |d, _| {
            progress.update(d);
            true
        })?
    };
    progress.end();
    debug_assert_eq!(logits.len(), tokens.len() * vocab);
    let mut out = BufWriter::new(std::fs::File::create(path).with_context(|| format!("--dump-logits {}", path.display()))?);
    for v in &logits {
        out.write_all(&v.to_le_bytes())?;
    }
    out.flush()?;
    eprintln!("ds4: wrote {} x {} logits to {}", tokens.len(), vocab, path.display());
    Ok(0)
}

/// `--dump-logprobs` (CLI.md §5.2): greedy continuation with top-k logprobs.
fn dump_logprobs(args: &Args, l: &Loaded, prompt: &[u32], path: &std::path::Path) -> Result<i32> {
    let mut session = l.new_session(args.ctx, diag_config(args))?;
    prefill(session.as_mut(), prompt)?;
    let k = args.logprobs_top_k.min(128);
    let file = std::fs::File::create(path).with_context(|| format!("failed to open --dump-logprobs file {}", path.display()))?;
    let mut w = logprobs::LogprobWriter::new(BufWriter::new(file), prompt.len(), args.ctx, k)?;
    let budget = generation_budget(args.max_new_tokens(), args.ctx, session.tokens().len());
    let eos = l.tok.special().eos;
    for _ in 0..budget {
        let logits = session.logits();
        let top = sampling::top_logprobs(logits, k);
        let token = sampling::argmax(logits);
        let alts: Vec<logprobs::Alt> = top
            .iter()
            .map(|s| logprobs::Alt { id: s.id, bytes: l.tok.token_bytes(s.id).unwrap_or(&[]), logit: s.logit, logprob: s.logprob })
            .collect();
        w.step((token, l.tok.token_bytes(token).unwrap_or(&[])), &alts)?;
        if token == eos {
            break;
        }
        session.eval(token).context("decode failed while dumping logprobs")?;
    }
    w.finish()?;
    Ok(0)
}

/// `--perplexity-file` (CLI.md §5.3).
fn perplexity(args: &Args, l: &Loaded, path: &std::path::Path) -> Result<i32> {
    const PREFIX: usize = 32;
    let text = engine::read_prompt_file(&path.to_path_buf())?;
    let tokens = prompt::encode_text(&l.tok, &text);
    if tokens.len() <= PREFIX {
        bail!("--perplexity-file needs more than {PREFIX} tokens (the file has {})", tokens.len());
    }
    let mut scored = tokens.len() - PREFIX;
    if args.tokens.is_some() {
        scored = scored.min(args.max_new_tokens());
    }
    scored = scored.min(args.ctx.saturating_sub(PREFIX));
    if scored == 0 {
        bail!("context too small for perplexity scoring");
    }
    let mut session = l.new_session(args.ctx, diag_config(args))?;
    session.sync(&tokens[..PREFIX], &mut |_, _| true).context("perplexity prefix failed")?;
    let mut nll = 0f64;
    for j in 0..scored {
        let t = tokens[PREFIX + j];
        let s = sampling::token_logprob(session.logits(), t).context("failed to score a token")?;
        nll -= s.logprob as f64;
        if (j + 1) % 256 == 0 || j + 1 == scored {
            eprint!("ds4: perplexity scored {}/{}\r", j + 1, scored);
        }
        if j + 1 < scored {
            session.eval(t)?;
        }
    }
    eprintln!();
    let avg = nll / scored as f64;
    println!("tokens={} scored={} nll={:.9} avg_nll={:.9} ppl={:.9}", tokens.len(), scored, nll, avg, avg.exp());
    Ok(0)
}
