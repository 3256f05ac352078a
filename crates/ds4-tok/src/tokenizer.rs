//! Byte-level BPE tokenizer built from GGUF metadata, identical to HF `tokenizers` running
//! DeepSeek V4's `tokenizer.json`.

use crate::bytelevel::{byte_to_char, ByteDecoder};
use crate::pretok::pretokenize;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Debug, thiserror::Error)]
pub enum TokError {
    #[error("tokenizer metadata: {0}")]
    Metadata(String),
    #[error("tokenizer: missing special token {0:?} in the vocabulary")]
    MissingSpecial(&'static str),
}

/// Literal strings of the seven serving special tokens (SERVING.md §1.2).
pub const BOS: &str = "<｜begin▁of▁sentence｜>";
pub const EOS: &str = "<｜end▁of▁sentence｜>";
pub const USER: &str = "<｜User｜>";
pub const ASSISTANT: &str = "<｜Assistant｜>";
pub const THINK: &str = "<think>";
pub const THINK_END: &str = "</think>";
pub const DSML: &str = "｜DSML｜";

/// The strings the rendered-chat tokenizer recognises (SERVING.md §1.3).
pub const SERVING_SPECIALS: [&str; 7] = [BOS, EOS, USER, ASSISTANT, THINK, THINK_END, DSML];

/// Ids of the serving special tokens, looked up by their text at load time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecialTokens {
    pub bos: u32,
    pub eos: u32,
    pub user: u32,
    pub assistant: u32,
    pub think: u32,
    pub think_end: u32,
    pub dsml: u32,
}

/// Multiplicative hash for small integer keys (the std SipHash is several times slower here).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut tail = 0u64;
        for (i, &b) in chunks.remainder().iter().enumerate() {
            tail |= (b as u64) << (8 * i);
        }
        self.write_u64(tail ^ ((bytes.len() as u64) << 56));
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

const NONE: u32 = u32::MAX;
/// Pieces longer than this (in symbols) use the O(n log n) merge loop.
const SHORT_PIECE: usize = 48;

/// Byte trie over a set of token strings; finds leftmost-longest matches.
#[derive(Clone)]
struct Matcher {
    root: Box<[u32; 256]>,
    /// (edges sorted by byte, token id or NONE) per non-root node.
    nodes: Vec<(Vec<(u8, u32)>, u32)>,
}

impl Matcher {
    fn new<'a>(tokens: impl IntoIterator<Item = (&'a str, u32)>) -> Matcher {
        let mut m = Matcher { root: Box::new([NONE; 256]), nodes: Vec::new() };
        for (s, id) in tokens {
            let b = s.as_bytes();
            if b.is_empty() {
                continue;
            }
            let mut node = match m.root[b[0] as usize] {
                NONE => {
                    m.nodes.push((Vec::new(), NONE));
                    m.root[b[0] as usize] = (m.nodes.len() - 1) as u32;
                    m.nodes.len() - 1
                }
                n => n as usize,
            };
            for &c in &b[1..] {
                node = match m.nodes[node].0.binary_search_by_key(&c, |e| e.0) {
                    Ok(i) => m.nodes[node].0[i].1 as usize,
                    Err(i) => {
                        m.nodes.push((Vec::new(), NONE));
                        let new = m.nodes.len() - 1;
                        m.nodes[node].0.insert(i, (c, new as u32));
                        new
                    }
                };
            }
            // A duplicate string keeps its first id (as HF's added vocabulary does).
            if m.nodes[node].1 == NONE {
                m.nodes[node].1 = id;
            }
        }
        m
    }

    /// Longest token starting at `i`: (end, id).
    #[inline]
    fn longest_at(&self, b: &[u8], i: usize) -> Option<(usize, u32)> {
        let mut node = self.root[b[i] as usize];
        if node == NONE {
            return None;
        }
        let mut best = None;
        let mut j = i + 1;
        loop {
            let (edges, tok) = &self.nodes[node as usize];
            if *tok != NONE {
                best = Some((j, *tok));
            }
            if j >= b.len() {
                break;
            }
            match edges.binary_search_by_key(&b[j], |e| e.0) {
                Ok(k) => node = edges[k].1,
                Err(_) => break,
            }
            j += 1;
        }
        best
    }

    /// Calls `f(start, end, id)` for each leftmost-longest match, left to right.
    #[inline]
    fn for_each_match(&self, b: &[u8], mut f: impl FnMut(usize, usize, u32)) {
        let mut i = 0;
        while i < b.len() {
            if self.root[b[i] as usize] != NONE {
                if let Some((end, id)) = self.longest_at(b, i) {
                    f(i, end, id);
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
    }
}

/// Reusable buffers for one encode call, and a cache of the pieces seen in it (natural text
/// repeats most of its words, and a cache hit skips the merge loop).
#[derive(Default)]
struct Scratch<'a> {
    syms: Vec<u32>,
    ranks: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    cache: FxMap<&'a [u8], (u32, u32)>,
    cached_ids: Vec<u32>,
}

/// Pieces longer than this are not cached (rare, and would bloat the cache).
const CACHE_MAX_PIECE: usize = 48;

/// DeepSeek V4 tokenizer. Cheap to share across threads (`&Tokenizer` is all encode needs).
#[derive(Clone)]
pub struct Tokenizer {
    /// Raw bytes of every token, concatenated; token i is bytes[offs[i]..offs[i+1]].
    bytes: Vec<u8>,
    offs: Vec<u32>,
    /// Vocabulary strings as stored (byte-level alphabet for normal tokens, literal for added),
    /// concatenated; token i is texts[text_offs[i]..text_offs[i+1]].
    texts: String,
    text_offs: Vec<u32>,
    added: Vec<bool>,
    byte_ids: [u32; 256],
    /// (left id << 32 | right id) -> (rank << 32 | merged id).
    merges: FxMap<u64, u64>,
    all_added: Matcher,
    serving: Matcher,
    added_ids: HashMap<String, u32>,
    /// Normal-token string -> id, built on first use of `token_to_id` (diagnostics only).
    vocab_ids: std::sync::OnceLock<FxMap<Box<str>, u32>>,
    special: SpecialTokens,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab", &self.vocab_size())
            .field("merges", &self.merges.len())
            .field("special", &self.special)
            .finish()
    }
}

impl Tokenizer {
    /// Build from the `tokenizer.ggml.*` metadata of a GGUF file.
    pub fn from_gguf(g: &ds4_gguf::Gguf) -> Result<Tokenizer, TokError> {
        let md = |m: &str| TokError::Metadata(m.to_string());
        if let Some(model) = g.meta("tokenizer.ggml.model") {
            match model.as_str() {
                Some("gpt2") => {}
                other => return Err(md(&format!("tokenizer.ggml.model is {other:?}, expected \"gpt2\" (byte-level BPE)"))),
            }
        }
        let tokens = g
            .meta_str_array("tokenizer.ggml.tokens")
            .ok_or_else(|| md("tokenizer.ggml.tokens missing or not an array of strings"))?;
        let types: Vec<i64> = match g.meta("tokenizer.ggml.token_type") {
            None => return Err(md("tokenizer.ggml.token_type missing")),
            Some(v) => v
                .as_array()
                .ok_or_else(|| md("tokenizer.ggml.token_type is not an array"))?
                .iter()
                .map(|x| x.as_i64().ok_or_else(|| md("tokenizer.ggml.token_type has a non-integer element")))
                .collect::<Result<_, _>>()?,
        };
        let merges = g
            .meta_str_array("tokenizer.ggml.merges")
            .ok_or_else(|| md("tokenizer.ggml.merges missing or not an array of strings"))?;
        Self::from_parts(&tokens, &types, &merges)
    }

    /// Build from the vocabulary strings, GGUF token types (1 normal, 3 control and 4
    /// user-defined are added tokens) and merge rules ("left right", in rank order).
    pub fn from_parts(tokens: &[&str], types: &[i64], merges: &[&str]) -> Result<Tokenizer, TokError> {
        let md = |m: String| TokError::Metadata(m);
        if tokens.len() != types.len() {
            return Err(md(format!("{} tokens but {} token types", tokens.len(), types.len())));
        }
        if tokens.len() >= u32::MAX as usize / 2 {
            return Err(md(format!("vocabulary of {} entries is too large", tokens.len())));
        }
        let dec = ByteDecoder::new();
        let mut bytes = Vec::new();
        let mut offs = vec![0u32];
        let mut added = Vec::with_capacity(tokens.len());
        let mut normal_ids: FxMap<&str, u32> = FxMap::default();
        normal_ids.reserve(tokens.len());
        let mut added_ids = HashMap::new();
        for (i, (&t, &ty)) in tokens.iter().zip(types).enumerate() {
            let is_added = ty == 3 || ty == 4;
            added.push(is_added);
            if is_added {
                // Added tokens decode to their literal text.
                bytes.extend_from_slice(t.as_bytes());
                added_ids.entry(t.to_string()).or_insert(i as u32);
            } else {
                match dec.decode(t) {
                    Some(raw) => {
                        bytes.extend_from_slice(&raw);
                        normal_ids.entry(t).or_insert(i as u32);
                    }
                    // Not representable in the byte alphabet: never produced by BPE; decode literally.
                    None => bytes.extend_from_slice(t.as_bytes()),
                }
            }
            if bytes.len() > u32::MAX as usize {
                return Err(md("vocabulary strings exceed 4 GiB".into()));
            }
            offs.push(bytes.len() as u32);
        }
        let mut byte_ids = [NONE; 256];
        for b in 0..=255u8 {
            let mut s = [0u8; 4];
            if let Some(&id) = normal_ids.get(byte_to_char(b).encode_utf8(&mut s) as &str) {
                byte_ids[b as usize] = id;
            }
        }
        let mut merge_map: FxMap<u64, u64> = FxMap::default();
        merge_map.reserve(merges.len());
        let mut cat = String::new();
        for (rank, m) in merges.iter().enumerate() {
            let (a, b) = m
                .split_once(' ')
                .ok_or_else(|| md(format!("merge #{rank} {m:?} is not \"left right\"")))?;
            let ia = *normal_ids.get(a).ok_or_else(|| md(format!("merge #{rank} {m:?}: {a:?} not in vocabulary")))?;
            let ib = *normal_ids.get(b).ok_or_else(|| md(format!("merge #{rank} {m:?}: {b:?} not in vocabulary")))?;
            cat.clear();
            cat.push_str(a);
            cat.push_str(b);
            let inew = *normal_ids
                .get(cat.as_str())
                .ok_or_else(|| md(format!("merge #{rank} {m:?}: result {cat:?} not in vocabulary")))?;
            // The first rule for a pair wins, as in HF.
            merge_map.entry(((ia as u64) << 32) | ib as u64).or_insert(((rank as u64) << 32) | inew as u64);
        }
        let all_added = Matcher::new(tokens.iter().zip(&added).enumerate().filter(|(_, (_, &a))| a).map(|(i, (&t, _))| (t, i as u32)));
        let lookup = |s: &'static str| added_ids.get(s).copied().ok_or(TokError::MissingSpecial(s));
        let special = SpecialTokens {
            bos: lookup(BOS)?,
            eos: lookup(EOS)?,
            user: lookup(USER)?,
            assistant: lookup(ASSISTANT)?,
            think: lookup(THINK)?,
            think_end: lookup(THINK_END)?,
            dsml: lookup(DSML)?,
        };
        let serving = Matcher::new(SERVING_SPECIALS.iter().map(|&s| (s, added_ids[s])));
        let mut texts = String::with_capacity(tokens.iter().map(|t| t.len()).sum());
        let mut text_offs = Vec::with_capacity(tokens.len() + 1);
        text_offs.push(0u32);
        for t in tokens {
            texts.push_str(t);
            text_offs.push(u32::try_from(texts.len()).map_err(|_| md("vocabulary strings exceed 4 GiB".into()))?);
        }
        Ok(Tokenizer {
            bytes,
            offs,
            texts,
            text_offs,
            added,
            byte_ids,
            merges: merge_map,
            all_added,
            serving,
            added_ids,
            vocab_ids: std::sync::OnceLock::new(),
            special,
        })
    }

    /// Number of ids (the logits width).
    pub fn vocab_size(&self) -> usize {
        self.text_offs.len() - 1
    }

    pub fn special(&self) -> &SpecialTokens {
        &self.special
    }

    /// Id of an added (special or user-defined) token by its exact text.
    pub fn added_token_id(&self, text: &str) -> Option<u32> {
        self.added_ids.get(text).copied()
    }

    /// Id of any token by its vocabulary string (byte-level alphabet form for normal tokens,
    /// literal text for added tokens).
    pub fn token_to_id(&self, vocab_string: &str) -> Option<u32> {
        if let Some(&id) = self.added_ids.get(vocab_string) {
            return Some(id);
        }
        let map = self.vocab_ids.get_or_init(|| {
            (0..self.vocab_size() as u32)
                .filter(|&i| !self.added[i as usize])
                .filter_map(|i| self.token_text(i).map(|t| (Box::from(t), i)))
                .rev() // the first id wins for duplicate strings
                .collect()
        });
        map.get(vocab_string).copied()
    }

    /// The vocabulary string of a token as stored (e.g. `Ġhello`, `<｜User｜>`).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        let i = id as usize;
        if i + 1 >= self.text_offs.len() {
            return None;
        }
        Some(&self.texts[self.text_offs[i] as usize..self.text_offs[i + 1] as usize])
    }

    /// Raw bytes a token stands for (may be an incomplete UTF-8 sequence).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let i = id as usize;
        if i + 1 >= self.offs.len() {
            return None;
        }
        Some(&self.bytes[self.offs[i] as usize..self.offs[i + 1] as usize])
    }

    pub fn is_added(&self, id: u32) -> bool {
        self.added.get(id as usize).copied().unwrap_or(false)
    }

    /// Concatenated bytes of `ids`; unknown ids are skipped.
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            if let Some(b) = self.token_bytes(id) {
                out.extend_from_slice(b);
            }
        }
        out
    }

    /// `decode` as text, invalid UTF-8 replaced by U+FFFD.
    pub fn decode_lossy(&self, ids: &[u32]) -> String {
        String::from_utf8_lossy(&self.decode(ids)).into_owned()
    }

    /// Plain entry point: what the reference tokenizer's default `encode` does. Every added token
    /// of the vocabulary (special or not) is matched where its exact text occurs; no BOS/EOS.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_split(text, &self.all_added, &mut out);
        out
    }

    /// Rendered-chat entry point (SERVING.md §1.3): only the seven serving special strings are
    /// recognised; every span between them is BPE-encoded on its own.
    pub fn encode_chat(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_split(text, &self.serving, &mut out);
        out
    }

    /// BPE only: no added token is recognised.
    pub fn encode_ordinary(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_ordinary_into(text, &mut Scratch::default(), &mut out);
        out
    }

    /// Plain entry point over arbitrary bytes (e.g. a prompt file). Valid UTF-8 is encoded
    /// exactly like `encode`; each maximal invalid sequence (at most 3 bytes) is a boundary like an
    /// added token and is encoded on its own as byte tokens, so `decode` returns the input.
    pub fn encode_bytes(&self, bytes: &[u8]) -> Vec<u32> {
        self.encode_bytes_with(bytes, false)
    }

    /// Rendered-chat entry point over arbitrary bytes (invalid UTF-8 as in `encode_bytes`).
    pub fn encode_chat_bytes(&self, bytes: &[u8]) -> Vec<u32> {
        self.encode_bytes_with(bytes, true)
    }

    fn encode_bytes_with(&self, bytes: &[u8], chat: bool) -> Vec<u32> {
        let m = if chat { &self.serving } else { &self.all_added };
        let mut out = Vec::with_capacity(bytes.len() / 3 + 1);
        let mut sc = Scratch::default();
        for chunk in bytes.utf8_chunks() {
            self.encode_split(chunk.valid(), m, &mut out);
            if !chunk.invalid().is_empty() {
                self.bpe(chunk.invalid(), &mut sc, &mut out);
            }
        }
        out
    }

    fn encode_split(&self, text: &str, m: &Matcher, out: &mut Vec<u32>) {
        let mut sc = Scratch::default();
        let mut last = 0;
        // Added tokens are valid UTF-8 whose first byte is never a continuation byte, so every
        // match starts and ends on char boundaries.
        m.for_each_match(text.as_bytes(), |start, end, id| {
            self.encode_ordinary_into(&text[last..start], &mut sc, out);
            out.push(id);
            last = end;
        });
        self.encode_ordinary_into(&text[last..], &mut sc, out);
    }

    fn encode_ordinary_into<'a>(&self, text: &'a str, sc: &mut Scratch<'a>, out: &mut Vec<u32>) {
        pretokenize(text, &mut |piece: &'a str| {
            let b = piece.as_bytes();
            if b.len() < 2 || b.len() > CACHE_MAX_PIECE {
                return self.bpe(b, sc, out);
            }
            if let Some(&(start, len)) = sc.cache.get(b) {
                out.extend_from_slice(&sc.cached_ids[start as usize..(start + len) as usize]);
                return;
            }
            let before = out.len();
            self.bpe(b, sc, out);
            let start = sc.cached_ids.len() as u32;
            sc.cached_ids.extend_from_slice(&out[before..]);
            sc.cache.insert(b, (start, (out.len() - before) as u32));
        });
    }

    #[inline]
    fn pair(&self, a: u32, b: u32) -> u64 {
        match self.merges.get(&(((a as u64) << 32) | b as u64)) {
            Some(&v) => v,
            None => u64::MAX,
        }
    }

    /// BPE of one pre-tokenized piece: repeatedly merge the lowest-ranked adjacent pair, the
    /// leftmost one on ties (HF's priority queue orders by (rank, position)).
    fn bpe(&self, piece: &[u8], sc: &mut Scratch, out: &mut Vec<u32>) {
        if piece.len() == 1 {
            let id = self.byte_ids[piece[0] as usize];
            if id != NONE {
                out.push(id);
            }
            return;
        }
        let syms = &mut sc.syms;
        syms.clear();
        // Bytes without a vocabulary entry are dropped, as HF does without an unk token.
        syms.extend(piece.iter().map(|&b| self.byte_ids[b as usize]).filter(|&id| id != NONE));
        if syms.len() > SHORT_PIECE {
            self.bpe_long(sc, out);
            return;
        }
        let ranks = &mut sc.ranks;
        ranks.clear();
        ranks.extend(syms.windows(2).map(|w| self.pair(w[0], w[1])));
        loop {
            let mut best = u64::MAX;
            let mut at = 0;
            for (i, &r) in ranks.iter().enumerate() {
                if r < best {
                    best = r;
                    at = i;
                }
            }
            if best == u64::MAX {
                break;
            }
            syms[at] = best as u32;
            syms.remove(at + 1);
            ranks.remove(at);
            if at > 0 {
                ranks[at - 1] = self.pair(syms[at - 1], syms[at]);
            }
            if at + 1 < syms.len() {
                ranks[at] = self.pair(syms[at], syms[at + 1]);
            }
        }
        out.extend_from_slice(syms);
    }

    /// Same result as the loop in `bpe`, in O(n log n) for long pieces (e.g. a 1 MB line).
    fn bpe_long(&self, sc: &mut Scratch, out: &mut Vec<u32>) {
        let n = sc.syms.len();
        let syms = &mut sc.syms;
        let (prev, next) = (&mut sc.prev, &mut sc.next);
        prev.clear();
        next.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        next.extend(1..=n as u32);
        let mut heap = BinaryHeap::new();
        for i in 0..n - 1 {
            let v = self.pair(syms[i], syms[i + 1]);
            if v != u64::MAX {
                heap.push(std::cmp::Reverse((v >> 32, i as u32, v as u32)));
            }
        }
        while let Some(std::cmp::Reverse((rank, pos, new_id))) = heap.pop() {
            let p = pos as usize;
            let q = next[p] as usize;
            // Stale entries: the symbol was absorbed (NONE) or its pair changed.
            if syms[p] == NONE || q >= n {
                continue;
            }
            let v = self.pair(syms[p], syms[q]);
            if v >> 32 != rank || v as u32 != new_id {
                continue;
            }
            syms[p] = new_id;
            syms[q] = NONE;
            let r = next[q] as usize;
            next[p] = r as u32;
            if r < n {
                prev[r] = p as u32;
                let v = self.pair(syms[p], syms[r]);
                if v != u64::MAX {
                    heap.push(std::cmp::Reverse((v >> 32, p as u32, v as u32)));
                }
            }
            let l = prev[p];
            if l != u32::MAX {
                let v = self.pair(syms[l as usize], syms[p]);
                if v != u64::MAX {
                    heap.push(std::cmp::Reverse((v >> 32, l, v as u32)));
                }
            }
        }
        out.extend(syms.iter().copied().filter(|&s| s != NONE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny vocabulary: bytes a,b,c plus merges, and two added tokens.
    fn tiny() -> Tokenizer {
        let mut toks: Vec<String> = SERVING_SPECIALS.iter().map(|s| s.to_string()).collect();
        let mut types = vec![3i64; toks.len()];
        for b in 0..=255u8 {
            toks.push(byte_to_char(b).to_string());
            types.push(1);
        }
        for t in ["ab", "bc", "abc", "aa", "aaaa"] {
            toks.push(t.to_string());
            types.push(1);
        }
        let merges = ["b c", "a b", "a bc", "a a", "aa aa"];
        let refs: Vec<&str> = toks.iter().map(|s| s.as_str()).collect();
        Tokenizer::from_parts(&refs, &types, &merges).unwrap()
    }

    #[test]
    fn merge_order_and_long_path_agree() {
        let t = tiny();
        let id = |s: &str| t.token_to_id(s).unwrap();
        assert_eq!(t.encode("abc"), vec![id("abc")]);
        assert_eq!(t.encode("aaaaa"), vec![id("aaaa"), id("a")]);
        // Long and short merge loops must agree on every piece.
        let mut sc = Scratch::default();
        let mut state = 12345u64;
        for len in 2..200 {
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    b"aabbc"[(state % 5) as usize]
                })
                .collect();
            let mut a = Vec::new();
            t.bpe(&piece, &mut sc, &mut a);
            let mut b = Vec::new();
            sc.syms.clear();
            sc.syms.extend(piece.iter().map(|&x| t.byte_ids[x as usize]));
            t.bpe_long(&mut sc, &mut b);
            assert_eq!(a, b, "{}", String::from_utf8_lossy(&piece));
        }
    }

    #[test]
    fn added_tokens_and_bytes() {
        let t = tiny();
        let ids = t.encode("x<think>y</think>");
        assert_eq!(ids[1], t.special().think);
        assert_eq!(t.decode(&ids), b"x<think>y</think>");
        let raw = b"a\xffb\xe4\xb8c\x80";
        assert_eq!(t.decode(&t.encode_bytes(raw)), raw);
        assert!(t.encode("").is_empty());
    }
}
