//! Prompt construction of the CLI (CLI.md §2): the one-shot token layout and
//! the interactive transcript. The CLI has its own, simpler builder than the
//! server's renderer: special tokens are inserted by id and every text is
//! BPE-encoded on its own, with no separators and no special-string matching.

use ds4_tok::Tokenizer;

pub use ds4_tok::chat::{ThinkingMode as ThinkMode, THINK_MAX_MIN_CTX, THINK_MAX_PREAMBLE};

/// The mode used with a context of `ctx` positions (max needs ≥ 393216).
pub fn effective(mode: ThinkMode, ctx: usize) -> ThinkMode {
    mode.for_context(ctx as u64)
}

pub fn mode_name(mode: ThinkMode) -> &'static str {
    match mode {
        ThinkMode::None => "none",
        ThinkMode::High => "high",
        ThinkMode::Max => "max",
    }
}

/// The stderr warning for a downgraded Think Max (CLI.md §2.1).
pub fn think_max_warning(flag: &str, ctx: usize) -> String {
    format!("warning: {flag} needs --ctx >= {THINK_MAX_MIN_CTX}; ctx={ctx} uses normal thinking instead")
}

/// BPE of a text with no special-token matching. Invalid UTF-8 (possible in
/// a prompt file) is kept byte for byte as the byte-symbol tokens, so the
/// tokens decode back to exactly the input.
pub fn encode_text(tok: &Tokenizer, text: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    for chunk in text.utf8_chunks() {
        if !chunk.valid().is_empty() {
            out.extend(tok.encode_ordinary(chunk.valid()));
        }
        for &b in chunk.invalid() {
            let sym = ds4_tok::byte_to_char(b).to_string();
            // Every byte-level vocabulary has the 256 byte symbols.
            if let Some(id) = tok.token_to_id(&sym) {
                out.push(id);
            }
        }
    }
    out
}

/// True if the prompt is an already rendered chat (starts with the BOS string).
pub fn is_rendered_chat(prompt: &[u8]) -> bool {
    prompt.starts_with(ds4_tok::BOS.as_bytes())
}

/// One-shot prompt (CLI.md §2.1):
/// `⟨BOS⟩ [ThinkMaxPreamble] [system] ⟨User⟩ prompt ⟨Assistant⟩ (<think>|</think>)`,
/// or the rendered-chat tokenization when the prompt starts with BOS.
/// `mode` must already be the effective mode for the context.
pub fn one_shot(tok: &Tokenizer, system: &str, prompt: &[u8], mode: ThinkMode) -> Vec<u32> {
    if is_rendered_chat(prompt) {
        return tok.encode_chat_bytes(prompt);
    }
    let sp = tok.special();
    let mut t = vec![sp.bos];
    if mode == ThinkMode::Max {
        t.extend(encode_text(tok, THINK_MAX_PREAMBLE.as_bytes()));
    }
    t.extend(encode_text(tok, system.as_bytes()));
    t.push(sp.user);
    t.extend(encode_text(tok, prompt));
    t.push(sp.assistant);
    t.push(if mode.is_thinking() { sp.think } else { sp.think_end });
    t
}

/// The interactive token transcript (CLI.md §2.2): the exact sampled
/// history, never rewritten except for the Think Max preamble.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    pub tokens: Vec<u32>,
    /// Tokens of the Think Max preamble right after BOS (0 = absent).
    preamble_len: usize,
}

impl Transcript {
    pub fn new(tok: &Tokenizer, system: &str, max_active: bool) -> Transcript {
        let mut t = Transcript { tokens: vec![tok.special().bos], preamble_len: 0 };
        t.set_max_preamble(tok, max_active);
        t.tokens.extend(encode_text(tok, system.as_bytes()));
        t
    }

    pub fn has_max_preamble(&self) -> bool {
        self.preamble_len > 0
    }

    /// Insert or remove the preamble at index 1. Returns true if the
    /// transcript changed (every later position moved: the caller must
    /// invalidate the session).
    pub fn set_max_preamble(&mut self, tok: &Tokenizer, enable: bool) -> bool {
        if enable && self.preamble_len == 0 {
            let pre = encode_text(tok, THINK_MAX_PREAMBLE.as_bytes());
            self.preamble_len = pre.len();
            self.tokens.splice(1..1, pre);
            true
        } else if !enable && self.preamble_len > 0 {
            self.tokens.drain(1..1 + self.preamble_len);
            self.preamble_len = 0;
            true
        } else {
            false
        }
    }

    /// Append `⟨User⟩ text ⟨Assistant⟩ (<think>|</think>)`; returns the length
    /// to roll back to if the turn fails.
    pub fn begin_turn(&mut self, tok: &Tokenizer, user_text: &[u8], mode: ThinkMode) -> usize {
        let sp = tok.special();
        let rollback = self.tokens.len();
        self.tokens.push(sp.user);
        self.tokens.extend(encode_text(tok, user_text));
        self.tokens.push(sp.assistant);
        self.tokens.push(if mode.is_thinking() { sp.think } else { sp.think_end });
        rollback
    }

    pub fn rollback(&mut self, len: usize) {
        self.tokens.truncate(len);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small byte-level vocabulary: the 256 byte symbols, a few merges and
    /// the serving specials (ids as in the fixture models' layout).
    pub fn tiny_tokenizer() -> Tokenizer {
        let mut toks: Vec<String> = vec![
            "<｜begin▁of▁sentence｜>".into(),
            "<｜end▁of▁sentence｜>".into(),
            "<｜▁pad▁｜>".into(),
        ];
        for b in 0..=255u8 {
            toks.push(ds4_tok::byte_to_char(b).to_string());
        }
        let merges = ["h e", "l l", "he ll", "hell o", "Ġ w"];
        for m in merges {
            toks.push(m.replace(' ', ""));
        }
        for s in [ds4_tok::USER, ds4_tok::ASSISTANT, ds4_tok::THINK, ds4_tok::THINK_END, ds4_tok::DSML] {
            toks.push(s.into());
        }
        let types: Vec<i64> = toks.iter().map(|t| if t.contains('｜') || t.contains("think>") { 3 } else { 1 }).collect();
        let refs: Vec<&str> = toks.iter().map(|s| s.as_str()).collect();
        Tokenizer::from_parts(&refs, &types, &merges).expect("tiny tokenizer")
    }

    #[test]
    fn modes() {
        assert_eq!(effective(ThinkMode::Max, 393215), ThinkMode::High);
        assert_eq!(effective(ThinkMode::Max, 393216), ThinkMode::Max);
        assert_eq!(effective(ThinkMode::None, 1), ThinkMode::None);
        assert!(!ThinkMode::None.is_thinking());
        assert_eq!(THINK_MAX_PREAMBLE.len(), 476);
        assert_eq!(
            think_max_warning("--think-max", 32768),
            "warning: --think-max needs --ctx >= 393216; ctx=32768 uses normal thinking instead"
        );
    }

    #[test]
    fn one_shot_layout() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let sys = encode_text(&tok, b"You are a helpful assistant");
        let hello = encode_text(&tok, b"hello");
        let mut want = vec![sp.bos];
        want.extend(&sys);
        want.push(sp.user);
        want.extend(&hello);
        want.extend([sp.assistant, sp.think]);
        assert_eq!(one_shot(&tok, "You are a helpful assistant", b"hello", ThinkMode::High), want);

        // Empty system omitted; nothink ends with </think>.
        let got = one_shot(&tok, "", b"hello", ThinkMode::None);
        let mut want = vec![sp.bos, sp.user];
        want.extend(&hello);
        want.extend([sp.assistant, sp.think_end]);
        assert_eq!(got, want);

        // Max: the preamble right after BOS, then the system text.
        let got = one_shot(&tok, "sys", b"hello", ThinkMode::Max);
        let pre = encode_text(&tok, THINK_MAX_PREAMBLE.as_bytes());
        assert_eq!(&got[1..1 + pre.len()], &pre[..]);
        assert_eq!(&got[1 + pre.len()..1 + pre.len() + 3], &encode_text(&tok, b"sys")[..]);
        assert_eq!(*got.last().unwrap(), sp.think);

        // No separators and no special-string matching inside texts.
        let got = one_shot(&tok, "", "<think>".as_bytes(), ThinkMode::None);
        assert_eq!(got.iter().filter(|&&t| t == sp.think).count(), 0);
        assert_eq!(tok.decode(&got[2..got.len() - 2]), b"<think>");
    }

    #[test]
    fn raw_mode_when_prompt_starts_with_bos() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let text = format!("{}{}hello{}{}", ds4_tok::BOS, ds4_tok::USER, ds4_tok::ASSISTANT, ds4_tok::THINK_END);
        let got = one_shot(&tok, "ignored system", text.as_bytes(), ThinkMode::Max);
        let mut want = vec![sp.bos, sp.user];
        want.extend(encode_text(&tok, b"hello"));
        want.extend([sp.assistant, sp.think_end]);
        assert_eq!(got, want);
    }

    #[test]
    fn invalid_utf8_round_trips() {
        let tok = tiny_tokenizer();
        let bytes = b"he\xffllo\x00\xe4\xbd";
        assert_eq!(tok.decode(&encode_text(&tok, bytes)), bytes);
    }

    #[test]
    fn transcript_preamble_and_turns() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let mut t = Transcript::new(&tok, "sys", false);
        let base = t.tokens.clone();
        assert_eq!(base[0], sp.bos);
        let rb = t.begin_turn(&tok, b"hello", ThinkMode::High);
        assert_eq!(rb, base.len());
        assert_eq!(&t.tokens[..rb], &base[..]);
        assert_eq!(&t.tokens[t.tokens.len() - 2..], &[sp.assistant, sp.think]);
        t.tokens.extend([10, 11, sp.eos]);
        let after_first = t.tokens.clone();

        // Second turn strictly extends the first.
        t.begin_turn(&tok, b"hello", ThinkMode::None);
        assert!(t.tokens.starts_with(&after_first));
        assert_eq!(*t.tokens.last().unwrap(), sp.think_end);

        // Preamble insert at index 1 and removal restore the same tokens.
        let before = t.tokens.clone();
        assert!(t.set_max_preamble(&tok, true));
        assert!(!t.set_max_preamble(&tok, true));
        let pre = encode_text(&tok, THINK_MAX_PREAMBLE.as_bytes());
        assert_eq!(&t.tokens[1..1 + pre.len()], &pre[..]);
        assert_eq!(t.tokens.len(), before.len() + pre.len());
        assert!(t.set_max_preamble(&tok, false));
        assert_eq!(t.tokens, before);

        t.rollback(rb);
        assert_eq!(t.tokens, base);
    }
}
