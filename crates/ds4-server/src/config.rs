//! Command-line flags (SERVING.md §10, KVCACHE.md §8).
//!
//! clap exits with status 2 on unknown options or invalid values and with 0
//! on `-h/--help`, which is exactly what the spec asks for.

use clap::Parser;
use std::path::PathBuf;

fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("expected a positive integer, got {s:?}")),
    }
}

fn ranged_usize(lo: usize, hi: usize) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |s: &str| match s.parse::<usize>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("expected an integer in {lo}..{hi}, got {s:?}")),
    }
}

fn ranged_f32(lo: f32, hi: f32) -> impl Fn(&str) -> Result<f32, String> + Clone + Send + Sync + 'static {
    move |s: &str| match s.parse::<f32>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("expected a number in {lo}..{hi}, got {s:?}")),
    }
}

#[derive(Parser, Debug, Clone)]
#[command(name = "ds4-server", about = "DeepSeek V4 Flash OpenAI/Anthropic-compatible HTTP server")]
pub struct Args {
    /// Model GGUF file.
    #[arg(short = 'm', long = "model", default_value = "ds4flash.gguf")]
    pub model: PathBuf,
    /// Optional MTP (speculative draft) GGUF.
    #[arg(long)]
    pub mtp: Option<PathBuf>,
    /// Drafts per speculative step (speculation needs 2 or more).
    #[arg(long = "mtp-draft", default_value_t = 1, value_parser = ranged_usize(1, ds4_engine::mtp::MAX_DRAFT))]
    pub mtp_draft: usize,
    #[arg(long = "mtp-margin", default_value_t = 3.0, value_parser = ranged_f32(0.0, 1000.0))]
    pub mtp_margin: f32,
    /// Context size allocated at start.
    #[arg(short = 'c', long = "ctx", default_value_t = 32768, value_parser = positive_usize)]
    pub ctx: usize,
    /// Default max output tokens when the client sends none.
    #[arg(short = 'n', long = "tokens", default_value_t = 393216, value_parser = positive_usize)]
    pub tokens: usize,
    /// CPU helper threads (default: auto).
    #[arg(short = 't', long = "threads", value_parser = positive_usize)]
    pub threads: Option<usize>,
    /// chdir before loading.
    #[arg(long)]
    pub chdir: Option<PathBuf>,
    /// Prefer exact kernels.
    #[arg(long)]
    pub quality: bool,
    #[arg(long = "dir-steering-file")]
    pub dir_steering_file: Option<PathBuf>,
    #[arg(long = "dir-steering-ffn", value_parser = ranged_f32(-100.0, 100.0))]
    pub dir_steering_ffn: Option<f32>,
    #[arg(long = "dir-steering-attn", default_value_t = 0.0, value_parser = ranged_f32(-100.0, 100.0))]
    pub dir_steering_attn: f32,
    #[arg(long = "warm-weights")]
    pub warm_weights: bool,
    #[arg(long, conflicts_with_all = ["cuda", "cpu", "backend"])]
    pub metal: bool,
    #[arg(long, conflicts_with_all = ["cpu", "backend"])]
    pub cuda: bool,
    #[arg(long, conflicts_with = "backend")]
    pub cpu: bool,
    /// Backend name (cpu, cuda, metal).
    #[arg(long)]
    pub backend: Option<String>,
    /// IPv4 bind address (`localhost` accepted).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Add CORS headers to every response.
    #[arg(long)]
    pub cors: bool,
    /// Human-readable session trace file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Require this API key (`Authorization: Bearer` or `x-api-key`). Without
    /// it, keys sent by clients are ignored (SERVING.md §5).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,
    /// Maximum request body size in bytes.
    #[arg(long = "max-body-bytes", default_value_t = 64 << 20, value_parser = positive_usize)]
    pub max_body_bytes: usize,
    /// Instance lock file (env DS4_LOCK_FILE, default /tmp/ds4.lock).
    #[arg(long = "lock-file", env = "DS4_LOCK_FILE", default_value = "/tmp/ds4.lock")]
    pub lock_file: PathBuf,

    // ---- disk KV cache (KVCACHE.md §8): the cache crate owns these flags ----
    #[command(flatten)]
    pub kv: ds4_kvcache::KvCacheArgs,
    #[arg(long = "tool-memory-max-ids", default_value_t = 100000, value_parser = positive_usize)]
    pub tool_memory_max_ids: usize,
    #[arg(long = "disable-exact-dsml-tool-replay")]
    pub disable_exact_dsml_tool_replay: bool,
}

impl Args {
    /// Cross-flag checks clap cannot express. Returns a message for exit 2.
    pub fn validate(&self) -> Result<(), String> {
        self.kv.validate()?;
        if let Some(b) = &self.backend {
            if !matches!(b.as_str(), "cpu" | "cuda" | "metal") {
                return Err(format!("unknown backend {b:?} (cpu, cuda, metal)"));
            }
        }
        Ok(())
    }

    pub fn bind_host(&self) -> &str {
        if self.host == "localhost" {
            "127.0.0.1"
        } else {
            &self.host
        }
    }

    /// Default max tokens as advertised in model metadata (§5.1, §11 #31).
    pub fn max_completion_tokens(&self) -> usize {
        self.tokens.min(self.ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let a = Args::try_parse_from(["ds4-server"]).unwrap();
        assert_eq!(a.ctx, 32768);
        assert_eq!(a.tokens, 393216);
        assert_eq!(a.port, 8000);
        assert_eq!(a.host, "127.0.0.1");
        assert_eq!(a.max_body_bytes, 64 << 20);
        assert_eq!(a.max_completion_tokens(), 32768);
        assert!(a.validate().is_ok());
        for bad in [
            &["ds4-server", "--ctx", "0"][..],
            &["ds4-server", "--ctx", "-5"],
            &["ds4-server", "--bogus"],
            &["ds4-server", "--mtp-margin", "2000"],
            &["ds4-server", "--mtp-draft", "0"],
            &["ds4-server", "--mtp-draft", "17"],
            &["ds4-server", "--port", "70000"],
        ] {
            let e = Args::try_parse_from(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        let h = Args::try_parse_from(["ds4-server", "-h"]).unwrap_err();
        assert_eq!(h.exit_code(), 0);
        let a = Args::try_parse_from(["ds4-server", "--kv-cache-cold-max-tokens", "10"]).unwrap();
        assert!(a.validate().is_err());
        let a = Args::try_parse_from(["ds4-server", "--host", "localhost", "--kv-cache-cold-max-tokens", "0"]).unwrap();
        assert!(a.validate().is_ok());
        assert_eq!(a.bind_host(), "127.0.0.1");
        // Flattened cache flags keep their names and defaults.
        assert_eq!(a.kv.kv_disk_dir, None);
        let a = Args::try_parse_from(["ds4-server", "--kv-disk-dir", "/tmp/x", "--kv-disk-space-mb", "5", "--kv-cache-min-tokens", "64"]).unwrap();
        assert_eq!(a.kv.budget_bytes(), 5 << 20);
        assert_eq!(a.kv.policy().min_tokens, 64);
        assert_eq!(Args::try_parse_from(["ds4-server", "--kv-cache-min-tokens", "0"]).unwrap_err().exit_code(), 2);
    }
}
