//! Stop strings (SERVING.md §5.2, §8, §11 #22): the earliest match among all
//! stop strings truncates the text; streaming holds back `max_len − 1` bytes so
//! a partial stop string never reaches the client.

#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<Vec<u8>>,
    max_len: usize,
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> Self {
        let stops: Vec<Vec<u8>> = stops.iter().filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec()).collect();
        let max_len = stops.iter().map(|s| s.len()).max().unwrap_or(0);
        StopMatcher { stops, max_len }
    }

    pub fn is_empty(&self) -> bool {
        self.stops.is_empty()
    }

    /// Bytes that must be held back at the end of unfinished text.
    pub fn holdback(&self) -> usize {
        self.max_len.saturating_sub(1)
    }

    /// Earliest match start in `text`, searching only matches that end after
    /// `from` (incremental search: earlier regions were already checked).
    pub fn find(&self, text: &[u8], from: usize) -> Option<usize> {
        let start = from.saturating_sub(self.max_len.saturating_sub(1));
        let mut best: Option<usize> = None;
        for s in &self.stops {
            if text.len() < s.len() {
                continue;
            }
            let hay = &text[start.min(text.len())..];
            if let Some(p) = memfind(hay, s) {
                let p = p + start;
                best = Some(best.map_or(p, |b: usize| b.min(p)));
            }
        }
        best
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_match_and_incremental() {
        let m = StopMatcher::new(&["world".into(), "lo w".into(), "".into()]);
        assert_eq!(m.holdback(), 4);
        assert_eq!(m.find(b"hello world", 0), Some(3));
        // Feed byte by byte: the first position where a match appears is the
        // earliest one.
        let text = b"say hello world";
        let mut hit = None;
        for n in 1..=text.len() {
            if let Some(p) = m.find(&text[..n], n - 1) {
                hit = Some((n, p));
                break;
            }
        }
        assert_eq!(hit, Some((11, 7)));
        assert!(StopMatcher::new(&[]).find(b"abc", 0).is_none());
    }
}
