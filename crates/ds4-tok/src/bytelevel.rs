//! The GPT-2 byte alphabet: every byte is shown as a printable char in vocabulary strings.

/// Char that represents byte `b` in vocabulary strings.
pub fn byte_to_char(b: u8) -> char {
    let b32 = b as u32;
    let printable = (0x21..=0x7e).contains(&b32) || (0xa1..=0xac).contains(&b32) || (0xae..=0xff).contains(&b32);
    if printable {
        return char::from_u32(b32).unwrap_or('\u{fffd}');
    }
    // Non-printable bytes are numbered in increasing order after 255.
    let mut n = 0u32;
    for x in 0..b32 {
        let p = (0x21..=0x7e).contains(&x) || (0xa1..=0xac).contains(&x) || (0xae..=0xff).contains(&x);
        if !p {
            n += 1;
        }
    }
    char::from_u32(256 + n).unwrap_or('\u{fffd}')
}

/// Inverse table: char -> byte, for chars U+0000..U+0143.
pub struct ByteDecoder {
    table: [i16; 0x144],
}

impl ByteDecoder {
    pub fn new() -> Self {
        let mut table = [-1i16; 0x144];
        for b in 0..=255u8 {
            table[byte_to_char(b) as usize] = b as i16;
        }
        ByteDecoder { table }
    }

    /// Raw bytes of a byte-level vocabulary string, or None if it has a char outside the alphabet.
    pub fn decode(&self, s: &str) -> Option<Vec<u8>> {
        s.chars()
            .map(|c| match self.table.get(c as usize) {
                Some(&b) if b >= 0 => Some(b as u8),
                _ => None,
            })
            .collect()
    }
}

/// The byte-level form of raw bytes (for display, e.g. `Ġ` for a space).
pub fn bytes_to_vocab_string(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| byte_to_char(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet() {
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(b'a'), 'a');
        assert_eq!(byte_to_char(0), 'Ā');
        let d = ByteDecoder::new();
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(d.decode(&bytes_to_vocab_string(&all)).unwrap(), all);
        assert_eq!(d.decode("｜"), None);
    }
}
