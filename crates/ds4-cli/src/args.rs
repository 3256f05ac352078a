//! `ds4` command line (CLI.md §1, §4-§6). Flag names follow ds4 so its users
//! feel at home; `-sys` (a multi-letter single-dash flag clap cannot spell)
//! is rewritten to `--system` before parsing.

use clap::{ArgAction, Parser};
use std::path::PathBuf;

use crate::prompt::ThinkMode;

pub const DEFAULT_MODEL: &str = "ds4flash.gguf";
pub const DEFAULT_SYSTEM: &str = "You are a helpful assistant";
pub const DEFAULT_CTX: usize = 32768;
pub const DEFAULT_MAX_TOKENS: usize = 50000;

const AFTER_HELP: &str = "\
Interactive commands (ds4 without -p):
  /help  /think  /think-max  /nothink  /ctx N  /read FILE  /quit (/exit)
  Ctrl+C stops the current generation; Ctrl+C on an empty prompt or Ctrl+D exits.

Getting a model:
  ./download_model.sh q2-imatrix   (about 81 GB; links ./ds4flash.gguf)
  ds4 --demo                       (tiny random-weight model, no download;
                                    its output is gibberish)

Examples:
  ds4 --demo -p \"Hello\"
  ds4 -p \"Scrivi una storia su una papera scansafatiche\"
  ds4 --think-max --prompt-file prompt.txt --ctx 393216";

#[derive(Parser, Debug, Clone)]
#[command(
    name = "ds4",
    version,
    about = "DeepSeek V4 Flash: one-shot prompts and interactive chat on the local engine",
    after_help = AFTER_HELP
)]
pub struct Args {
    // ---- model and runtime ----
    /// GGUF model path.
    #[arg(short = 'm', long = "model", value_name = "FILE", default_value = DEFAULT_MODEL)]
    pub model: PathBuf,

    /// Run a tiny random-weight model of the real architecture built in
    /// memory (no download needed; the text it writes is gibberish).
    #[arg(long)]
    pub demo: bool,

    /// Context size allocated for the session.
    #[arg(short = 'c', long = "ctx", value_name = "N", default_value_t = DEFAULT_CTX, value_parser = positive_usize)]
    pub ctx: usize,

    /// Use the CPU reference backend.
    #[arg(long, overrides_with_all = ["cuda", "backend"])]
    pub cpu: bool,

    /// Use the CUDA backend.
    #[arg(long, overrides_with_all = ["cpu", "backend"])]
    pub cuda: bool,

    /// Select the backend by name: cpu or cuda (metal is not available in this build).
    #[arg(long, value_name = "NAME", overrides_with_all = ["cpu", "cuda"])]
    pub backend: Option<String>,

    /// Exact kernels: f32 activations in CUDA prefill too (slower; the CPU
    /// path is always exact); strict (token by token) MTP verification.
    #[arg(long)]
    pub quality: bool,

    // ---- MTP speculative decoding (CLI.md §4.1) ----
    /// Optional MTP (multi-token prediction) GGUF for speculative greedy
    /// decoding (CPU backend).
    #[arg(long = "mtp", value_name = "FILE")]
    pub mtp: Option<PathBuf>,

    /// Maximum drafted tokens per speculative step (1..16); speculation runs
    /// only when N > 1 and --temp 0.
    #[arg(long = "mtp-draft", value_name = "N", default_value_t = 1, value_parser = usize_in(1, 16))]
    pub mtp_draft: usize,

    /// Minimum top-1 minus top-2 logit margin of a draft (0..1000);
    /// low-confidence drafts are not attempted (ignored with --quality).
    #[arg(long = "mtp-margin", value_name = "F", default_value_t = 3.0, value_parser = float_in(0.0, 1000.0))]
    pub mtp_margin: f32,

    /// How MTP rows pair hidden states and tokens: deepseek (h_j with token
    /// j+1, the DeepSeek MTP design) or ds4 (h_j with token j).
    #[arg(long = "mtp-pairing", value_name = "NAME", default_value = "deepseek", value_parser = ["deepseek", "ds4"])]
    pub mtp_pairing: String,

    /// Host threads (default: all cores).
    #[arg(short = 't', long = "threads", value_name = "N", value_parser = positive_usize)]
    pub threads: Option<usize>,

    // ---- prompt and generation ----
    /// Prompt to answer (one-shot mode).
    #[arg(short = 'p', long = "prompt", value_name = "TEXT", conflicts_with = "prompt_file", allow_hyphen_values = true)]
    pub prompt: Option<String>,

    /// Read the prompt from FILE (whole file, bytes as they are).
    #[arg(long = "prompt-file", value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,

    /// The prompt as token ids (comma-separated), used as they are: no chat
    /// template (diagnostics and reference comparisons).
    #[arg(long = "prompt-tokens", value_name = "IDS", conflicts_with_all = ["prompt", "prompt_file"])]
    pub prompt_tokens: Option<String>,

    /// System prompt (-sys also works). An empty string omits it.
    #[arg(long = "system", value_name = "TEXT", default_value = DEFAULT_SYSTEM, allow_hyphen_values = true)]
    pub system: String,

    /// Maximum tokens to generate (default 50000). With --dump-logits,
    /// --tokens is instead the comma-separated list of token ids to run.
    #[arg(short = 'n', long = "tokens", value_name = "N")]
    pub tokens: Option<String>,

    /// Sampling temperature (0..100, 0 = greedy).
    #[arg(long = "temp", value_name = "F", default_value_t = ds4_engine::sampling::DEFAULT_TEMPERATURE, value_parser = float_in(0.0, 100.0))]
    pub temp: f32,

    /// Nucleus sampling mass (0..1).
    #[arg(long = "top-p", value_name = "F", default_value_t = ds4_engine::sampling::DEFAULT_TOP_P, value_parser = float_in(0.0, 1.0))]
    pub top_p: f32,

    /// Keep at most the K best tokens (0 = off, the ds4 default; at most 1024).
    #[arg(long = "top-k", value_name = "K", default_value_t = 0)]
    pub top_k: u32,

    /// Keep tokens whose probability is at least F times the best one's (0..1).
    #[arg(long = "min-p", value_name = "F", default_value_t = ds4_engine::sampling::DEFAULT_MIN_P, value_parser = float_in(0.0, 1.0))]
    pub min_p: f32,

    /// Sampling seed for reproducible runs (default: time-based).
    #[arg(long = "seed", value_name = "N", value_parser = positive_u64)]
    pub seed: Option<u64>,

    /// Normal thinking mode (the default).
    #[arg(long, action = ArgAction::SetTrue, overrides_with_all = ["nothink", "think_max"])]
    pub think: bool,

    /// Think Max: needs --ctx >= 393216, else normal thinking.
    #[arg(long = "think-max", action = ArgAction::SetTrue, overrides_with_all = ["think", "nothink"])]
    pub think_max: bool,

    /// Non-thinking replies (assistant turns start with </think>).
    #[arg(long, action = ArgAction::SetTrue, overrides_with_all = ["think", "think_max"])]
    pub nothink: bool,

    /// Write a per-turn trace (rendered tokens, prefix reuse, generated text, timings).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    // ---- diagnostics ----
    /// Load the model, print a summary, exit.
    #[arg(long)]
    pub inspect: bool,

    /// Tokenize -p/--prompt-file and print the tokens; no inference.
    #[arg(long = "dump-tokens")]
    pub dump_tokens: bool,

    /// With --dump-tokens: use the rendered-chat tokenizer (only the seven
    /// serving special strings are special) instead of the plain one.
    #[arg(long, requires = "dump_tokens")]
    pub chat: bool,

    /// Write the logits of every position of --tokens (or of the prompt) as
    /// little-endian f32, row-major [n_tokens x vocab], and exit.
    #[arg(long = "dump-logits", value_name = "FILE")]
    pub dump_logits: Option<PathBuf>,

    /// Prefill chunk size (tokens per batch).
    #[arg(long = "prefill-chunk", value_name = "N", value_parser = positive_usize)]
    pub prefill_chunk: Option<usize>,

    /// With --dump-logits: feed the tokens one at a time (decode) instead of a prefill.
    #[arg(long, requires = "dump_logits")]
    pub decode: bool,

    /// Greedy continuation with the top logprobs of every step, as JSON.
    #[arg(long = "dump-logprobs", value_name = "FILE")]
    pub dump_logprobs: Option<PathBuf>,

    /// Alternatives stored per step by --dump-logprobs (at most 128).
    #[arg(long = "logprobs-top-k", value_name = "K", default_value_t = 20, value_parser = positive_usize)]
    pub logprobs_top_k: usize,

    /// Teacher-forced NLL / perplexity of a raw text file.
    #[arg(long = "perplexity-file", value_name = "FILE", conflicts_with_all = ["prompt", "prompt_file"])]
    pub perplexity_file: Option<PathBuf>,

    /// Turn off the two rounding steps (FP8 KV round trip, indexer
    /// Hadamard+FP4) for tight comparisons with float references.
    #[arg(long = "no-qat")]
    pub no_qat: bool,

    /// Rejected: the HTTP server is ds4-server.
    #[arg(long, hide = true)]
    pub server: bool,
}

/// `--cpu` / `--cuda` / `--backend`: the engine's rule (shared with the server and ds4-bench).
pub use ds4_engine::BackendChoice;

/// What `--tokens` / `-n` means for this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokensArg {
    MaxNew(usize),
    Ids(Vec<u32>),
}

impl Args {
    /// Parse from the process arguments; exits 2 on usage errors, 0 on --help.
    pub fn from_env() -> Args {
        Args::parse_from(rewrite_args(std::env::args_os()))
    }

    pub fn try_from_iter<I, T>(it: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        Args::try_parse_from(rewrite_args(it.into_iter().map(Into::into)))
    }

    pub fn think_mode(&self) -> ThinkMode {
        if self.nothink {
            ThinkMode::None
        } else if self.think_max {
            ThinkMode::Max
        } else {
            ThinkMode::High
        }
    }

    pub fn backend(&self) -> Result<BackendChoice, String> {
        BackendChoice::from_flags(self.cpu, self.cuda, false, self.backend.as_deref()).map_err(|e| e.to_string())
    }

    /// `--tokens` is a token list with --dump-logits, else the generation cap.
    pub fn tokens_arg(&self) -> Result<TokensArg, String> {
        match (&self.tokens, self.dump_logits.is_some()) {
            (None, _) => Ok(TokensArg::MaxNew(DEFAULT_MAX_TOKENS)),
            (Some(s), true) => parse_id_list(s).map(TokensArg::Ids),
            (Some(s), false) => match s.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(TokensArg::MaxNew(n)),
                _ => Err(format!("invalid value for -n/--tokens: {s} (a positive integer; a token list needs --dump-logits)")),
            },
        }
    }

    /// The speculative-decoding settings when speculation applies (CLI.md
    /// §4.1): an MTP file, more than one draft, greedy sampling, and
    /// `DS4_MTP_SPEC_DISABLE` unset (`--quality` or `DS4_MTP_STRICT` make
    /// verification strict). Otherwise the reason it does not.
    pub fn speculation(&self) -> Result<ds4_engine::mtp::SpecConfig, &'static str> {
        if self.mtp.is_none() {
            return Err("no --mtp file");
        }
        let pairing = self.mtp_pairing.parse().unwrap_or(ds4_engine::mtp::Pairing::DeepSeek);
        let cfg = ds4_engine::mtp::SpecConfig::from_flags(self.mtp_draft, self.mtp_margin, self.quality, pairing)?;
        if self.temp > 0.0 {
            return Err("sampling is not greedy (speculation needs --temp 0)");
        }
        Ok(cfg)
    }

    pub fn max_new_tokens(&self) -> usize {
        match self.tokens_arg() {
            Ok(TokensArg::MaxNew(n)) => n,
            _ => DEFAULT_MAX_TOKENS,
        }
    }

    /// Checks clap cannot express; the message is for stderr, exit 2.
    pub fn validate(&self) -> Result<(), String> {
        if self.server {
            return Err("use ds4-server for the HTTP server".into());
        }
        self.backend()?;
        self.tokens_arg()?;
        if let Some(l) = &self.prompt_tokens {
            parse_id_list(l).map_err(|e| e.replace("--tokens", "--prompt-tokens"))?;
            if self.dump_tokens {
                return Err("--dump-tokens takes a text prompt (-p or --prompt-file)".into());
            }
        }
        if self.dump_tokens && self.prompt.is_none() && self.prompt_file.is_none() {
            return Err("--dump-tokens requires -p or --prompt-file".into());
        }
        if self.demo && self.model.as_os_str() != DEFAULT_MODEL {
            return Err("--demo and -m are exclusive".into());
        }
        let modes = [self.dump_tokens, self.dump_logits.is_some(), self.dump_logprobs.is_some(), self.perplexity_file.is_some(), self.inspect];
        if modes.iter().filter(|&&m| m).count() > 1 {
            return Err("choose one of --dump-tokens, --dump-logits, --dump-logprobs, --perplexity-file, --inspect".into());
        }
        let has_prompt = self.prompt.is_some() || self.prompt_file.is_some() || self.prompt_tokens.is_some();
        if self.dump_logits.is_some() && self.tokens.is_none() && !has_prompt {
            return Err("--dump-logits needs --tokens ID,ID,... or a prompt (-p/--prompt-file/--prompt-tokens)".into());
        }
        Ok(())
    }
}

/// Comma-separated token ids (spaces allowed).
pub fn parse_id_list(s: &str) -> Result<Vec<u32>, String> {
    let ids: Result<Vec<u32>, _> =
        s.split(',').map(|p| p.trim()).filter(|p| !p.is_empty()).map(|p| p.parse::<u32>()).collect();
    match ids {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("invalid token list for --tokens: {s:?} (expected ids like 0,15,27)")),
    }
}

fn rewrite_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut after_dashdash = false;
    for (i, a) in args.enumerate() {
        // A value of a text flag is left alone (`-p -sys` prompts "-sys").
        let is_value = out.last().is_some_and(|p| ["-p", "--prompt", "--system"].iter().any(|f| p == f));
        if i > 0 && !after_dashdash && !is_value && a == "-sys" {
            out.push("--system".into());
            continue;
        }
        if a == "--" && !is_value {
            after_dashdash = true;
        }
        out.push(a);
    }
    out
}

fn positive_usize(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 && n <= i32::MAX as usize => Ok(n),
        _ => Err(format!("expected a positive integer, got {s:?}")),
    }
}

fn usize_in(min: usize, max: usize) -> impl Fn(&str) -> Result<usize, String> + Clone {
    move |s: &str| match s.trim().parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected an integer in {min}..{max}, got {s:?}")),
    }
}

fn positive_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive integer, got {s:?}")),
    }
}

fn float_in(min: f32, max: f32) -> impl Fn(&str) -> Result<f32, String> + Clone {
    move |s: &str| match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v >= min && v <= max => Ok(v),
        _ => Err(format!("expected a number in {min}..{max}, got {s:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Args, clap::Error> {
        Args::try_from_iter(std::iter::once("ds4").chain(a.iter().copied()))
    }

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.model, PathBuf::from("ds4flash.gguf"));
        assert_eq!(a.ctx, 32768);
        assert_eq!(a.system, "You are a helpful assistant");
        assert_eq!(a.think_mode(), ThinkMode::High);
        assert_eq!((a.temp, a.top_p, a.min_p, a.top_k), (1.0, 1.0, 0.05, 0));
        assert_eq!(a.tokens_arg().unwrap(), TokensArg::MaxNew(50000));
        assert_eq!(a.backend().unwrap(), BackendChoice::Auto);
        a.validate().unwrap();
    }

    #[test]
    fn ds4_spellings() {
        let a = parse(&["-sys", "", "-n", "7", "-c", "4096", "--temp", "0", "-p", "hi"]).unwrap();
        assert_eq!(a.system, "");
        assert_eq!(a.max_new_tokens(), 7);
        assert_eq!(a.ctx, 4096);
        assert_eq!(a.temp, 0.0);
        assert_eq!(a.prompt.as_deref(), Some("hi"));
        // -sys as a value is left alone.
        let a = parse(&["-p", "-sys"]).unwrap();
        assert_eq!(a.prompt.as_deref(), Some("-sys"));
        let a = parse(&["-sys", "-be brief", "-p", "-5 degrees?"]).unwrap();
        assert_eq!((a.system.as_str(), a.prompt.as_deref()), ("-be brief", Some("-5 degrees?")));
    }

    #[test]
    fn think_flags_last_wins() {
        assert_eq!(parse(&["--nothink"]).unwrap().think_mode(), ThinkMode::None);
        assert_eq!(parse(&["--nothink", "--think-max"]).unwrap().think_mode(), ThinkMode::Max);
        assert_eq!(parse(&["--think-max", "--think"]).unwrap().think_mode(), ThinkMode::High);
        assert_eq!(parse(&["--think", "--nothink"]).unwrap().think_mode(), ThinkMode::None);
    }

    #[test]
    fn invalid_values_are_usage_errors() {
        for bad in [
            &["--temp", "101"][..],
            &["--temp", "nan"],
            &["--top-p", "1.5"],
            &["--min-p", "-0.1"],
            &["--ctx", "0"],
            &["--ctx", "-5"],
            &["--seed", "0"],
            &["--seed", "x"],
            &["-p", "a", "--prompt-file", "f"],
            &["--bogus"],
            &["--logprobs-top-k", "0"],
            &["--decode"],
            &["--mtp-draft", "0"],
            &["--mtp-draft", "17"],
            &["--mtp-margin", "1001"],
            &["--mtp-margin", "-1"],
            &["--mtp-pairing", "other"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        assert_eq!(parse(&["--help"]).unwrap_err().exit_code(), 0);
        assert!(parse(&["--server"]).unwrap().validate().is_err());
        assert!(parse(&["--backend", "metal"]).unwrap().validate().is_err());
        assert!(parse(&["--backend", "tpu"]).unwrap().validate().is_err());
        assert!(parse(&["--dump-tokens"]).unwrap().validate().is_err());
        assert!(parse(&["-n", "1,2"]).unwrap().validate().is_err());
        assert!(parse(&["--demo", "-m", "x.gguf"]).unwrap().validate().is_err());
    }

    #[test]
    fn mtp_flags() {
        let a = parse(&[]).unwrap();
        assert_eq!((a.mtp_draft, a.mtp_margin, a.mtp_pairing.as_str()), (1, 3.0, "deepseek"));
        assert!(a.speculation().is_err());
        let a = parse(&["--mtp", "m.gguf", "--mtp-draft", "4", "--temp", "0", "--quality", "--mtp-pairing", "ds4", "--mtp-margin", "0.5"]).unwrap();
        let c = a.speculation().unwrap();
        assert_eq!((c.max_draft, c.margin, c.strict, c.pairing), (4, 0.5, true, ds4_engine::mtp::Pairing::Ds4));
        // Default draft count 1 and sampled decoding do not speculate.
        assert!(parse(&["--mtp", "m.gguf", "--temp", "0"]).unwrap().speculation().is_err());
        assert!(parse(&["--mtp", "m.gguf", "--mtp-draft", "3"]).unwrap().speculation().is_err());
        assert_eq!(parse(&["--mtp-draft", "16"]).unwrap().mtp_draft, 16);
    }

    #[test]
    fn tokens_list_with_dump_logits() {
        let a = parse(&["--tokens", "0, 15,27", "--dump-logits", "o.f32"]).unwrap();
        assert_eq!(a.tokens_arg().unwrap(), TokensArg::Ids(vec![0, 15, 27]));
        let a = parse(&["--tokens", "5", "--dump-logits", "o.f32"]).unwrap();
        assert_eq!(a.tokens_arg().unwrap(), TokensArg::Ids(vec![5]));
        let a = parse(&["--tokens", "0,x", "--dump-logits", "o.f32"]).unwrap();
        assert!(a.validate().is_err());
        assert!(parse(&["--dump-logits", "o.f32"]).unwrap().validate().is_err());
        let a = parse(&["--prompt-tokens", "0,7", "--dump-logits", "o.f32"]).unwrap();
        a.validate().unwrap();
        assert!(parse(&["--prompt-tokens", "0,a"]).unwrap().validate().is_err());
        assert!(parse(&["--prompt-tokens", "1", "-p", "x"]).is_err());
    }

    #[test]
    fn backend_flags() {
        assert_eq!(parse(&["--cpu"]).unwrap().backend().unwrap(), BackendChoice::Cpu);
        assert_eq!(parse(&["--cuda"]).unwrap().backend().unwrap(), BackendChoice::Cuda);
        assert_eq!(parse(&["--cuda", "--cpu"]).unwrap().backend().unwrap(), BackendChoice::Cpu);
        assert_eq!(parse(&["--backend", "cuda"]).unwrap().backend().unwrap(), BackendChoice::Cuda);
    }
}
