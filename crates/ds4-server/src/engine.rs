//! The two things the worker needs from the model side, as traits so the HTTP
//! layer can be unit-tested without a model: the tokenizer (rendered-chat
//! encode, token bytes) and one live engine session (the only KV state).
//! The shipped binary implements them with `ds4_tok` and `ds4_engine`.

use ds4_engine::sampling::{sample, Rng};
use ds4_engine::{Decoder, Run};

pub trait TextCodec: Send + Sync + 'static {
    /// Rendered-chat tokenization (SERVING.md §1.3).
    fn encode_chat(&self, text: &str) -> Vec<u32>;
    /// Raw bytes of one token (special tokens as their literal strings).
    fn token_bytes(&self, id: u32) -> Vec<u8>;
    fn eos(&self) -> u32;

    fn decode(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &t in ids {
            out.extend_from_slice(&self.token_bytes(t));
        }
        out
    }

    /// Rendered-chat tokenization of arbitrary bytes: a disk checkpoint's
    /// text may end inside a UTF-8 sequence, so the suffix after it may not
    /// be valid UTF-8 on its own (KVCACHE.md §5 step 5).
    fn encode_chat_bytes(&self, bytes: &[u8]) -> Vec<u32> {
        match std::str::from_utf8(bytes) {
            Ok(s) => self.encode_chat(s),
            Err(_) => self.encode_chat(&String::from_utf8_lossy(bytes)),
        }
    }

    /// `<｜User｜>` and `<｜Assistant｜>` ids, for the cold-save chat anchor
    /// (KVCACHE.md §4.1); `None` disables the anchor.
    fn user_id(&self) -> Option<u32> {
        None
    }
    fn assistant_id(&self) -> Option<u32> {
        None
    }
}

/// Progress callback: `(done, total)` prompt tokens; return `false` to cancel.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize) -> bool;

#[derive(Debug, Clone, PartialEq)]
pub enum SyncError {
    Cancelled,
    Failed(String),
}

pub trait EngineSession: Send + 'static {
    fn ctx(&self) -> usize;
    /// Tokens the live state represents.
    fn tokens(&self) -> &[u32];
    /// Next-token logits after the last live token.
    fn logits(&self) -> &[f32];
    /// Make the live state equal `prompt`, reusing the longest valid prefix
    /// (extend) or rebuilding from zero.
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError>;
    /// One decode step.
    fn eval(&mut self, token: u32) -> Result<(), String>;
    /// Drop the live state (next sync rebuilds).
    fn invalidate(&mut self);

    /// Routed-expert quantisation bits of the model (2 or 4) for disk
    /// checkpoints (KVCACHE.md §2.1); 0 = this engine cannot checkpoint, the
    /// disk cache stays off.
    fn quant_bits(&self) -> u8 {
        0
    }
    /// The DSV4 session payload of the live state (KVCACHE.md §3). The cache
    /// needs the exact length before writing, hence bytes rather than a writer.
    fn save_payload(&mut self) -> Result<Vec<u8>, String> {
        Err("this engine cannot save its state".into())
    }
    /// Replace the live state by a DSV4 payload read from `r` (which ends
    /// where the payload ends). On error the live state is empty.
    fn load_payload(&mut self, _r: &mut dyn std::io::Read) -> Result<(), String> {
        self.invalidate();
        Err("this engine cannot load a saved state".into())
    }

    /// Leave the session to the process exit instead of dropping it when the
    /// worker ends (see `Worker::run`).
    fn leak_at_exit(&self) -> bool {
        false
    }

    /// Whether [`EngineSession::eval_run`] speculates (`--mtp`): greedy
    /// requests then commit several tokens per step.
    fn speculates(&self) -> bool {
        false
    }
    /// One greedy generation step (SERVING.md §10 `--mtp`): evaluate `token`
    /// (the argmax) and, when speculating, the drafted tokens the model agrees
    /// with, at most `max` tokens in all. `stop_after(t)` is called for each
    /// committed token in order (`token` first); returning true commits
    /// nothing after `t`. The state afterwards is exactly that of plain
    /// decoding of the committed tokens.
    fn eval_run(&mut self, token: u32, max: usize, stop_after: &mut dyn FnMut(u32) -> bool) -> Result<(), String> {
        let _ = max;
        self.eval(token)?;
        stop_after(token);
        Ok(())
    }
    /// A decode run ([`ds4_engine::Session::decode_run`]): evaluate `first`, then token by
    /// token sample the next one with the params `d` gives and evaluate it while `d` admits
    /// it. The engine's form chooses where the logits are (on the GPU: the argmax or the
    /// min_p set there, a few bytes back per token instead of the vocabulary's logits); this
    /// one samples from `logits()` with the same draws. On an error the live state holds the
    /// tokens evaluated before it.
    fn decode_run(&mut self, first: u32, rng: &mut Rng, d: &mut dyn Decoder) -> Result<Run, String> {
        let mut run = Run::default();
        let mut tok = first;
        loop {
            if !d.admit(tok) {
                run.declined = Some(tok);
                return Ok(run);
            }
            let params = d.next_params(tok);
            self.eval(tok)?;
            run.tokens.push(tok);
            match params {
                Some(p) => tok = sample(self.logits(), &p, rng),
                None => return Ok(run),
            }
        }
    }
    /// Speculation counters since the session was created (None: not speculating).
    fn spec_stats(&self) -> Option<ds4_engine::mtp::SpecStats> {
        None
    }
}
