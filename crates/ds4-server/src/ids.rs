//! Random ids from the OS RNG (SERVING.md §4.3: 16 random bytes, hex).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

static FALLBACK: AtomicU64 = AtomicU64::new(0);

fn fill(buf: &mut [u8]) {
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)).is_ok();
    if !ok {
        // No /dev/urandom: splitmix64 over time and a counter (unique, not secret).
        let mut x = ds4_engine::sampling::seed_from_time() ^ FALLBACK.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for b in buf.chunks_mut(8) {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            b.copy_from_slice(&z.to_le_bytes()[..b.len()]);
        }
    }
}

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_ids() {
        let a = super::random_hex(16);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, super::random_hex(16));
    }
}
