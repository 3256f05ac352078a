//! Byte layout of ds4 checkpoint files (KVCACHE.md §1-§2): the 48-byte KVC
//! header, the cache text, the opaque engine payload and the optional KTM
//! tool-id map trailer. Everything is little-endian.

use std::fmt;

/// Size of the fixed KVC header.
pub const HEADER_LEN: usize = 48;
/// Fixed header plus the `u32 text_len` that follows it.
pub const PREFIX_LEN: u64 = HEADER_LEN as u64 + 4;
pub const MAGIC: [u8; 3] = *b"KVC";
pub const VERSION: u8 = 1;

/// Extension flag bits (header byte 6).
pub const EXT_TOOL_MAP: u8 = 1 << 0;
pub const EXT_RESPONSES_VISIBLE: u8 = 1 << 1;
pub const EXT_THINKING_VISIBLE: u8 = 1 << 2;

pub const KTM_MAGIC: [u8; 3] = *b"KTM";
pub const KTM_VERSION: u8 = 1;
pub const KTM_HEADER_LEN: usize = 8;
pub const KTM_MAX_ID_LEN: u32 = 256;
pub const KTM_MAX_DSML_LEN: u32 = 512 * 1024 * 1024;

/// Why a checkpoint was written (header byte 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SaveReason {
    Unknown = 0,
    Cold = 1,
    Continued = 2,
    Evict = 3,
    Shutdown = 4,
    AgentSystem = 5,
    AgentSession = 6,
}

impl SaveReason {
    /// Values above 6 read as `Unknown` (forward compatibility with newer writers).
    pub fn from_code(c: u8) -> SaveReason {
        match c {
            1 => SaveReason::Cold,
            2 => SaveReason::Continued,
            3 => SaveReason::Evict,
            4 => SaveReason::Shutdown,
            5 => SaveReason::AgentSystem,
            6 => SaveReason::AgentSession,
            _ => SaveReason::Unknown,
        }
    }
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn name(self) -> &'static str {
        match self {
            SaveReason::Unknown => "unknown",
            SaveReason::Cold => "cold",
            SaveReason::Continued => "continued",
            SaveReason::Evict => "evict",
            SaveReason::Shutdown => "shutdown",
            SaveReason::AgentSystem => "agent-system",
            SaveReason::AgentSession => "agent-session",
        }
    }
}

impl fmt::Display for SaveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the file key (SHA-1 of the cache text) was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// Decoded bytes of the checkpoint's own tokens.
    TokenText,
    /// A Responses live binding's visible transcript (ext bit1).
    ResponsesVisible,
    /// A thinking live binding's visible transcript (ext bit2).
    ThinkingVisible,
}

impl KeyKind {
    pub fn from_ext(ext: u8) -> KeyKind {
        if ext & EXT_RESPONSES_VISIBLE != 0 {
            KeyKind::ResponsesVisible
        } else if ext & EXT_THINKING_VISIBLE != 0 {
            KeyKind::ThinkingVisible
        } else {
            KeyKind::TokenText
        }
    }
    pub fn ext_bit(self) -> u8 {
        match self {
            KeyKind::TokenText => 0,
            KeyKind::ResponsesVisible => EXT_RESPONSES_VISIBLE,
            KeyKind::ThinkingVisible => EXT_THINKING_VISIBLE,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::TokenText => "token-text",
            KeyKind::ResponsesVisible => "responses-visible",
            KeyKind::ThinkingVisible => "thinking-visible",
        }
    }
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The 48-byte fixed header plus `text_len` (the 4 bytes after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvcHeader {
    /// Raw version byte (only `VERSION` is understood).
    pub version: u8,
    /// Routed-expert quantisation bits of the writer (2 or 4 when valid).
    pub quant_bits: u8,
    pub reason: SaveReason,
    pub ext_flags: u8,
    pub tokens: u32,
    pub hits: u32,
    pub ctx_size: u32,
    pub created_at: u64,
    pub last_used: u64,
    pub payload_len: u64,
    pub text_len: u32,
}

/// Why a header (or the file it heads) is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer than 52 bytes available.
    Short(usize),
    BadMagic([u8; 3]),
    /// Written by another format version (not ours to interpret or delete).
    ForeignVersion(u8),
    ZeroTokens,
    /// Quant bits other than 2 or 4 (ds4 ignores such files).
    BadQuantBits(u8),
    /// The declared sections do not fit in the file / overflow u64.
    Truncated { need: u64, have: u64 },
}

impl HeaderError {
    /// Whether the file is broken for every reader (safe to delete) rather
    /// than merely written by a writer we do not understand.
    pub fn is_corrupt(&self) -> bool {
        !matches!(self, HeaderError::ForeignVersion(_) | HeaderError::BadQuantBits(_))
    }
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Short(n) => write!(f, "file too short for a header ({n} bytes)"),
            HeaderError::BadMagic(m) => write!(f, "bad magic {:02x}{:02x}{:02x}", m[0], m[1], m[2]),
            HeaderError::ForeignVersion(v) => write!(f, "unsupported version {v}"),
            HeaderError::ZeroTokens => write!(f, "token count is zero"),
            HeaderError::BadQuantBits(q) => write!(f, "unsupported quant bits {q}"),
            HeaderError::Truncated { need, have } => {
                write!(f, "truncated: sections need {need} bytes, file has {have}")
            }
        }
    }
}

pub(crate) fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

pub(crate) fn le64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

impl KvcHeader {
    /// Encodes the 48-byte header followed by `text_len` (52 bytes).
    pub fn encode(&self) -> [u8; PREFIX_LEN as usize] {
        let mut h = [0u8; PREFIX_LEN as usize];
        h[0..3].copy_from_slice(&MAGIC);
        h[3] = self.version;
        h[4] = self.quant_bits;
        h[5] = self.reason.code();
        h[6] = self.ext_flags;
        h[8..12].copy_from_slice(&self.tokens.to_le_bytes());
        h[12..16].copy_from_slice(&self.hits.to_le_bytes());
        h[16..20].copy_from_slice(&self.ctx_size.to_le_bytes());
        h[24..32].copy_from_slice(&self.created_at.to_le_bytes());
        h[32..40].copy_from_slice(&self.last_used.to_le_bytes());
        h[40..48].copy_from_slice(&self.payload_len.to_le_bytes());
        h[48..52].copy_from_slice(&self.text_len.to_le_bytes());
        h
    }

    /// Parses and validates the first 52 bytes of a file (KVCACHE.md §2.1
    /// validity rule, minus the size check which needs the file length).
    pub fn decode(b: &[u8]) -> Result<KvcHeader, HeaderError> {
        if b.len() < PREFIX_LEN as usize {
            if b.len() >= 3 && b[0..3] != MAGIC {
                return Err(HeaderError::BadMagic([b[0], b[1], b[2]]));
            }
            return Err(HeaderError::Short(b.len()));
        }
        if b[0..3] != MAGIC {
            return Err(HeaderError::BadMagic([b[0], b[1], b[2]]));
        }
        if b[3] != VERSION {
            return Err(HeaderError::ForeignVersion(b[3]));
        }
        let h = KvcHeader {
            version: b[3],
            quant_bits: b[4],
            reason: SaveReason::from_code(b[5]),
            ext_flags: b[6],
            tokens: le32(b, 8),
            hits: le32(b, 12),
            ctx_size: le32(b, 16),
            created_at: le64(b, 24),
            last_used: le64(b, 32),
            payload_len: le64(b, 40),
            text_len: le32(b, 48),
        };
        if h.tokens == 0 {
            return Err(HeaderError::ZeroTokens);
        }
        if h.quant_bits != 2 && h.quant_bits != 4 {
            return Err(HeaderError::BadQuantBits(h.quant_bits));
        }
        Ok(h)
    }

    /// Offset of the first payload byte.
    pub fn payload_offset(&self) -> u64 {
        PREFIX_LEN + self.text_len as u64
    }

    /// Offset just past the payload, where trailers start; `None` on overflow.
    pub fn payload_end(&self) -> Option<u64> {
        self.payload_offset().checked_add(self.payload_len)
    }

    /// The §2.1 size rule: the file must hold header, text and payload.
    pub fn check_file_len(&self, file_len: u64) -> Result<(), HeaderError> {
        match self.payload_end() {
            Some(need) if need <= file_len => Ok(()),
            Some(need) => Err(HeaderError::Truncated { need, have: file_len }),
            None => Err(HeaderError::Truncated { need: u64::MAX, have: file_len }),
        }
    }

    pub fn key_kind(&self) -> KeyKind {
        KeyKind::from_ext(self.ext_flags)
    }
}

/// Lowercase hex SHA-1 of `bytes` (the file key).
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// File name for a key.
pub fn file_name(key: &str) -> String {
    format!("{key}.kv")
}

/// Parses a directory entry name: exactly 40 hex digits + ".kv" (hex case
/// insensitive), returning the lowercase key.
pub fn parse_file_name(name: &str) -> Option<String> {
    let stem = name.strip_suffix(".kv")?;
    if stem.len() != 40 || !stem.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some(stem.to_ascii_lowercase())
}

/// One tool-call id → exact sampled DSML block (KTM trailer entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolMapEntry {
    pub id: String,
    pub dsml: Vec<u8>,
}

/// Serialized size of a KTM trailer with these entries (0 when empty: no
/// trailer is written then).
pub fn tool_map_len(entries: &[ToolMapEntry]) -> u64 {
    if entries.is_empty() {
        return 0;
    }
    KTM_HEADER_LEN as u64
        + entries.iter().map(|e| 8 + e.id.len() as u64 + e.dsml.len() as u64).sum::<u64>()
}

/// Whether an entry can be represented in the trailer.
pub fn tool_map_entry_ok(e: &ToolMapEntry) -> bool {
    let id = e.id.len() as u64;
    let d = e.dsml.len() as u64;
    (1..=KTM_MAX_ID_LEN as u64).contains(&id) && (1..=KTM_MAX_DSML_LEN as u64).contains(&d)
}

/// Encodes a KTM trailer; empty input gives an empty vector (no trailer).
/// Entries that cannot be represented are dropped (the caller filters with
/// `tool_map_entry_ok`; this keeps the count consistent regardless).
pub fn encode_tool_map(entries: &[ToolMapEntry]) -> Vec<u8> {
    let ok: Vec<&ToolMapEntry> = entries.iter().filter(|e| tool_map_entry_ok(e)).collect();
    if ok.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(
        KTM_HEADER_LEN + ok.iter().map(|e| 8 + e.id.len() + e.dsml.len()).sum::<usize>(),
    );
    out.extend_from_slice(&KTM_MAGIC);
    out.push(KTM_VERSION);
    out.extend_from_slice(&(ok.len() as u32).to_le_bytes());
    for e in ok {
        out.extend_from_slice(&(e.id.len() as u32).to_le_bytes());
        out.extend_from_slice(&(e.dsml.len() as u32).to_le_bytes());
        out.extend_from_slice(e.id.as_bytes());
        out.extend_from_slice(&e.dsml);
    }
    out
}

/// Decodes a KTM trailer from a reader positioned at its start. Follows ds4:
/// a missing/foreign section yields nothing, a count above `max_entries` rejects
/// the whole section, and reading stops silently at the first malformed entry
/// (entries before it are kept). Ids that are not UTF-8 are skipped.
pub fn decode_tool_map<R: std::io::Read>(r: &mut R, max_entries: u64) -> Vec<ToolMapEntry> {
    let mut out = Vec::new();
    let mut h = [0u8; KTM_HEADER_LEN];
    if r.read_exact(&mut h).is_err() || h[0..3] != KTM_MAGIC || h[3] != KTM_VERSION {
        return out;
    }
    let count = le32(&h, 4) as u64;
    if count > max_entries {
        return out;
    }
    for _ in 0..count {
        let mut lens = [0u8; 8];
        if r.read_exact(&mut lens).is_err() {
            break;
        }
        let id_len = le32(&lens, 0);
        let dsml_len = le32(&lens, 4);
        if id_len == 0 || id_len > KTM_MAX_ID_LEN || dsml_len == 0 || dsml_len > KTM_MAX_DSML_LEN {
            break;
        }
        let mut id = vec![0u8; id_len as usize];
        if r.read_exact(&mut id).is_err() {
            break;
        }
        // Read the block incrementally so a corrupt length cannot force a
        // huge allocation before we discover the file is shorter.
        let mut dsml = Vec::new();
        let got = std::io::Read::read_to_end(&mut std::io::Read::take(&mut *r, dsml_len as u64), &mut dsml);
        if got.is_err() || dsml.len() != dsml_len as usize {
            break;
        }
        if let Ok(id) = String::from_utf8(id) {
            out.push(ToolMapEntry { id, dsml });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_vectors() {
        // FIPS 180 test vectors.
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            sha1_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn header_layout_offsets() {
        let h = KvcHeader {
            version: 1,
            quant_bits: 2,
            reason: SaveReason::Shutdown,
            ext_flags: EXT_TOOL_MAP | EXT_THINKING_VISIBLE,
            tokens: 0x0102_0304,
            hits: 7,
            ctx_size: 32768,
            created_at: 0x1122_3344_5566_7788,
            last_used: 0x99,
            payload_len: 0xAABB_CCDD_EEFF,
            text_len: 5,
        };
        let b = h.encode();
        assert_eq!(&b[0..8], &[b'K', b'V', b'C', 1, 2, 4, 5, 0]);
        assert_eq!(&b[8..12], &[4, 3, 2, 1]);
        assert_eq!(&b[12..16], &[7, 0, 0, 0]);
        assert_eq!(&b[16..20], &32768u32.to_le_bytes());
        assert_eq!(&b[20..24], &[0, 0, 0, 0]);
        assert_eq!(&b[24..32], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        assert_eq!(&b[32..40], &[0x99, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[40..48], &[0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0, 0]);
        assert_eq!(&b[48..52], &[5, 0, 0, 0]);
        assert_eq!(KvcHeader::decode(&b).unwrap(), h);
        assert_eq!(h.key_kind(), KeyKind::ThinkingVisible);
    }

    #[test]
    fn header_rejections() {
        let good = KvcHeader {
            version: 1,
            quant_bits: 4,
            reason: SaveReason::Cold,
            ext_flags: 0,
            tokens: 10,
            hits: 0,
            ctx_size: 100,
            created_at: 1,
            last_used: 1,
            payload_len: 10,
            text_len: 3,
        }
        .encode();
        let mut b = good;
        b[0] = b'X';
        assert!(matches!(KvcHeader::decode(&b), Err(HeaderError::BadMagic(_))));
        let mut b = good;
        b[3] = 2;
        assert_eq!(KvcHeader::decode(&b), Err(HeaderError::ForeignVersion(2)));
        let mut b = good;
        b[4] = 3;
        assert_eq!(KvcHeader::decode(&b), Err(HeaderError::BadQuantBits(3)));
        let mut b = good;
        b[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(KvcHeader::decode(&b), Err(HeaderError::ZeroTokens));
        let mut b = good;
        b[5] = 200;
        assert_eq!(KvcHeader::decode(&b).unwrap().reason, SaveReason::Unknown);
        assert_eq!(KvcHeader::decode(&good[..51]), Err(HeaderError::Short(51)));
        let h = KvcHeader::decode(&good).unwrap();
        assert!(h.check_file_len(52 + 3 + 10).is_ok());
        assert!(h.check_file_len(52 + 3 + 9).is_err());
        let mut b = good;
        b[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(KvcHeader::decode(&b).unwrap().check_file_len(u64::MAX).is_err());
    }

    #[test]
    fn file_names() {
        let k = "A9993E364706816ABA3E25717850C26C9CD0D89D.kv";
        assert_eq!(parse_file_name(k).unwrap(), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert!(parse_file_name("a9993e364706816aba3e25717850c26c9cd0d89.kv").is_none());
        assert!(parse_file_name("a9993e364706816aba3e25717850c26c9cd0d89d.kv.tmp.1").is_none());
        assert!(parse_file_name("g9993e364706816aba3e25717850c26c9cd0d89d.kv").is_none());
        assert!(parse_file_name("sysprompt.kv").is_none());
    }

    #[test]
    fn tool_map_round_trip_and_malformed() {
        let entries = vec![
            ToolMapEntry { id: "call_1".into(), dsml: b"\n\n<x>".to_vec() },
            ToolMapEntry { id: "call_2".into(), dsml: b"\n\n<x>".to_vec() },
        ];
        let enc = encode_tool_map(&entries);
        assert_eq!(enc.len() as u64, tool_map_len(&entries));
        assert_eq!(&enc[0..8], &[b'K', b'T', b'M', 1, 2, 0, 0, 0]);
        assert_eq!(decode_tool_map(&mut &enc[..], 100), entries);
        // Count above the limit rejects the whole section.
        assert!(decode_tool_map(&mut &enc[..], 1).is_empty());
        // Truncation inside the second entry keeps the first.
        for cut in 8..enc.len() {
            let got = decode_tool_map(&mut &enc[..cut], 100);
            let first_end = 8 + 8 + 6 + 5;
            assert_eq!(got.len(), usize::from(cut >= first_end), "cut {cut}");
        }
        // A zero id length stops reading.
        let mut bad = enc.clone();
        bad[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(decode_tool_map(&mut &bad[..], 100).is_empty());
        assert!(encode_tool_map(&[]).is_empty());
    }
}
