//! What the CLI needs from an inference session, and the generation loop
//! shared by one-shot and interactive mode.

use anyhow::Result;
use ds4_engine::mtp::SpecStats;
use ds4_engine::sampling::Sampler;
use std::sync::atomic::{AtomicBool, Ordering};

/// A live KV session. Implemented by the engine session; tests use a
/// recording fake.
pub trait LiveSession {
    /// Context size (positions).
    fn ctx(&self) -> usize;
    /// Tokens held in the live KV, in order.
    fn tokens(&self) -> &[u32];
    /// Bring the session to exactly `prompt`, reusing the longest valid
    /// prefix of the live tokens and prefilling the rest. `progress(done,
    /// total)` reports the prefilled part and may return false to cancel.
    /// Returns the number of reused tokens.
    fn sync(&mut self, prompt: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize>;
    /// Append one token (one decode step).
    fn eval(&mut self, token: u32) -> Result<()>;
    /// Next-token logits after the last processed token.
    fn logits(&self) -> &[f32];
    /// Forget the KV state (the next sync prefills from zero).
    fn invalidate(&mut self);
    /// Evaluate `tokens` after the live ones and return the logits of every
    /// one of them (`n × vocab`, token-major) — the `--dump-logits` path.
    fn extend_all(&mut self, tokens: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>>;
    /// One generation step: append `token` and, when the session speculates (greedy MTP
    /// decoding, CLI.md §4.1), the drafted tokens the model agrees with, at most `max` tokens
    /// in all. Returns the appended run (`token` first).
    fn eval_run(&mut self, token: u32, max: usize) -> Result<Vec<u32>> {
        let _ = max;
        self.eval(token)?;
        Ok(vec![token])
    }
    /// Speculative-decoding counters since the session was created (None: not speculating).
    fn spec_stats(&self) -> Option<SpecStats> {
        None
    }
    /// Generation with `sampler`: evaluate `first`, then while fewer than `max` tokens were
    /// evaluated and `go` accepts the token sampled from the newest logits, evaluate that.
    /// Returns the evaluated tokens (`first` included); a refused token is not evaluated. The
    /// engine's form chooses where the logits are (on the GPU: the argmax or the min_p set
    /// there, a few bytes back per token instead of the vocabulary's logits).
    fn sample_run(&mut self, first: u32, max: usize, sampler: &mut Sampler, go: &mut dyn FnMut(u32) -> bool) -> Result<Vec<u32>> {
        let mut run = Vec::new();
        let mut tok = first;
        loop {
            self.eval(tok)?;
            run.push(tok);
            if run.len() >= max {
                return Ok(run);
            }
            let next = sampler.sample(self.logits());
            if !go(next) {
                return Ok(run);
            }
            tok = next;
        }
    }
}

/// The state of an interactive chat whose session could not be created:
/// every turn fails with a hint until `/ctx N` succeeds.
pub struct NoSession;

impl LiveSession for NoSession {
    fn ctx(&self) -> usize {
        0
    }
    fn tokens(&self) -> &[u32] {
        &[]
    }
    fn sync(&mut self, _: &[u32], _: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
        anyhow::bail!("no active session (create one with /ctx N)")
    }
    fn eval(&mut self, _: u32) -> Result<()> {
        anyhow::bail!("no active session")
    }
    fn logits(&self) -> &[f32] {
        &[]
    }
    fn invalidate(&mut self) {}
    fn extend_all(&mut self, _: &[u32], _: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>> {
        anyhow::bail!("no active session")
    }
}

/// Tokens that fit: `max_new` capped to `ctx − pos − 1`; none if fewer than
/// two slots are free (CLI.md §4).
pub fn generation_budget(max_new: usize, ctx: usize, pos: usize) -> usize {
    let room = ctx.saturating_sub(pos);
    if room <= 1 {
        0
    } else {
        max_new.min(room - 1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Eos,
    Length,
    Interrupted,
}

impl StopReason {
    /// The name `--trace` records.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Eos => "eos",
            StopReason::Length => "length",
            StopReason::Interrupted => "interrupted",
        }
    }
}

pub struct Generated {
    pub tokens: Vec<u32>,
    pub stop: StopReason,
    pub seconds: f64,
    /// Speculative decoding during this generation (None: not speculating).
    pub spec: Option<SpecStats>,
}

/// The stderr line reporting speculative decoding (CLI.md §4.1).
pub fn spec_line(s: &SpecStats) -> String {
    format!("mtp: {}", s.summary())
}

/// Sample and feed tokens until EOS (not fed, not returned), the cap, or
/// `interrupt` (checked before each step, so Ctrl+C stops after the
/// current one). `on_token` sees each kept token: the sampled one before it
/// is evaluated, tokens accepted by speculative decoding after.
pub fn generate(
    session: &mut dyn LiveSession,
    sampler: &mut Sampler,
    max_new: usize,
    eos: u32,
    interrupt: &AtomicBool,
    on_token: &mut dyn FnMut(u32) -> Result<()>,
) -> Result<Generated> {
    let t0 = std::time::Instant::now();
    let stats0 = session.spec_stats();
    let mut tokens = Vec::new();
    // Without speculation the run chooses where the logits are (on the GPU: the argmax, or
    // the min_p set, read back instead of the 517 KB of logits; the engine's
    // DS4_HOST_SAMPLE=1 reads the logits every token instead).
    if stats0.is_none() && max_new > 0 && !interrupt.load(Ordering::Relaxed) {
        let first = sampler.sample(session.logits());
        if first == eos {
            return Ok(Generated { tokens, stop: StopReason::Eos, seconds: t0.elapsed().as_secs_f64(), spec: None });
        }
        on_token(first)?;
        let mut stop = StopReason::Length;
        let mut failed = None;
        let run = session.sample_run(first, max_new, sampler, &mut |t| {
            if interrupt.load(Ordering::Relaxed) {
                stop = StopReason::Interrupted;
                false
            } else if t == eos {
                stop = StopReason::Eos;
                false
            } else if let Err(e) = on_token(t) {
                failed = Some(e);
                false
            } else {
                true
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        return Ok(Generated { tokens: run, stop, seconds: t0.elapsed().as_secs_f64(), spec: None });
    }
    let stop = loop {
        if interrupt.load(Ordering::Relaxed) {
            break StopReason::Interrupted;
        }
        if tokens.len() >= max_new {
            break StopReason::Length;
        }
        let tok = sampler.sample(session.logits());
        if tok == eos {
            break StopReason::Eos;
        }
        on_token(tok)?;
        tokens.push(tok);
        let run = session.eval_run(tok, max_new - tokens.len() + 1)?;
        for &t in run.iter().skip(1) {
            on_token(t)?;
            tokens.push(t);
        }
    };
    let spec = match (stats0, session.spec_stats()) {
        (Some(a), Some(b)) => Some(b.since(&a)),
        _ => None,
    };
    Ok(Generated { tokens, stop, seconds: t0.elapsed().as_secs_f64(), spec })
}

/// Tokens per second, 0 when nothing was timed.
pub fn rate(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! A deterministic stand-in session: logits are a function of the live
    //! tokens, and every prefilled token is recorded.
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    pub struct FakeSession {
        pub ctx: usize,
        pub toks: Vec<u32>,
        pub logits: Vec<f32>,
        /// Tokens computed by each sync (the non-reused suffix); shared so
        /// a test can read it while the session is boxed.
        pub prefills: Rc<RefCell<Vec<Vec<u32>>>>,
        pub evals: usize,
        /// Script of tokens to make most likely, by number of evals so far.
        pub script: Vec<u32>,
        pub fail_next_sync: bool,
    }

    impl FakeSession {
        pub fn new(ctx: usize, vocab: usize, script: Vec<u32>) -> Self {
            let mut s = FakeSession {
                ctx,
                toks: Vec::new(),
                logits: vec![0.0; vocab],
                prefills: Rc::new(RefCell::new(Vec::new())),
                evals: 0,
                script,
                fail_next_sync: false,
            };
            s.refresh();
            s
        }

        fn refresh(&mut self) {
            self.logits.iter_mut().for_each(|l| *l = 0.0);
            let want = self.script.get(self.evals).copied().unwrap_or(1);
            self.logits[want as usize] = 100.0;
        }
    }

    impl LiveSession for FakeSession {
        fn ctx(&self) -> usize {
            self.ctx
        }
        fn tokens(&self) -> &[u32] {
            &self.toks
        }
        fn sync(&mut self, prompt: &[u32], progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
            if self.fail_next_sync {
                self.fail_next_sync = false;
                anyhow::bail!("injected failure");
            }
            if prompt.len() > self.ctx {
                anyhow::bail!("prompt of {} tokens exceeds the context ({})", prompt.len(), self.ctx);
            }
            let common = self.toks.iter().zip(prompt).take_while(|(a, b)| a == b).count();
            let suffix = prompt[common..].to_vec();
            progress(suffix.len(), suffix.len());
            self.prefills.borrow_mut().push(suffix);
            self.toks = prompt.to_vec();
            self.evals = 0;
            self.refresh();
            Ok(common)
        }
        fn eval(&mut self, token: u32) -> Result<()> {
            self.toks.push(token);
            self.evals += 1;
            self.refresh();
            Ok(())
        }
        fn logits(&self) -> &[f32] {
            &self.logits
        }
        fn invalidate(&mut self) {
            self.toks.clear();
        }
        fn extend_all(&mut self, tokens: &[u32], _: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>> {
            let mut out = Vec::new();
            for &t in tokens {
                self.eval(t)?;
                out.extend_from_slice(&self.logits);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeSession;
    use super::*;
    use ds4_engine::sampling::SamplerParams;

    #[test]
    fn budget() {
        assert_eq!(generation_budget(50000, 100, 10), 89);
        assert_eq!(generation_budget(5, 100, 10), 5);
        assert_eq!(generation_budget(5, 100, 99), 0);
        assert_eq!(generation_budget(5, 100, 98), 1);
        assert_eq!(generation_budget(5, 100, 150), 0);
    }

    #[test]
    fn stops_at_eos_length_and_interrupt() {
        let mut s = FakeSession::new(100, 16, vec![5, 6, 7, 1]);
        s.sync(&[0, 3], &mut |_, _| true).unwrap();
        let mut sampler = Sampler::new(SamplerParams::greedy(), 1);
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        let g = generate(&mut s, &mut sampler, 10, 1, &stop, &mut |t| {
            seen.push(t);
            Ok(())
        })
        .unwrap();
        assert_eq!(g.tokens, vec![5, 6, 7]);
        assert_eq!(seen, g.tokens);
        assert_eq!(g.stop, StopReason::Eos);
        assert_eq!(s.toks, vec![0, 3, 5, 6, 7]);

        let mut s = FakeSession::new(100, 16, vec![5, 6, 7, 1]);
        let g = generate(&mut s, &mut sampler, 2, 1, &stop, &mut |_| Ok(())).unwrap();
        assert_eq!((g.tokens.len(), g.stop), (2, StopReason::Length));

        // Interrupt raised while the first token is handled: it is kept.
        let mut s = FakeSession::new(100, 16, vec![5, 6, 7, 1]);
        let g = generate(&mut s, &mut sampler, 10, 1, &stop, &mut |_| {
            stop.store(true, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        assert_eq!((g.tokens, g.stop), (vec![5], StopReason::Interrupted));
    }

    /// A session that accepts runs of up to 3 tokens per step (the scripted greedy choices),
    /// as a speculating engine session does.
    struct Runs(FakeSession, SpecStats);

    impl LiveSession for Runs {
        fn ctx(&self) -> usize {
            self.0.ctx()
        }
        fn tokens(&self) -> &[u32] {
            self.0.tokens()
        }
        fn sync(&mut self, p: &[u32], cb: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
            self.0.sync(p, cb)
        }
        fn eval(&mut self, t: u32) -> Result<()> {
            self.0.eval(t)
        }
        fn logits(&self) -> &[f32] {
            self.0.logits()
        }
        fn invalidate(&mut self) {
            self.0.invalidate()
        }
        fn extend_all(&mut self, t: &[u32], cb: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>> {
            self.0.extend_all(t, cb)
        }
        fn eval_run(&mut self, token: u32, max: usize) -> Result<Vec<u32>> {
            let mut run = vec![token];
            self.0.eval(token)?;
            while run.len() < max.min(3) {
                let next = ds4_engine::sampling::argmax(self.0.logits());
                if next == 1 {
                    break;
                }
                self.0.eval(next)?;
                run.push(next);
            }
            self.1.steps += 1;
            self.1.drafted += 2;
            self.1.accepted += run.len() as u64 - 1;
            self.1.committed += run.len() as u64;
            Ok(run)
        }
        fn spec_stats(&self) -> Option<SpecStats> {
            Some(self.1)
        }
    }

    #[test]
    fn speculative_runs_match_token_by_token() {
        let script: Vec<u32> = vec![5, 6, 7, 8, 9, 10, 11, 12, 1];
        let stop = AtomicBool::new(false);
        let mut sampler = Sampler::new(SamplerParams::greedy(), 1);
        for cap in [1, 2, 4, 5, 7, 20] {
            let mut plain = FakeSession::new(100, 16, script.clone());
            let want = generate(&mut plain, &mut sampler, cap, 1, &stop, &mut |_| Ok(())).unwrap();
            assert!(want.spec.is_none());
            let mut s = Runs(FakeSession::new(100, 16, script.clone()), SpecStats { steps: 9, ..Default::default() });
            let mut seen = Vec::new();
            let g = generate(&mut s, &mut sampler, cap, 1, &stop, &mut |t| {
                seen.push(t);
                Ok(())
            })
            .unwrap();
            assert_eq!((&g.tokens, g.stop), (&want.tokens, want.stop), "cap {cap}");
            assert_eq!(seen, g.tokens);
            assert_eq!(s.0.toks, plain.toks, "cap {cap}: same session contents");
            let st = g.spec.unwrap();
            // Counters are reported for this generation only.
            assert_eq!(st.committed as usize, g.tokens.len());
            assert_eq!(st.steps as usize, g.tokens.len().div_ceil(3));
            assert!(spec_line(&st).starts_with("mtp: "));
        }
    }
}
