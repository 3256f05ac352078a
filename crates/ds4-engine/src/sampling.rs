//! Token sampler (SERVING.md §9).
//!
//! The algorithm follows ds4 step by step, including the order of float
//! operations (f32 weights, sequential f32 sums, the same filter tests), so a
//! given seed picks the same token as ds4 on the same logits. One exception: with
//! top_p < 1 and no top_k the whole vocabulary's normalizer is summed in f64 (then
//! rounded to f32), so that a backend's sum computed where the logits are
//! ([`NearMax::sum`]) bounds it tightly; ds4's sequential f32 sum of 129K weights
//! can be off by up to ~0.8 %, and the picks differ only where that error tips the
//! top_p test. Ties between
//! equal logits are broken by the lower token id (ds4's top-k insertion does
//! the same; its `qsort` path leaves tie order unspecified).

/// Temperature of the defaults (`--temp`, API `temperature`).
pub const DEFAULT_TEMPERATURE: f32 = 1.0;
/// Default nucleus mass (1 = off).
pub const DEFAULT_TOP_P: f32 = 1.0;
/// Default min-p, relative to the best token.
pub const DEFAULT_MIN_P: f32 = 0.05;
/// Largest honoured top-k.
pub const MAX_TOP_K: usize = 1024;

/// Replacement for a zero xorshift state (a zero state would stay zero).
const ZERO_STATE: u64 = 0x9e37_79b9_7f4a_7c15;
const OUTPUT_MUL: u64 = 0x2545_f491_4f6c_dd1d;

/// xorshift64* generator used for sampling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// Current state (for checkpointing a generation).
    pub fn state(&self) -> u64 {
        self.state
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        if x == 0 {
            x = ZERO_STATE;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(OUTPUT_MUL)
    }

    /// Uniform in [0, 1): the top 24 bits of the output over 2^24.
    pub fn next_f32(&mut self) -> f32 {
        ((self.next_u64() >> 40) & 0xff_ffff) as f32 / 16_777_216.0
    }
}

/// A seed for runs without `--seed`: varies per run (time, pid), never 0
/// (0 means "unseeded" in the request structures).
pub fn seed_from_time() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let s = nanos ^ ((std::process::id() as u64) << 32);
    if s == 0 {
        ZERO_STATE
    } else {
        s
    }
}

/// Sampling knobs. `top_k == 0` means no top-k cap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerParams {
    pub temperature: f32,
    pub top_k: u32,
    pub top_p: f32,
    pub min_p: f32,
}

impl Default for SamplerParams {
    fn default() -> Self {
        SamplerParams {
            temperature: DEFAULT_TEMPERATURE,
            top_k: 0,
            top_p: DEFAULT_TOP_P,
            min_p: DEFAULT_MIN_P,
        }
    }
}

impl SamplerParams {
    pub fn greedy() -> Self {
        SamplerParams { temperature: 0.0, ..Default::default() }
    }

    /// The sampling the server uses in thinking mode (high or max), whatever
    /// the client asked for (SERVING.md §2): temperature 1, top_p 1,
    /// min_p 0.05, no top_k. The CLI does not apply this (CLI.md §4).
    pub fn thinking_fixed() -> Self {
        SamplerParams::default()
    }

    /// Server rule: fixed sampling when thinking, the request's otherwise.
    pub fn for_mode(self, thinking: bool) -> Self {
        if thinking {
            Self::thinking_fixed()
        } else {
            self
        }
    }

    pub fn is_greedy(&self) -> bool {
        !(self.temperature > 0.0)
    }

    /// The values the algorithm really uses: out-of-range top_p means 1,
    /// negative min_p means 0, top_k is capped to 1024 and the vocabulary.
    fn normalized(&self, n_vocab: usize) -> (f32, usize, f32, f32) {
        let top_p = if self.top_p > 0.0 && self.top_p <= 1.0 { self.top_p } else { 1.0 };
        let min_p = if self.min_p > 0.0 { self.min_p } else { 0.0 };
        let top_k = (self.top_k as usize).min(MAX_TOP_K).min(n_vocab);
        (self.temperature, top_k, top_p, min_p)
    }
}

/// First index holding the largest logit (NaN never wins; 0 if nothing
/// beats -inf).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best as u32
}

/// The tokens a sampling step may pick, in the order the random draw walks
/// them, with their unnormalised weights `exp((logit - max)/T)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidates {
    pub ids: Vec<u32>,
    pub weights: Vec<f32>,
    /// Sum of `weights`, accumulated in order as the draw uses it.
    pub total: f32,
    /// Returned when the draw runs past the end or the weights degenerate.
    pub fallback: u32,
}

enum Plan {
    /// Pick this token without drawing a random number.
    Fixed(u32),
    Draw(Candidates),
}

fn plan(logits: &[f32], p: &SamplerParams) -> Plan {
    let (temperature, top_k, top_p, min_p) = p.normalized(logits.len());
    if !(temperature > 0.0) || logits.is_empty() {
        return Plan::Fixed(argmax(logits));
    }
    if top_k == 0 {
        plan_full_vocab(logits, temperature, top_p, min_p)
    } else {
        plan_top_k(logits, temperature, top_k, top_p, min_p)
    }
}

fn plan_full_vocab(logits: &[f32], temperature: f32, top_p: f32, min_p: f32) -> Plan {
    let mut max_logit = f32::NEG_INFINITY;
    let mut best = 0u32;
    let mut finite = 0usize;
    for (i, &v) in logits.iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        finite += 1;
        if v > max_logit {
            max_logit = v;
            best = i as u32;
        }
    }
    if finite == 0 {
        return Plan::Fixed(argmax(logits));
    }
    // A logit whose scaled distance below the best, x = (v - max) / T, is under ln(min_p) by
    // 0.01 has w = exp(x) < 0.99 min_p: min_p drops it whatever the rounding of the division
    // and of exp. Skipping it before its exp (top_p >= 1) or before the sort (top_p < 1, whose
    // sum still counts it) keeps the candidates, their weights and their order exactly, and a
    // step costs a compare per logit instead of an exp (top_p >= 1: ~0.7 ms of a decode step
    // over a 129K vocabulary) or a sort of the whole vocabulary (top_p < 1: several ms).
    let skip_below = min_p_floor(min_p);

    if top_p >= 1.0 {
        let finite = logits.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (i as u32, v));
        return draw_min_p(finite, max_logit, best, temperature, skip_below, min_p);
    }

    let finite = || logits.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (i as u32, v));
    let sum = finite().map(|(_, v)| ((v - max_logit) / temperature).exp() as f64).sum::<f64>() as f32;
    if !(sum > 0.0) || !sum.is_finite() {
        return Plan::Fixed(best);
    }
    let cand = nucleus_candidates(finite(), max_logit, temperature, skip_below);
    filter_sorted(cand.into_iter(), sum, top_p, min_p, best)
}

/// top_p < 1's candidates among the finite logits `(id, v)` in ascending id order: those whose
/// scaled distance reaches `skip_below` (the others come after every kept token in the sorted
/// order, past min_p's cut), as `(id, weight)` by descending logit, equal logits by ascending id.
fn nucleus_candidates(finite: impl Iterator<Item = (u32, f32)>, max_logit: f32, temperature: f32, skip_below: f32) -> Vec<(u32, f32)> {
    let mut cand: Vec<(u32, f32, f32)> = Vec::new();
    for (i, v) in finite {
        let x = (v - max_logit) / temperature;
        if x >= skip_below {
            cand.push((i, v, x.exp()));
        }
    }
    // Stable: equal logits keep ascending ids.
    cand.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    cand.into_iter().map(|c| (c.0, c.2)).collect()
}

/// ln(min_p) less a margin: a logit whose scaled distance below the best is under it cannot pass
/// min_p (see plan_full_vocab); -inf when min_p filters nothing.
fn min_p_floor(min_p: f32) -> f32 {
    if min_p > 0.0 && min_p <= 1.0 {
        min_p.ln() - 0.01
    } else {
        f32::NEG_INFINITY
    }
}

/// top_p 1: the finite logits `(id, v)` in vocabulary order, min_p relative to the best
/// token's weight (1). Logits under `skip_below` are skipped before their exp.
fn draw_min_p(
    finite: impl Iterator<Item = (u32, f32)>,
    max_logit: f32,
    best: u32,
    temperature: f32,
    skip_below: f32,
    min_p: f32,
) -> Plan {
    let mut c = Candidates { ids: Vec::new(), weights: Vec::new(), total: 0.0, fallback: best };
    for (i, v) in finite {
        let x = (v - max_logit) / temperature;
        if x < skip_below {
            continue;
        }
        let w = x.exp();
        if w < min_p {
            continue;
        }
        c.ids.push(i);
        c.weights.push(w);
        c.total += w;
    }
    if !(c.total > 0.0) || !c.total.is_finite() {
        return Plan::Fixed(best);
    }
    Plan::Draw(c)
}

/// The logits of one step near the largest (a backend's reply to
/// [`crate::Backend::eval_near_max`]): every logit `v` with `(v - max) / temperature >= floor`,
/// by ascending id, where `max` is the largest logit and `best` its first index. All logits
/// were finite. `sum`, when asked for (top_p < 1, [`near_max_wants_sum`]): the softmax
/// normalizer over the whole vocabulary, `sum exp((v - max) / temperature)`, within
/// [`NEAR_SUM_TOL`] of the exact value (any summation order; f64 accumulation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NearMax {
    pub best: u32,
    pub max: f32,
    pub ids: Vec<u32>,
    pub logits: Vec<f32>,
    pub sum: Option<f64>,
}

/// Relative error a backend's [`NearMax::sum`] may have (the GPU's: CUDA's expf, within 2 ulp
/// (2.4e-7), of the host's scaled distance, summed in f64).
pub const NEAR_SUM_TOL: f64 = 1e-6;

/// Most logits a backend returns in one [`NearMax`] set (8 KB from the GPU): a trained model's
/// min_p set at the default sampling is a few to a few hundred tokens; a larger set is refused
/// and the caller reads all logits.
pub const NEAR_MAX_CAP: usize = 1024;

/// The [`NearMax`] set of `logits` (at most `cap` entries, else None; None too when a logit
/// is not finite): what a backend that holds the logits in host memory returns.
pub fn near_max_of(logits: &[f32], temperature: f32, floor: f32, cap: usize, with_sum: bool) -> Option<NearMax> {
    if logits.is_empty() || logits.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let best = argmax(logits);
    let max = logits[best as usize];
    let sum = with_sum.then(|| logits.iter().map(|&v| (((v - max) / temperature) as f64).exp()).sum());
    let mut n = NearMax { best, max, sum, ..Default::default() };
    for (i, &v) in logits.iter().enumerate() {
        if (v - max) / temperature >= floor {
            if n.ids.len() == cap {
                return None;
            }
            n.ids.push(i as u32);
            n.logits.push(v);
        }
    }
    Some(n)
}

/// The `(temperature, floor)` for which a [`NearMax`] set decides a draw exactly as `sample`
/// over the whole vocabulary does: sampling with no top_k and a min_p in (0, 1] (the
/// defaults, and the server's thinking mode) only weighs the logits above min_p's cut; with
/// top_p < 1 the set needs its [`NearMax::sum`] too ([`near_max_wants_sum`]). None for greedy
/// params (the argmax) and for those that need every logit (top_k, min_p 0).
pub fn near_max_cut(p: &SamplerParams, n_vocab: usize) -> Option<(f32, f32)> {
    let (temperature, top_k, _, min_p) = p.normalized(n_vocab);
    if !(temperature > 0.0) || top_k != 0 || !(min_p > 0.0 && min_p <= 1.0) {
        return None;
    }
    // (a little below min_p_floor: the set may hold more than the draw needs, never less,
    // whatever the backend's rounding; draw_min_p applies the exact test)
    Some((temperature, min_p_floor(min_p) - 0.01))
}

/// The `k` for which a backend's top-k set ([`crate::Backend::eval_top_k`], [`top_k_of`])
/// decides a draw exactly as `sample` over the whole vocabulary does: sampling with a top_k
/// below the vocabulary (whatever top_p and min_p; plan_top_k only weighs the k best). None
/// for greedy params and without a top_k.
pub fn top_k_cut(p: &SamplerParams, n_vocab: usize) -> Option<usize> {
    let (temperature, top_k, _, _) = p.normalized(n_vocab);
    (temperature > 0.0 && top_k > 0 && top_k < n_vocab).then_some(top_k)
}

/// The top-k set of `logits` as a backend returns it: the `k` largest logits, equal logits
/// by ascending id, listed by ascending id ([`NearMax`]'s order), with the largest and its
/// first index. None when a logit is not finite (the caller reads all logits).
pub fn top_k_of(logits: &[f32], k: usize) -> Option<NearMax> {
    if logits.is_empty() || logits.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut top = select_top_k(logits, k);
    let (best, max) = top[0];
    top.sort_unstable_by_key(|e| e.0);
    let (ids, logits) = top.into_iter().unzip();
    Some(NearMax { best, max, ids, logits, sum: None })
}

/// `sample` over a backend's top-k set ([`top_k_cut`]`(p)`, every logit finite): the same
/// token and the same random draw as `sample` over the whole vocabulary.
pub fn sample_top_k(set: &NearMax, p: &SamplerParams, rng: &mut Rng) -> u32 {
    let (temperature, _, top_p, min_p) = p.normalized(usize::MAX);
    let mut top: Vec<(u32, f32)> = set.ids.iter().copied().zip(set.logits.iter().copied()).collect();
    if top.is_empty() {
        return set.best;
    }
    // (ids ascending, so a stable sort by descending logit leaves equal logits by ascending id)
    top.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    draw(plan_from_top(&top, temperature, top_p, min_p), rng)
}

/// Whether [`near_max_cut`]`(p)`'s set must come with its [`NearMax::sum`] (top_p < 1: the
/// nucleus is a share of the whole vocabulary's mass).
pub fn near_max_wants_sum(p: &SamplerParams) -> bool {
    p.normalized(usize::MAX).2 < 1.0
}

/// `sample` over the logits of `near`, which a backend gathered with [`near_max_cut`]`(p)`
/// (and [`near_max_wants_sum`]) from `n_vocab` logits: the same token and the same random
/// draw as `sample` over the whole vocabulary. None (no random number drawn) when top_p < 1
/// and the set cannot decide: no sum, or a min_p or top_p test so close to its threshold that
/// the difference between the backend's sum and `sample`'s could tip it (see
/// [`nucleus_certain`]); then the caller samples over every logit.
pub fn sample_near_max(near: &NearMax, p: &SamplerParams, n_vocab: usize, rng: &mut Rng) -> Option<u32> {
    let (temperature, _, top_p, min_p) = p.normalized(n_vocab);
    let skip_below = min_p_floor(min_p);
    if top_p >= 1.0 {
        let finite = near.ids.iter().copied().zip(near.logits.iter().copied());
        return Some(draw(draw_min_p(finite, near.max, near.best, temperature, skip_below, min_p), rng));
    }
    let sum = near.sum?;
    // plan_full_vocab's candidates, their weights and their order, from the set
    let cand = nucleus_candidates(near.ids.iter().copied().zip(near.logits.iter().copied()), near.max, temperature, skip_below);
    if !nucleus_certain(cand.iter().map(|c| c.1), sum, n_vocab, top_p, min_p) {
        return None;
    }
    Some(draw(filter_sorted(cand.into_iter(), sum as f32, top_p, min_p, near.best), rng))
}

/// Whether filter_sorted over the sorted candidate weights `ws` takes the same steps for every
/// normalizer in `sum`'s error interval: the interval holds plan_full_vocab's sum of the `n`
/// weights (f64: n 2^-53; the weights' own rounding and the final f32 one, < 3e-7) and the
/// value `sum` rounds to, given a backend's [`NEAR_SUM_TOL`]. The min_p test compares w / s
/// with (w0 / s) min_p, which no s in the interval tips unless w is within a few roundings of
/// w0 min_p; the top_p test compares total / s with top_p. False when any test is that close:
/// the caller reads every logit.
pub fn nucleus_certain(ws: impl Iterator<Item = f32>, sum: f64, n: usize, top_p: f32, min_p: f32) -> bool {
    if !(sum > 0.0) || !sum.is_finite() {
        return false;
    }
    let eps = n as f64 * (-53f64).exp2() + NEAR_SUM_TOL + 3e-7;
    let (lo, hi) = (sum * (1.0 - eps), sum * (1.0 + eps));
    // (ulp margins of the f32 divisions and products in filter_sorted's tests)
    const R: f64 = 1e-6;
    let (top_p, min_p) = (top_p as f64, min_p as f64);
    let (mut total, mut w0) = (0.0f32, 0.0f64);
    for (i, w) in ws.enumerate() {
        let wd = w as f64;
        if i == 0 {
            w0 = wd;
        } else {
            let cut = w0 * min_p;
            if (wd - cut).abs() <= R * cut {
                return false;
            }
            if wd < cut {
                return true;
            }
        }
        total += w;
        let t = total as f64;
        if t / hi * (1.0 - R) >= top_p {
            return true;
        }
        if !(t / lo * (1.0 + R) < top_p) {
            return false;
        }
    }
    true
}

/// The `k` largest finite logits `(id, v)`, by descending logit, equal logits by ascending id.
fn select_top_k(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    // Insertion into a descending list of at most k: a later equal logit
    // never displaces an earlier one.
    let mut top: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    for (i, &v) in logits.iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        if top.len() == k && v <= top[k - 1].1 {
            continue;
        }
        let pos = top.partition_point(|e| e.1 >= v);
        top.insert(pos, (i as u32, v));
        top.truncate(k);
    }
    top
}

fn plan_top_k(logits: &[f32], temperature: f32, k: usize, top_p: f32, min_p: f32) -> Plan {
    let top = select_top_k(logits, k);
    if top.is_empty() {
        return Plan::Fixed(argmax(logits));
    }
    plan_from_top(&top, temperature, top_p, min_p)
}

/// plan_top_k's filter over its nonempty selection `top` (sorted as select_top_k sorts it).
fn plan_from_top(top: &[(u32, f32)], temperature: f32, top_p: f32, min_p: f32) -> Plan {
    let max_logit = top[0].1;
    let mut weights = Vec::with_capacity(top.len());
    let mut sum = 0.0f32;
    for &(_, v) in top {
        let w = ((v - max_logit) / temperature).exp();
        weights.push(w);
        sum += w;
    }
    if !(sum > 0.0) || !sum.is_finite() {
        return Plan::Fixed(top[0].0);
    }
    let first = top[0].0;
    filter_sorted(top.iter().map(|e| e.0).zip(weights), sum, top_p, min_p, first)
}

/// min_p / top_p filter over candidates sorted by logit, descending.
fn filter_sorted(
    sorted: impl Iterator<Item = (u32, f32)>,
    sum: f32,
    top_p: f32,
    min_p: f32,
    degenerate: u32,
) -> Plan {
    let mut c = Candidates { ids: Vec::new(), weights: Vec::new(), total: 0.0, fallback: degenerate };
    let mut min_prob = 0.0f32;
    for (i, (id, w)) in sorted.enumerate() {
        let p = w / sum;
        if i == 0 {
            min_prob = p * min_p;
        } else if p < min_prob {
            break;
        }
        c.total += w;
        c.ids.push(id);
        c.weights.push(w);
        if c.total / sum >= top_p {
            break;
        }
    }
    match c.ids.last() {
        None => Plan::Fixed(degenerate),
        Some(&last) => {
            c.fallback = last;
            Plan::Draw(c)
        }
    }
}

/// The candidate set a sampling step draws from, or `None` when the step is
/// deterministic (greedy, no finite logit, degenerate weights).
pub fn candidates(logits: &[f32], params: &SamplerParams) -> Option<Candidates> {
    match plan(logits, params) {
        Plan::Fixed(_) => None,
        Plan::Draw(c) => Some(c),
    }
}

/// Pick the next token. Consumes exactly one random number when the step
/// draws, none when it is deterministic (as ds4 does).
pub fn sample(logits: &[f32], params: &SamplerParams, rng: &mut Rng) -> u32 {
    draw(plan(logits, params), rng)
}

fn draw(plan: Plan, rng: &mut Rng) -> u32 {
    match plan {
        Plan::Fixed(id) => id,
        Plan::Draw(c) => {
            let mut r = rng.next_f32() * c.total;
            for (&id, &w) in c.ids.iter().zip(&c.weights) {
                r -= w;
                if r <= 0.0 {
                    return id;
                }
            }
            c.fallback
        }
    }
}

/// A sampler with its own RNG stream.
#[derive(Clone, Debug)]
pub struct Sampler {
    pub params: SamplerParams,
    pub rng: Rng,
}

impl Sampler {
    pub fn new(params: SamplerParams, seed: u64) -> Self {
        Sampler { params, rng: Rng::new(seed) }
    }

    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        sample(logits, &self.params, &mut self.rng)
    }
}

/// One scored token: its logit and its log-probability under the full
/// vocabulary softmax (temperature 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenScore {
    pub id: u32,
    pub logit: f32,
    pub logprob: f32,
}

/// log Σ exp(logit) over the finite logits, in f64; `None` if none is finite.
pub fn log_sum_exp(logits: &[f32]) -> Option<f64> {
    let max = logits.iter().copied().filter(|v| v.is_finite()).fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return None;
    }
    let sum: f64 = logits
        .iter()
        .filter(|v| v.is_finite())
        .map(|&v| (v as f64 - max as f64).exp())
        .sum();
    Some(max as f64 + sum.ln())
}

/// The `k` best finite logits (descending, lower id first on ties) with
/// their log-probabilities. Fewer than `k` if fewer logits are finite.
pub fn top_logprobs(logits: &[f32], k: usize) -> Vec<TokenScore> {
    let Some(lse) = log_sum_exp(logits) else { return Vec::new() };
    let k = k.min(logits.len());
    if k == 0 {
        return Vec::new();
    }
    let mut top: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    for (i, &v) in logits.iter().enumerate() {
        if !v.is_finite() || (top.len() == k && v <= top[k - 1].1) {
            continue;
        }
        let pos = top.partition_point(|e| e.1 >= v);
        top.insert(pos, (i as u32, v));
        top.truncate(k);
    }
    top.into_iter()
        .map(|(id, logit)| TokenScore { id, logit, logprob: (logit as f64 - lse) as f32 })
        .collect()
}

/// Log-probability of one token (`None` if out of range or nothing finite).
pub fn token_logprob(logits: &[f32], id: u32) -> Option<TokenScore> {
    let logit = *logits.get(id as usize)?;
    let lse = log_sum_exp(logits)?;
    let logprob = if logit.is_finite() { (logit as f64 - lse) as f32 } else { f32::NEG_INFINITY };
    Some(TokenScore { id, logit, logprob })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(t: f32, k: u32, p: f32, m: f32) -> SamplerParams {
        SamplerParams { temperature: t, top_k: k, top_p: p, min_p: m }
    }

    /// Independent statement of the rules in f64 (no shared code with the
    /// implementation): the set of tokens that may be sampled.
    fn reference_set(logits: &[f32], p: &SamplerParams) -> Vec<u32> {
        let mut idx: Vec<usize> = (0..logits.len()).filter(|&i| logits[i].is_finite()).collect();
        idx.sort_by(|&a, &b| logits[b].partial_cmp(&logits[a]).unwrap().then(a.cmp(&b)));
        if p.top_k > 0 {
            idx.truncate(p.top_k as usize);
        }
        let t = p.temperature as f64;
        let max = logits[idx[0]] as f64;
        let w: Vec<f64> = idx.iter().map(|&i| ((logits[i] as f64 - max) / t).exp()).collect();
        let sum: f64 = w.iter().sum();
        let mut keep = Vec::new();
        let mut mass = 0.0;
        for (j, &i) in idx.iter().enumerate() {
            if j > 0 && w[j] / sum < (w[0] / sum) * p.min_p as f64 {
                break;
            }
            keep.push(i as u32);
            mass += w[j] / sum;
            if mass >= p.top_p as f64 {
                break;
            }
        }
        keep.sort();
        keep
    }

    /// SERVING.md §9 with top_k = 0 transcribed in f32 over the whole vocabulary (every
    /// weight computed, every finite logit sorted): what `candidates` must equal exactly,
    /// weights and order included, whatever it skips.
    fn full_vocab_reference(logits: &[f32], t: f32, top_p: f32, min_p: f32) -> Option<Candidates> {
        let max = logits.iter().copied().filter(|v| v.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        let mut all: Vec<(u32, f32, f32)> =
            (0..logits.len()).filter(|&i| logits[i].is_finite()).map(|i| (i as u32, logits[i], ((logits[i] - max) / t).exp())).collect();
        if top_p >= 1.0 {
            let kept: Vec<_> = all.into_iter().filter(|e| e.2 >= min_p).collect();
            let mut total = 0.0f32;
            for e in &kept {
                total += e.2;
            }
            return Some(Candidates { ids: kept.iter().map(|e| e.0).collect(), weights: kept.iter().map(|e| e.2).collect(), total, fallback: 0 });
        }
        // (f64, then f32: the normalizer of top_p < 1, see the module's note)
        let mut sum = 0.0f64;
        for e in &all {
            sum += e.2 as f64;
        }
        let sum = sum as f32;
        all.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        let mut c = Candidates { ids: Vec::new(), weights: Vec::new(), total: 0.0, fallback: 0 };
        let min_prob = all[0].2 / sum * min_p;
        for (i, &(id, _, w)) in all.iter().enumerate() {
            if i > 0 && w / sum < min_prob {
                break;
            }
            c.total += w;
            c.ids.push(id);
            c.weights.push(w);
            if c.total / sum >= top_p {
                break;
            }
        }
        Some(c)
    }

    /// `n` random logits: peaked as a trained model's (a cubed uniform spread over 25, every
    /// 97th raised by 3) or flat (uniform over `flat`).
    fn test_logits(g: &mut Rng, n: usize, peaked: bool, flat: f32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let u = g.next_f32();
                if peaked {
                    (u * u * u) * 25.0 + if i % 97 == 0 { 3.0 } else { 0.0 }
                } else {
                    u * flat
                }
            })
            .collect()
    }

    /// near_max_of's set checked member by member against the contract (the best is the first
    /// index of the largest logit; ids ascending; a logit is in exactly when its scaled
    /// distance reaches the floor); refused past the cap and for a non-finite logit.
    #[test]
    fn near_max_of_follows_the_contract() {
        let mut g = Rng::new(9);
        let mut logits: Vec<f32> = (0..2000).map(|_| g.next_f32() * 8.0).collect();
        logits[1500] = 9.0;
        logits[1700] = 9.0;
        let got = near_max_of(&logits, 1.0, -3.0, usize::MAX, false).unwrap();
        assert_eq!((got.best, got.max), (1500, 9.0));
        assert!(got.ids.windows(2).all(|w| w[0] < w[1]));
        let members: std::collections::HashSet<u32> = got.ids.iter().copied().collect();
        for (i, &v) in logits.iter().enumerate() {
            assert_eq!(members.contains(&(i as u32)), v - 9.0 >= -3.0, "logit {i} = {v}");
        }
        assert!(got.ids.iter().zip(&got.logits).all(|(&i, &v)| logits[i as usize] == v));
        let n = got.ids.len();
        assert!(n > 10 && n < 2000);
        assert_eq!(near_max_of(&logits, 1.0, -3.0, n, false), Some(got));
        assert_eq!(near_max_of(&logits, 1.0, -3.0, n - 1, false), None);
        let mut bad = logits.clone();
        bad[7] = f32::NAN;
        assert_eq!(near_max_of(&bad, 1.0, -3.0, usize::MAX, false), None);
        bad[7] = f32::INFINITY;
        assert_eq!(near_max_of(&bad, 1.0, -3.0, usize::MAX, false), None);
    }

    /// sample_near_max over a backend's set draws what `sample` over the whole vocabulary
    /// draws (token and random stream), on peaked logits (a trained model's) and flat ones;
    /// a larger set (a backend rounding the other way) changes nothing, and the params that
    /// need every logit get no cut.
    #[test]
    fn near_max_set_decides_as_the_whole_vocabulary() {
        let mut g = Rng::new(3);
        for case in 0..40 {
            let peaked = case % 2 == 0;
            let logits = test_logits(&mut g, 3000, peaked, 2.0);
            for (t, m) in [(1.0f32, 0.05f32), (0.7, 0.05), (0.3, 0.2), (1.5, 1.0), (1.0, 0.001)] {
                let p = params(t, 0, 1.0, m);
                let (tt, floor) = near_max_cut(&p, logits.len()).expect("min_p sampling has a cut");
                assert_eq!(tt, t);
                for extra in [0.0f32, 1.0] {
                    let near = near_max_of(&logits, tt, floor - extra, usize::MAX, false).unwrap();
                    assert!(near.ids.len() < logits.len() || !peaked, "case {case}: the cut kept everything");
                    let (mut a, mut b) = (Rng::new(case), Rng::new(case));
                    for _ in 0..4 {
                        assert_eq!(Some(sample(&logits, &p, &mut a)), sample_near_max(&near, &p, logits.len(), &mut b), "case {case} t {t} min_p {m}");
                    }
                    assert_eq!(a, b);
                }
            }
        }
        for p in [params(0.0, 0, 1.0, 0.05), params(1.0, 40, 1.0, 0.05), params(1.0, 40, 0.9, 0.05), params(1.0, 0, 1.0, 0.0), params(1.0, 0, 0.9, 0.0)] {
            assert_eq!(near_max_cut(&p, 3000), None, "{p:?}");
        }
    }

    /// top_p < 1 through a backend's set and its vocabulary sum: whenever sample_near_max
    /// decides, it draws what `sample` over the whole vocabulary draws (token and random
    /// stream), also when the backend's sum is off by up to NEAR_SUM_TOL either way; it
    /// declines (drawing nothing) without a sum, and it decides in most steps. Peaked and
    /// flat logits, at the real vocabulary's size and smaller, with weights planted at
    /// min_p's cut.
    #[test]
    fn near_max_set_with_sum_decides_top_p_as_the_whole_vocabulary() {
        let mut g = Rng::new(11);
        let (mut decided, mut steps) = (0usize, 0usize);
        for case in 0..60 {
            let n = if case % 10 == 0 { 129_280 } else { 3000 + (g.next_u64() % 5000) as usize };
            let peaked = case % 3 != 0;
            let mut logits = test_logits(&mut g, n, peaked, 3.0);
            let (t, top_p, m) = ([1.0f32, 0.7, 0.3, 1.5][case % 4], [0.9f32, 0.95, 0.5, 0.99, 0.2][case % 5], [0.05f32, 0.01, 0.2][case % 3]);
            // (a weight on min_p's cut in every fourth case: those steps decline when they reach it)
            if case % 4 == 0 {
                let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                logits[(case * 7919) % n] = max + t * m.ln();
            }
            let p = params(t, 0, top_p, m);
            assert!(near_max_wants_sum(&p));
            let (tt, floor) = near_max_cut(&p, n).expect("min_p bounds the set");
            let near = near_max_of(&logits, tt, floor, usize::MAX, true).unwrap();
            let exact = near.sum.unwrap();
            let mut r = Rng::new(case as u64);
            assert_eq!(sample_near_max(&NearMax { sum: None, ..near.clone() }, &p, n, &mut r), None);
            assert_eq!(r, Rng::new(case as u64), "a declined set draws nothing");
            for off in [0.0, NEAR_SUM_TOL, -NEAR_SUM_TOL] {
                let near = NearMax { sum: Some(exact * (1.0 + off)), ..near.clone() };
                let (mut a, mut b) = (Rng::new(case as u64), Rng::new(case as u64));
                for _ in 0..4 {
                    steps += 1;
                    let want = sample(&logits, &p, &mut a);
                    match sample_near_max(&near, &p, n, &mut b) {
                        Some(got) => {
                            decided += 1;
                            assert_eq!(got, want, "case {case} t {t} top_p {top_p} min_p {m} sum off {off}");
                        }
                        None => b = a.clone(),
                    }
                    assert_eq!(a, b);
                }
            }
        }
        assert!(decided * 10 >= steps * 8, "sample_near_max decided {decided} of {steps} steps");
    }

    /// A backend's top-k set decides as the whole vocabulary: sample_top_k over top_k_of's set
    /// draws what `sample` draws (token and random stream) for top_k with and without top_p /
    /// min_p, on logits with many exact ties across the k-th place (equal logits by ascending
    /// id) and with -0 against +0; the set holds the k best by the independent rule (sort by
    /// value, then id); a non-finite logit refuses the set.
    #[test]
    fn top_k_set_decides_as_the_whole_vocabulary() {
        let mut g = Rng::new(5);
        for case in 0..80 {
            let n = 1100 + (g.next_u64() % 3000) as usize;
            // (coarse values: many ties, the k-th place among them)
            let mut logits: Vec<f32> = (0..n).map(|_| ((g.next_f32() * 40.0).floor() - 20.0) * if case % 2 == 0 { 0.25 } else { 1.0 }).collect();
            if case % 5 == 0 {
                for (i, v) in logits.iter_mut().enumerate().take(n / 3) {
                    *v = if i % 2 == 0 { -0.0 } else { 0.0 };
                }
            }
            let k = [1usize, 2, 40, 64, 1024, 7][case % 6];
            let set = top_k_of(&logits, k).unwrap();
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by(|&a, &b| logits[b as usize].partial_cmp(&logits[a as usize]).unwrap().then(a.cmp(&b)));
            let mut want: Vec<u32> = order[..k.min(n)].to_vec();
            want.sort();
            assert_eq!(set.ids, want, "case {case} k {k}");
            assert!(set.ids.iter().zip(&set.logits).all(|(&i, &v)| logits[i as usize].to_bits() == v.to_bits()));
            for (t, top_p, m) in [(1.0f32, 1.0f32, 0.0f32), (0.7, 0.9, 0.05), (2.0, 0.5, 0.0), (1.0, 1.0, 0.3)] {
                let p = params(t, k as u32, top_p, m);
                assert_eq!(top_k_cut(&p, n), Some(k));
                let (mut a, mut b) = (Rng::new(case as u64), Rng::new(case as u64));
                for _ in 0..4 {
                    assert_eq!(sample(&logits, &p, &mut a), sample_top_k(&set, &p, &mut b), "case {case} k {k} t {t} top_p {top_p} min_p {m}");
                }
                assert_eq!(a, b);
            }
        }
        assert_eq!(top_k_cut(&params(0.0, 40, 1.0, 0.05), 3000), None);
        assert_eq!(top_k_cut(&params(1.0, 0, 0.9, 0.05), 3000), None);
        assert_eq!(top_k_cut(&params(1.0, 40, 1.0, 0.05), 40), None, "k not below the vocabulary");
        assert_eq!(top_k_of(&[1.0, f32::NAN, 2.0], 1), None);
    }

    /// nucleus_certain declines exactly around its thresholds: a nucleus whose mass lands on
    /// top_p, or a weight on min_p's cut, cannot be decided from an approximate sum; clear
    /// cases are.
    #[test]
    fn nucleus_certain_declines_near_its_thresholds() {
        // weights 1, .5, .25 with sum 2 (plus a tail): shares .5, .75, .875
        let ws = [1.0f32, 0.5, 0.25];
        assert!(nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.6, 0.0));
        assert!(nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.8, 0.0));
        assert!(!nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.75, 0.0));
        assert!(!nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.750001, 0.0));
        assert!(nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.75003, 0.0));
        // a weight on min_p's cut (.5 of the best)
        assert!(!nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.99, 0.5));
        assert!(nucleus_certain(ws.iter().copied(), 2.0, 1000, 0.99, 0.45));
        // no usable sum
        assert!(!nucleus_certain(ws.iter().copied(), f64::NAN, 1000, 0.9, 0.0));
        assert!(!nucleus_certain(ws.iter().copied(), 0.0, 1000, 0.9, 0.0));
    }

    /// The skipped logits change nothing: candidates equal the full computation bit for bit,
    /// on vocabularies of the real size (flat and peaked logits) with logits planted on both
    /// sides of min_p's cut, where a skip that reached a kept token would show.
    #[test]
    fn skipping_below_min_p_changes_no_candidate() {
        let mut rng = Rng::new(2026);
        let mut skipped_some = false;
        for case in 0..24 {
            let n = if case % 4 == 0 { 129_280 } else { 2_000 + (rng.next_u64() % 20_000) as usize };
            let spread = [0.5f32, 3.0, 12.0][case % 3];
            let mut logits: Vec<f32> = (0..n).map(|_| (rng.next_f32() * 2.0 - 1.0) * spread).collect();
            // (top_p by case / 4: the 129,280-logit cases take every value)
            let (t, top_p, min_p) = ([0.6f32, 1.0, 1.7][case % 3], [1.0f32, 0.9, 0.5, 0.99][(case / 4) % 4], [0.05f32, 0.01, 0.3, 1.0][(case / 3) % 4]);
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            // logits whose weight sits at min_p, a hair above and below, and at the skip margin
            for (k, d) in [0.0f32, 1e-6, -1e-6, -0.01, -0.0101, 0.01].iter().enumerate() {
                logits[(k * 7919 + case) % n] = max + t * (min_p.ln() + d);
            }
            logits[(case * 31) % n] = f32::NAN;
            let want = full_vocab_reference(&logits, t, top_p, min_p).unwrap();
            let got = candidates(&logits, &params(t, 0, top_p, min_p));
            match got {
                Some(c) => {
                    assert_eq!(c.ids, want.ids, "case {case}");
                    assert_eq!(bits(&c.weights), bits(&want.weights), "case {case}");
                    assert_eq!(c.total.to_bits(), want.total.to_bits(), "case {case}");
                    skipped_some |= c.ids.len() < n / 2;
                }
                // a single survivor (min_p = 1) is a fixed pick
                None => assert!(want.ids.len() <= 1 || !(want.total > 0.0), "case {case}: {} candidates expected", want.ids.len()),
            }
        }
        assert!(skipped_some, "no case pruned most of the vocabulary");
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    fn set_of(logits: &[f32], p: &SamplerParams) -> Vec<u32> {
        let mut ids = candidates(logits, p).expect("draws").ids;
        ids.sort();
        ids
    }

    #[test]
    fn rng_matches_xorshift64_star() {
        // Reference sequence for seed 1: state x ^= x>>12, x ^= x<<25,
        // x ^= x>>27, output x * 0x2545f4914f6cdd1d, all mod 2^64 (computed by
        // hand-independent u128 arithmetic below).
        let mut r = Rng::new(1);
        let mut x: u128 = 1;
        let m: u128 = 1 << 64;
        for _ in 0..100 {
            x ^= x >> 12;
            x = (x ^ (x << 25)) % m;
            x ^= x >> 27;
            let out = (x * 0x2545f4914f6cdd1d) % m;
            assert_eq!(r.next_u64() as u128, out);
        }
        // The first output of seed 1 (well-known xorshift64* value).
        assert_eq!(Rng::new(1).next_u64(), 0x47e4ce4b896cdd1d);
    }

    #[test]
    fn rng_zero_seed_uses_golden_ratio_state() {
        let mut a = Rng::new(0);
        let mut b = Rng::new(0x9e3779b97f4a7c15);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn rng_f32_is_top_24_bits() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..1000 {
            let f = a.next_f32();
            let u = b.next_u64();
            assert_eq!(f, (u >> 40) as f32 / 16777216.0);
            assert!((0.0..1.0).contains(&f));
        }
    }

    #[test]
    fn temperature_zero_is_argmax() {
        let logits = [0.5, 3.0, -1.0, 3.0, 2.9, f32::NAN];
        let mut rng = Rng::new(7);
        for t in [0.0, -1.0] {
            for k in [0, 2] {
                assert_eq!(sample(&logits, &params(t, k, 0.5, 0.3), &mut rng), 1);
            }
        }
        // Greedy never consumes randomness.
        assert_eq!(rng, Rng::new(7));
        assert_eq!(argmax(&[f32::NAN, -2.0, f32::NEG_INFINITY]), 1);
        assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), 0);
    }

    #[test]
    fn seed_reproducibility_and_sensitivity() {
        let logits: Vec<f32> = (0..500).map(|i| ((i * 7919) % 101) as f32 / 20.0).collect();
        for p in [params(1.0, 0, 1.0, 0.05), params(0.8, 0, 0.9, 0.0), params(1.3, 40, 0.95, 0.01)] {
            let run = |seed| {
                let mut s = Sampler::new(p, seed);
                (0..200).map(|_| s.sample(&logits)).collect::<Vec<_>>()
            };
            assert_eq!(run(1234), run(1234));
            assert_ne!(run(1234), run(1235));
        }
    }

    #[test]
    fn min_p_full_vocab_exact_set() {
        // Weights relative to best at T=1: exp(0)=1, exp(-1)=.368, exp(-2)=.135,
        // exp(-3)=.0498, exp(-5)=.0067.
        let logits = [5.0, 4.0, 3.0, 2.0, 0.0, f32::NEG_INFINITY];
        assert_eq!(set_of(&logits, &params(1.0, 0, 1.0, 0.05)), vec![0, 1, 2]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 1.0, 0.04)), vec![0, 1, 2, 3]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 1.0, 0.0)), vec![0, 1, 2, 3, 4]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 1.0, 0.5)), vec![0]);
        // Temperature 2 flattens: weights 1, .61, .37, .22, .08.
        assert_eq!(set_of(&logits, &params(2.0, 0, 1.0, 0.2)), vec![0, 1, 2, 3]);
        assert_eq!(set_of(&logits, &params(2.0, 0, 1.0, 0.25)), vec![0, 1, 2]);
        // The full-vocab path draws in vocabulary order.
        let c = candidates(&[1.0, 3.0, 2.0], &params(1.0, 0, 1.0, 0.0)).unwrap();
        assert_eq!(c.ids, vec![0, 1, 2]);
    }

    #[test]
    fn top_p_exact_set() {
        // Probabilities (T=1) of logits ln(.5), ln(.3), ln(.15), ln(.05).
        let logits: Vec<f32> = [0.5f32, 0.3, 0.15, 0.05].iter().map(|p| p.ln()).collect();
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.5, 0.0)), vec![0]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.7, 0.0)), vec![0, 1]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.85, 0.0)), vec![0, 1, 2]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.9, 0.0)), vec![0, 1, 2]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.99, 0.0)), vec![0, 1, 2, 3]);
        // min_p 0.2 of the best (.5) cuts below .1 before top_p does.
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.99, 0.2)), vec![0, 1, 2]);
        assert_eq!(set_of(&logits, &params(1.0, 0, 0.99, 0.61)), vec![0]);
        // Sorted path draws best first.
        let c = candidates(&[0.0, 2.0, 1.0], &params(1.0, 0, 0.99, 0.0)).unwrap();
        assert_eq!(c.ids, vec![1, 2, 0]);
    }

    #[test]
    fn top_k_exact_set_and_ties() {
        let logits = [1.0, 4.0, 2.0, 4.0, 3.0, 0.0, f32::NAN, f32::INFINITY];
        let c = candidates(&logits, &params(1.0, 3, 1.0, 0.0)).unwrap();
        // Equal logits keep the lower id first; ±inf/NaN are never candidates.
        assert_eq!(c.ids, vec![1, 3, 4]);
        assert_eq!(set_of(&logits, &params(1.0, 1, 1.0, 0.0)), vec![1]);
        assert_eq!(set_of(&logits, &params(1.0, 2, 1.0, 0.0)), vec![1, 3]);
        // k larger than the vocabulary: every finite token.
        assert_eq!(set_of(&logits, &params(1.0, 5000, 1.0, 0.0)), vec![0, 1, 2, 3, 4, 5]);
        // top_p inside the renormalised k-set: k=3 probs ∝ 1, 1, e^-1 →
        // .42, .42, .16; top_p .8 stops after two.
        assert_eq!(set_of(&logits, &params(1.0, 3, 0.8, 0.0)), vec![1, 3]);
        assert_eq!(set_of(&logits, &params(1.0, 3, 0.9, 0.0)), vec![1, 3, 4]);
        // min_p .5: e^-1 = .37 < .5 of best.
        assert_eq!(set_of(&logits, &params(1.0, 3, 1.0, 0.5)), vec![1, 3]);
    }

    #[test]
    fn sets_match_independent_reference_on_random_logits() {
        let mut rng = Rng::new(99);
        for case in 0..300 {
            let n = 2 + (rng.next_u64() % 300) as usize;
            let logits: Vec<f32> =
                (0..n).map(|_| (rng.next_f32() * 20.0 - 10.0) * if case % 3 == 0 { 0.3 } else { 1.0 }).collect();
            let p = params(
                0.2 + rng.next_f32() * 2.0,
                [0, 0, 1, 5, 50][(rng.next_u64() % 5) as usize],
                [1.0, 0.3, 0.7, 0.95][(rng.next_u64() % 4) as usize],
                [0.0, 0.01, 0.05, 0.3][(rng.next_u64() % 4) as usize],
            );
            let want = reference_set(&logits, &p);
            let got = set_of(&logits, &p);
            // Rounding can only disagree at a boundary within f32 noise;
            // the random draws above make exact boundaries vanishingly rare.
            assert_eq!(got, want, "case {case} params {p:?}");
        }
    }

    #[test]
    fn sampling_frequencies_follow_weights() {
        let logits: Vec<f32> = [0.5f32, 0.3, 0.2].iter().map(|p| p.ln()).collect();
        let mut s = Sampler::new(params(1.0, 0, 1.0, 0.0), 5);
        let mut counts = [0usize; 3];
        let n = 200_000;
        for _ in 0..n {
            counts[s.sample(&logits) as usize] += 1;
        }
        for (c, p) in counts.iter().zip([0.5, 0.3, 0.2]) {
            let f = *c as f64 / n as f64;
            // 5 sigma of a binomial at n = 200k is about 0.0056.
            assert!((f - p).abs() < 0.006, "{counts:?}");
        }
    }

    #[test]
    fn draw_walks_candidates_in_order() {
        // With equal weights the draw r = u * total selects index floor(u*n)
        // (up to ties at exact boundaries): check against the RNG directly.
        let logits = [1.0f32; 4];
        let p = params(1.0, 0, 1.0, 0.0);
        let mut a = Rng::new(2024);
        let mut b = Rng::new(2024);
        for _ in 0..1000 {
            let tok = sample(&logits, &p, &mut a);
            let u = b.next_f32();
            let mut r = u * 4.0;
            let mut want = 3;
            for i in 0..4 {
                r -= 1.0;
                if r <= 0.0 {
                    want = i;
                    break;
                }
            }
            assert_eq!(tok, want);
        }
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut rng = Rng::new(1);
        assert_eq!(sample(&[], &SamplerParams::default(), &mut rng), 0);
        assert_eq!(sample(&[f32::NAN; 4], &SamplerParams::default(), &mut rng), 0);
        assert_eq!(sample(&[f32::NEG_INFINITY, 2.0], &params(1.0, 3, 0.5, 0.5), &mut rng), 1);
        // Out-of-range knobs are normalised, not rejected.
        let l = [1.0, 2.0, 3.0];
        assert_eq!(set_of(&l, &params(1.0, 0, 0.0, -1.0)), vec![0, 1, 2]);
        assert_eq!(set_of(&l, &params(1.0, 0, 7.0, 0.0)), vec![0, 1, 2]);
    }

    #[test]
    fn thinking_defaults() {
        let client = params(0.2, 10, 0.5, 0.0);
        assert_eq!(client.for_mode(true), params(1.0, 0, 1.0, 0.05));
        assert_eq!(client.for_mode(false), client);
        assert_eq!(SamplerParams::default(), params(1.0, 0, 1.0, 0.05));
        assert!(SamplerParams::greedy().is_greedy());
    }

    #[test]
    fn logprobs_against_f64_softmax() {
        let logits = [2.0f32, -1.0, 0.5, 2.0, f32::NEG_INFINITY, 7.25];
        let z: f64 = logits.iter().filter(|v| v.is_finite()).map(|&v| (v as f64).exp()).sum();
        let top = top_logprobs(&logits, 3);
        assert_eq!(top.iter().map(|t| t.id).collect::<Vec<_>>(), vec![5, 0, 3]);
        for t in &top {
            let want = ((logits[t.id as usize] as f64).exp() / z).ln();
            assert!((t.logprob as f64 - want).abs() < 1e-6);
        }
        assert_eq!(top_logprobs(&logits, 100).len(), 5);
        let one = token_logprob(&logits, 4).unwrap();
        assert_eq!(one.logprob, f32::NEG_INFINITY);
        assert!(token_logprob(&logits, 6).is_none());
        assert!(top_logprobs(&[f32::NAN], 3).is_empty());
    }
}
