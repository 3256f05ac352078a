//! Cache policy (KVCACHE.md §4, §6, §7, §8): flags, the pure decisions of
//! *when* and *what* to save, the budget check and the eviction score.
//! Nothing here touches the file system.

use std::path::PathBuf;

use crate::format::SaveReason;

pub const DEFAULT_SPACE_MB: u64 = 4096;
pub const DEFAULT_MIN_TOKENS: u32 = 512;
pub const DEFAULT_COLD_MAX_TOKENS: u32 = 30000;
pub const DEFAULT_CONTINUED_INTERVAL_TOKENS: u32 = 10000;
pub const DEFAULT_BOUNDARY_TRIM_TOKENS: u32 = 32;
pub const DEFAULT_BOUNDARY_ALIGN_TOKENS: u32 = 2048;
pub const DEFAULT_TOOL_MEMORY_MAX_IDS: u32 = 100_000;
/// Hit counts decay with this half-life (6 h).
pub const HIT_HALF_LIFE_SECS: f64 = 6.0 * 3600.0;
/// Decayed hit counts below this read as zero.
pub const MIN_EFFECTIVE_HITS: f64 = 0.01;

/// Eviction base weight per save reason (KVCACHE.md §7 [DECISION]): cold
/// anchors (small, extendable by many later prompts) outrank live dumps
/// (evict/shutdown), which outrank periodic continued snapshots.
pub fn reason_weight(reason: SaveReason) -> f64 {
    match reason {
        SaveReason::Cold => 16.0,
        SaveReason::Evict | SaveReason::Shutdown => 4.0,
        SaveReason::Continued
        | SaveReason::Unknown
        | SaveReason::AgentSystem
        | SaveReason::AgentSession => 1.0,
    }
}

/// Disk-cache flags (KVCACHE.md §8). Flatten into the server's clap parser:
/// `#[command(flatten)] kv: ds4_kvcache::KvCacheArgs`.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct KvCacheArgs {
    /// Enable the disk KV cache in DIR (created, mode 0700, if missing).
    #[arg(long = "kv-disk-dir", value_name = "DIR")]
    pub kv_disk_dir: Option<PathBuf>,
    /// Disk budget in MiB (0 or unset: 4096).
    #[arg(long = "kv-disk-space-mb", value_name = "N")]
    pub kv_disk_space_mb: Option<u64>,
    /// Never save or load checkpoints shorter than N tokens.
    #[arg(long = "kv-cache-min-tokens", value_name = "N", default_value_t = DEFAULT_MIN_TOKENS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub kv_cache_min_tokens: u32,
    /// Cold-save first prompts with length in [min, N]; 0 disables cold saves.
    #[arg(long = "kv-cache-cold-max-tokens", value_name = "N", default_value_t = DEFAULT_COLD_MAX_TOKENS)]
    pub kv_cache_cold_max_tokens: u32,
    /// Continued-checkpoint spacing (rounded up to the alignment); 0 disables.
    #[arg(long = "kv-cache-continued-interval-tokens", value_name = "N",
          default_value_t = DEFAULT_CONTINUED_INTERVAL_TOKENS)]
    pub kv_cache_continued_interval_tokens: u32,
    /// Tokens trimmed from the tail before a non-anchor cold save.
    #[arg(long = "kv-cache-boundary-trim-tokens", value_name = "N",
          default_value_t = DEFAULT_BOUNDARY_TRIM_TOKENS)]
    pub kv_cache_boundary_trim_tokens: u32,
    /// Align cold saves down / the continued step up to this multiple; 0 disables.
    #[arg(long = "kv-cache-boundary-align-tokens", value_name = "N",
          default_value_t = DEFAULT_BOUNDARY_ALIGN_TOKENS)]
    pub kv_cache_boundary_align_tokens: u32,
    /// Only reuse checkpoints written by the same routed-expert quantisation.
    #[arg(long = "kv-cache-reject-different-quant")]
    pub kv_cache_reject_different_quant: bool,
    /// Delete a checkpoint after loading it when it holds more than N tokens
    /// (ds4 parity knob; 0 = never, the default).
    #[arg(long = "kv-cache-consume-over", value_name = "N", default_value_t = 0)]
    pub kv_cache_consume_over: u32,
}

impl Default for KvCacheArgs {
    fn default() -> Self {
        KvCacheArgs {
            kv_disk_dir: None,
            kv_disk_space_mb: None,
            kv_cache_min_tokens: DEFAULT_MIN_TOKENS,
            kv_cache_cold_max_tokens: DEFAULT_COLD_MAX_TOKENS,
            kv_cache_continued_interval_tokens: DEFAULT_CONTINUED_INTERVAL_TOKENS,
            kv_cache_boundary_trim_tokens: DEFAULT_BOUNDARY_TRIM_TOKENS,
            kv_cache_boundary_align_tokens: DEFAULT_BOUNDARY_ALIGN_TOKENS,
            kv_cache_reject_different_quant: false,
            kv_cache_consume_over: 0,
        }
    }
}

/// Exact-DSML tool replay flags (SERVING.md §6.3). The server owns tool
/// memory; flatten this only if the server does not define these flags itself.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct ToolReplayArgs {
    /// Tool-call id → DSML entries kept in RAM.
    #[arg(long = "tool-memory-max-ids", value_name = "N", default_value_t = DEFAULT_TOOL_MEMORY_MAX_IDS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub tool_memory_max_ids: u32,
    /// No tool memory, no tool-map trailers.
    #[arg(long = "disable-exact-dsml-tool-replay")]
    pub disable_exact_dsml_tool_replay: bool,
}

impl Default for ToolReplayArgs {
    fn default() -> Self {
        ToolReplayArgs { tool_memory_max_ids: DEFAULT_TOOL_MEMORY_MAX_IDS, disable_exact_dsml_tool_replay: false }
    }
}

impl KvCacheArgs {
    /// Cross-flag validation clap cannot express (exit with status 2 on error).
    pub fn validate(&self) -> Result<(), String> {
        self.policy().validate()
    }

    pub fn policy(&self) -> Policy {
        Policy {
            min_tokens: self.kv_cache_min_tokens,
            cold_max_tokens: self.kv_cache_cold_max_tokens,
            continued_interval_tokens: self.kv_cache_continued_interval_tokens,
            boundary_trim_tokens: self.kv_cache_boundary_trim_tokens,
            boundary_align_tokens: self.kv_cache_boundary_align_tokens,
            consume_over_tokens: self.kv_cache_consume_over,
        }
    }

    /// Budget in bytes (0 / unset → 4096 MiB).
    pub fn budget_bytes(&self) -> u64 {
        let mb = match self.kv_disk_space_mb {
            None | Some(0) => DEFAULT_SPACE_MB,
            Some(n) => n,
        };
        mb.saturating_mul(1024 * 1024)
    }
}

/// The numeric knobs (token counts) of the save/load policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub min_tokens: u32,
    pub cold_max_tokens: u32,
    pub continued_interval_tokens: u32,
    pub boundary_trim_tokens: u32,
    pub boundary_align_tokens: u32,
    pub consume_over_tokens: u32,
}

impl Default for Policy {
    fn default() -> Self {
        KvCacheArgs::default().policy()
    }
}

impl Policy {
    pub fn validate(&self) -> Result<(), String> {
        if self.min_tokens == 0 {
            return Err("--kv-cache-min-tokens must be positive".into());
        }
        if self.cold_max_tokens != 0 && self.cold_max_tokens < self.min_tokens {
            return Err(format!(
                "--kv-cache-cold-max-tokens must be 0 or >= --kv-cache-min-tokens ({})",
                self.min_tokens
            ));
        }
        Ok(())
    }

    /// `stable(P)` of KVCACHE.md §4.1 step 2: trim the tail, align down.
    pub fn stable_len(&self, p: u32) -> u32 {
        let (min, trim, align) =
            (self.min_tokens as u64, self.boundary_trim_tokens as u64, self.boundary_align_tokens as u64);
        let p64 = p as u64;
        if p64 > min + trim {
            let mut s = p64 - trim;
            if align > 0 {
                s -= s % align;
            }
            if s >= min {
                return s as u32;
            }
        }
        p
    }

    /// Chat anchor (§4.1 step 1): position of the last `user_id` token before
    /// the first `assistant_id` token, if that is ≥ `min_tokens`.
    pub fn chat_anchor(&self, prompt: &[u32], user_id: Option<u32>, assistant_id: Option<u32>) -> Option<u32> {
        let (user, asst) = (user_id?, assistant_id?);
        let mut last_user = None;
        for (i, &t) in prompt.iter().enumerate() {
            if t == asst {
                break;
            }
            if t == user {
                last_user = Some(i as u64);
            }
        }
        let pos = last_user?;
        (pos >= self.min_tokens as u64).then_some(pos as u32)
    }

    /// Cold store length for a request that reused nothing (`cached == 0`).
    /// `None`: no cold save. `Some(n) < prompt.len()`: prefill to n, save,
    /// then continue; `Some(prompt.len())`: prefill fully, then save.
    pub fn cold_store_len(
        &self,
        prompt: &[u32],
        cached: u32,
        user_id: Option<u32>,
        assistant_id: Option<u32>,
    ) -> Option<u32> {
        let p = u32::try_from(prompt.len()).ok()?;
        if cached != 0 || self.cold_max_tokens == 0 || p < self.min_tokens || p > self.cold_max_tokens {
            return None;
        }
        let n = match self.chat_anchor(prompt, user_id, assistant_id) {
            Some(a) => a,
            None => self.stable_len(p),
        };
        (n >= self.min_tokens).then_some(n)
    }

    /// Continued frontier spacing: the interval rounded *up* to the alignment
    /// (0 = continued saves disabled).
    pub fn continued_step(&self) -> u32 {
        let step = self.continued_interval_tokens as u64;
        if step == 0 {
            return 0;
        }
        let align = self.boundary_align_tokens as u64;
        let s = if align > 0 { step.div_ceil(align) * align } else { step };
        u32::try_from(s).unwrap_or(0)
    }

    /// Whether a live state of `live_len` tokens is worth an evict/shutdown save.
    pub fn should_save_live(&self, live_len: usize) -> bool {
        live_len >= self.min_tokens as usize
    }

    /// Whether a checkpoint of `tokens` tokens is deleted after loading.
    pub fn consumes_on_load(&self, tokens: u32) -> bool {
        self.consume_over_tokens > 0 && tokens > self.consume_over_tokens
    }
}

/// Per-session continued-checkpoint schedule (§4.2, §4.1 suppression).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContinuedSchedule {
    /// Length of the last continued/cold store of this session.
    pub last_stored: u32,
}

/// Token returned by `suppress`, handed back to `restore` if the cold write fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suppression {
    old: u32,
    at: u32,
}

impl ContinuedSchedule {
    /// Frontier to save now for a live state of `live_len` tokens, if any.
    /// The caller must also skip it while the model is inside a DSML tool block.
    pub fn target(&self, policy: &Policy, live_len: u32) -> Option<u32> {
        let step = policy.continued_step();
        if step == 0 || live_len < policy.min_tokens || !live_len.is_multiple_of(step) || live_len <= self.last_stored {
            return None;
        }
        Some(live_len)
    }

    /// Records a successful continued/cold store at `tokens`.
    pub fn note_store(&mut self, tokens: u32) {
        self.last_stored = self.last_stored.max(tokens);
    }

    /// Live-cache miss: the schedule restarts.
    pub fn reset(&mut self) {
        self.last_stored = 0;
    }

    /// After a disk hit the loaded length counts as stored.
    pub fn loaded(&mut self, tokens: u32) {
        self.last_stored = tokens;
    }

    /// A cold store about to land on a continued frontier suppresses the
    /// duplicate continued write there.
    pub fn suppress(&mut self, policy: &Policy, cold_len: u32) -> Option<Suppression> {
        if self.target(policy, cold_len) != Some(cold_len) {
            return None;
        }
        let s = Suppression { old: self.last_stored, at: cold_len };
        self.note_store(cold_len);
        Some(s)
    }

    /// The cold write failed: re-enable the suppressed continued write.
    pub fn restore(&mut self, s: Option<Suppression>) {
        if let Some(s) = s {
            if self.last_stored == s.at {
                self.last_stored = s.old;
            }
        }
    }
}

/// Header + text + payload + trailer, `None` on overflow.
pub fn file_size(text_len: u64, payload_len: u64, trailer_len: u64) -> Option<u64> {
    crate::format::PREFIX_LEN.checked_add(text_len)?.checked_add(payload_len)?.checked_add(trailer_len)
}

/// File size plus 1 % headroom (rounded up), `None` on overflow.
pub fn required_with_headroom(file_bytes: u64) -> Option<u64> {
    file_bytes.checked_add(file_bytes.div_ceil(100))
}

/// §4 budget check; `budget == 0` means unlimited.
pub fn fits_budget(budget: u64, text_len: u64, payload_len: u64, trailer_len: u64) -> bool {
    let Some(f) = file_size(text_len, payload_len, trailer_len) else { return false };
    if budget == 0 {
        return true;
    }
    matches!(required_with_headroom(f), Some(r) if r <= budget)
}

/// What eviction needs to know about one file.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreInput {
    pub reason: SaveReason,
    pub tokens: u32,
    pub hits: u32,
    pub created_at: u64,
    pub last_used: u64,
    pub file_size: u64,
}

/// Hits decayed with the 6 h half-life; 0 when the file has no usage time.
pub fn effective_hits(hits: u32, created_at: u64, last_used: u64, now: u64) -> f64 {
    let used_at = if last_used != 0 { last_used } else { created_at };
    if used_at == 0 {
        return 0.0;
    }
    let mut eff = hits as f64;
    if now > used_at {
        eff *= (-((now - used_at) as f64) / HIT_HALF_LIFE_SECS).exp2();
        if eff < MIN_EFFECTIVE_HITS {
            eff = 0.0;
        }
    }
    eff
}

/// Value per byte (§6 with the §7 reason weights); higher survives longer.
/// Protection is applied by the eviction loop, not here.
pub fn eviction_score(e: &ScoreInput, now: u64) -> f64 {
    if e.file_size == 0 {
        return 0.0;
    }
    let eff = effective_hits(e.hits, e.created_at, e.last_used, now);
    (eff + reason_weight(e.reason)) * e.tokens as f64 / e.file_size as f64
}

/// Eviction plan: indices of `entries` to delete, in order, so that the
/// remaining total is ≤ `budget`. `protected` (index of the just-written file)
/// is never chosen unless it alone exceeds the budget. Ties on score go to the
/// older `last_used`.
pub fn plan_eviction(entries: &[ScoreInput], budget: u64, protected: Option<usize>, now: u64) -> Vec<usize> {
    if budget == 0 {
        return Vec::new();
    }
    let protected = protected.filter(|&i| i < entries.len() && entries[i].file_size <= budget);
    let mut total: u64 = entries.iter().map(|e| e.file_size).sum();
    let mut alive: Vec<usize> = (0..entries.len()).collect();
    let score = |i: usize| {
        if Some(i) == protected {
            f64::INFINITY
        } else {
            eviction_score(&entries[i], now)
        }
    };
    let mut out = Vec::new();
    while total > budget && !alive.is_empty() {
        let mut best = 0;
        for k in 1..alive.len() {
            let (i, b) = (alive[k], alive[best]);
            let (si, sb) = (score(i), score(b));
            if si < sb || (si == sb && entries[i].last_used < entries[b].last_used) {
                best = k;
            }
        }
        let victim = alive.remove(best);
        total = total.saturating_sub(entries[victim].file_size);
        out.push(victim);
    }
    out
}

/// Which text keys an evict/shutdown checkpoint of the live state (§4.3):
/// a live binding's visible transcript when it is valid for the current live
/// token count (Responses first), else the decoded live tokens.
pub fn live_key_source<'a>(
    live_len: usize,
    responses: Option<(&'a [u8], usize)>,
    thinking: Option<(&'a [u8], usize)>,
) -> Option<(crate::format::KeyKind, &'a [u8])> {
    use crate::format::KeyKind;
    if let Some((text, n)) = responses {
        if n == live_len && !text.is_empty() {
            return Some((KeyKind::ResponsesVisible, text));
        }
    }
    if let Some((text, n)) = thinking {
        if n == live_len && !text.is_empty() {
            return Some((KeyKind::ThinkingVisible, text));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        kv: KvCacheArgs,
        #[command(flatten)]
        tools: ToolReplayArgs,
    }

    #[test]
    fn flags_and_defaults() {
        let c = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(c.kv, KvCacheArgs::default());
        assert_eq!(c.tools, ToolReplayArgs::default());
        assert_eq!(c.kv.budget_bytes(), 4096 << 20);
        assert_eq!(c.kv.policy(), Policy::default());
        let p = Policy::default();
        assert_eq!(
            (p.min_tokens, p.cold_max_tokens, p.continued_interval_tokens, p.boundary_trim_tokens, p.boundary_align_tokens),
            (512, 30000, 10000, 32, 2048)
        );
        let c = Cli::try_parse_from([
            "x",
            "--kv-disk-dir",
            "/tmp/k",
            "--kv-disk-space-mb",
            "7",
            "--kv-cache-min-tokens",
            "100",
            "--kv-cache-cold-max-tokens",
            "0",
            "--kv-cache-continued-interval-tokens",
            "0",
            "--kv-cache-boundary-trim-tokens",
            "0",
            "--kv-cache-boundary-align-tokens",
            "0",
            "--kv-cache-reject-different-quant",
            "--kv-cache-consume-over",
            "30000",
            "--tool-memory-max-ids",
            "5",
            "--disable-exact-dsml-tool-replay",
        ])
        .unwrap();
        assert_eq!(c.kv.kv_disk_dir.as_deref(), Some(std::path::Path::new("/tmp/k")));
        assert_eq!(c.kv.budget_bytes(), 7 << 20);
        assert!(c.kv.kv_cache_reject_different_quant && c.tools.disable_exact_dsml_tool_replay);
        assert_eq!(c.kv.policy().consume_over_tokens, 30000);
        assert!(c.kv.validate().is_ok());
        assert!(Cli::try_parse_from(["x", "--kv-cache-min-tokens", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--kv-cache-min-tokens", "-3"]).is_err());
        let c = Cli::try_parse_from(["x", "--kv-cache-cold-max-tokens", "100"]).unwrap();
        assert!(c.kv.validate().is_err());
        let c = Cli::try_parse_from(["x", "--kv-disk-space-mb", "0"]).unwrap();
        assert_eq!(c.kv.budget_bytes(), 4096 << 20);
    }

    #[test]
    fn stable_len_spec_examples() {
        // KVCACHE.md §9.1
        let p = Policy::default();
        assert_eq!(p.stable_len(11011), 10240);
        assert_eq!(p.stable_len(1695), 1695);
        let p2 = Policy { boundary_trim_tokens: 0, boundary_align_tokens: 1000, ..Policy::default() };
        assert_eq!(p2.stable_len(3500), 3000);
        let p3 = Policy { boundary_align_tokens: 0, boundary_trim_tokens: 0, ..Policy::default() };
        assert_eq!(p3.stable_len(3500), 3500);
        // Aligned result below min falls back to the full prompt.
        assert_eq!(p.stable_len(2000), 2000);
        assert_eq!(p.stable_len(2100), 2048);
    }

    #[test]
    fn chat_anchor_spec_cases() {
        // KVCACHE.md §9.2 with small ids: U = user, A = assistant.
        const U: u32 = 900;
        const A: u32 = 901;
        let p = Policy { min_tokens: 4, ..Policy::default() };
        // Codex-style: system..., U env..., U task..., A
        let mut codex = vec![0, 5, 5, 5, 5, U, 6, 6, 6, U, 7, 7, A, 8];
        assert_eq!(p.chat_anchor(&codex, Some(U), Some(A)), Some(9));
        // Later turns after the first assistant are ignored.
        codex.extend([U, 9, 9, A]);
        assert_eq!(p.chat_anchor(&codex, Some(U), Some(A)), Some(9));
        // Claude-style single user turn.
        let claude = vec![0, 5, 5, 5, 5, 5, U, 7, A];
        assert_eq!(p.chat_anchor(&claude, Some(U), Some(A)), Some(6));
        // Anchor below min → none.
        let short = vec![0, U, 7, A];
        assert_eq!(p.chat_anchor(&short, Some(U), Some(A)), None);
        // Missing ids → none.
        assert_eq!(p.chat_anchor(&codex, None, Some(A)), None);
        assert_eq!(p.chat_anchor(&codex, Some(U), None), None);
        // No user token at all → none.
        assert_eq!(p.chat_anchor(&[1, 2, 3, 4, 5, 6], Some(U), Some(A)), None);
    }

    #[test]
    fn cold_store_len_rules() {
        let p = Policy::default();
        let u = 900;
        let a = 901;
        let mut prompt = vec![1u32; 11011];
        // No anchor: stable().
        assert_eq!(p.cold_store_len(&prompt, 0, Some(u), Some(a)), Some(10240));
        // Reused something: no cold save.
        assert_eq!(p.cold_store_len(&prompt, 5, Some(u), Some(a)), None);
        // Anchor wins.
        prompt[700] = u;
        prompt[800] = a;
        assert_eq!(p.cold_store_len(&prompt, 0, Some(u), Some(a)), Some(700));
        // Below min / above cold max / cold disabled.
        assert_eq!(p.cold_store_len(&prompt[..511], 0, Some(u), Some(a)), None);
        assert_eq!(p.cold_store_len(&vec![1; 30001], 0, Some(u), Some(a)), None);
        assert_eq!(p.cold_store_len(&vec![1; 30000], 0, Some(u), Some(a)), Some(28672));
        let off = Policy { cold_max_tokens: 0, ..p.clone() };
        assert_eq!(off.cold_store_len(&prompt, 0, Some(u), Some(a)), None);
        assert_eq!(p.cold_store_len(&vec![1; 1695], 0, None, None), Some(1695));
    }

    #[test]
    fn continued_targets_spec() {
        // KVCACHE.md §9.3
        let p = Policy::default();
        assert_eq!(p.continued_step(), 10240);
        let mut s = ContinuedSchedule::default();
        assert_eq!(s.target(&p, 10239), None);
        assert_eq!(s.target(&p, 10240), Some(10240));
        s.last_stored = 4096;
        assert_eq!(s.target(&p, 10240), Some(10240));
        s.last_stored = 24576;
        assert_eq!(s.target(&p, 30720), Some(30720));
        s.last_stored = 10240;
        assert_eq!(s.target(&p, 18432), None);
        assert_eq!(s.target(&p, 20480), Some(20480));
        assert_eq!(s.target(&p, 10240), None);
        let p0 = Policy { boundary_align_tokens: 0, ..Policy::default() };
        s.last_stored = 20480;
        assert_eq!(s.target(&p0, 29999), None);
        assert_eq!(s.target(&p0, 30000), Some(30000));
        let off = Policy { continued_interval_tokens: 0, ..Policy::default() };
        assert_eq!(ContinuedSchedule::default().target(&off, 10240), None);
        let small = Policy { min_tokens: 20000, ..Policy::default() };
        assert_eq!(ContinuedSchedule::default().target(&small, 10240), None);
    }

    #[test]
    fn cold_suppresses_continued() {
        // KVCACHE.md §9.4
        let p = Policy::default();
        let mut s = ContinuedSchedule::default();
        let sup = s.suppress(&p, 10240);
        assert!(sup.is_some());
        assert_eq!(s.target(&p, 10240), None);
        s.restore(sup);
        assert_eq!(s.target(&p, 10240), Some(10240));
        // Not on a frontier: nothing to suppress.
        assert_eq!(s.suppress(&p, 10000), None);
        assert_eq!(s.last_stored, 0);
        // Restoring after a later store does not roll the schedule back.
        let sup = s.suppress(&p, 10240);
        s.note_store(20480);
        s.restore(sup);
        assert_eq!(s.last_stored, 20480);
        s.reset();
        assert_eq!(s.last_stored, 0);
        s.loaded(12345);
        assert_eq!(s.last_stored, 12345);
    }

    #[test]
    fn budget_check_spec() {
        // KVCACHE.md §9.5
        assert!(fits_budget(1100, 100, 930, 0));
        assert!(!fits_budget(1100, 100, 938, 0));
        assert!(!fits_budget(1100, 100, 900, 40));
        assert!(!fits_budget(1100, u64::MAX - 10, 100, 0));
        assert!(!fits_budget(0, u64::MAX - 10, 100, 0));
        assert!(fits_budget(0, 100, 1 << 40, 0));
        assert_eq!(required_with_headroom(1082), Some(1093));
        assert_eq!(required_with_headroom(1000), Some(1010));
    }

    fn si(reason: SaveReason, tokens: u32, hits: u32, last_used: u64, size: u64) -> ScoreInput {
        ScoreInput { reason, tokens, hits, created_at: last_used, last_used, file_size: size }
    }

    #[test]
    fn eviction_spec_cases() {
        use SaveReason::*;
        let now = 1_700_000_000;
        // §9.9: equal age, zero hits: fewer tokens per byte goes first.
        let e = [si(Continued, 100, 0, now, 1000), si(Continued, 200, 0, now, 1000)];
        assert_eq!(plan_eviction(&e, 1500, None, now), vec![0]);
        // The protected just-stored file survives even when it scores lower...
        assert_eq!(plan_eviction(&e, 1500, Some(0), now), vec![1]);
        // ...unless it alone exceeds the budget.
        let e2 = [si(Continued, 100, 0, now, 2000), si(Continued, 200, 0, now, 1000)];
        assert_eq!(plan_eviction(&e2, 1500, Some(0), now), vec![0]);
        // Stale hits decay: 15 hits long ago lose to a fresh zero-hit file.
        let e3 = [si(Continued, 100, 15, now - 30 * 86400, 1000), si(Continued, 100, 0, now, 1000)];
        assert_eq!(plan_eviction(&e3, 1500, None, now), vec![0]);
        // Recent hits keep a file.
        let e4 = [si(Continued, 100, 15, now - 60, 1000), si(Continued, 100, 0, now, 1000)];
        assert_eq!(plan_eviction(&e4, 1500, None, now), vec![1]);
        // Equal decayed score: the older last_used goes first.
        let e5 = [si(Continued, 100, 0, now, 1000), si(Continued, 100, 0, now - 5, 1000)];
        assert_eq!(plan_eviction(&e5, 1500, None, now), vec![1]);
        // Under budget: nothing; budget 0: unlimited.
        assert!(plan_eviction(&e5, 2000, None, now).is_empty());
        assert!(plan_eviction(&e5, 0, None, now).is_empty());
        // Several victims until the total fits.
        let e6 = [
            si(Continued, 10, 0, now, 100),
            si(Continued, 30, 0, now, 100),
            si(Continued, 20, 0, now, 100),
        ];
        assert_eq!(plan_eviction(&e6, 100, None, now), vec![0, 2]);
    }

    #[test]
    fn reason_weights_spec() {
        use SaveReason::*;
        let now = 5000;
        // §9.10: a fresh cold anchor (512 tokens) survives a denser continued
        // file (2048 tokens) and a denser evict dump, under a budget for one.
        let cold = si(Cold, 512, 0, now, 1000);
        let cont = si(Continued, 2048, 0, now, 1000);
        let dump = si(Evict, 1500, 0, now, 1000);
        assert_eq!(plan_eviction(&[cold.clone(), cont.clone()], 1000, None, now), vec![1]);
        assert_eq!(plan_eviction(&[cold.clone(), dump.clone()], 1000, None, now), vec![1]);
        // An evict dump survives a denser continued file.
        let cont_dense = si(Continued, 3000, 0, now, 1000);
        assert_eq!(plan_eviction(&[dump.clone(), cont_dense], 1000, None, now), vec![1]);
        let shut = si(Shutdown, 1500, 0, now, 1000);
        assert_eq!(plan_eviction(&[shut, si(Continued, 4000, 0, now, 1000)], 1000, None, now), vec![1]);
        // The #814 shape with real sizes (~24 MB fixed + ~13.4 KiB/token): a
        // 2000-token anchor outranks a 100k-token dump. (A 500-token anchor
        // is about break-even: its per-token cost is ~4.6x, the weight 4x.)
        let fixed = 25_200_000u64;
        let anchor = si(Cold, 2000, 0, now, fixed + 2000 * 13_700);
        let big = si(Evict, 100_000, 0, now, fixed + 100_000 * 13_700);
        assert!(eviction_score(&anchor, now) > eviction_score(&big, now));
        assert_eq!(reason_weight(Unknown), 1.0);
        assert_eq!(reason_weight(AgentSession), 1.0);
    }

    #[test]
    fn effective_hits_decay() {
        assert_eq!(effective_hits(8, 0, 0, 100), 0.0);
        assert_eq!(effective_hits(8, 100, 0, 100), 8.0);
        assert!((effective_hits(8, 0, 100, 100 + 21600) - 4.0).abs() < 1e-12);
        assert_eq!(effective_hits(1, 0, 100, 100 + 21600 * 7), 0.0); // 1/128 < 0.01
        // Clock going backwards keeps the raw count.
        assert_eq!(effective_hits(3, 0, 100, 50), 3.0);
    }

    #[test]
    fn live_key_selection() {
        use crate::format::KeyKind;
        assert_eq!(live_key_source(10, None, None), None);
        assert_eq!(live_key_source(10, Some((b"r", 9)), Some((b"t", 10))), Some((KeyKind::ThinkingVisible, &b"t"[..])));
        assert_eq!(live_key_source(10, Some((b"r", 10)), Some((b"t", 10))), Some((KeyKind::ResponsesVisible, &b"r"[..])));
        assert_eq!(live_key_source(10, Some((b"", 10)), None), None);
    }
}
