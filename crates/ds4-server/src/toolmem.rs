//! Tool-call memory for exact DSML replay (SERVING.md §6.3): tool-call id →
//! the raw DSML block the model sampled. LRU on ids, bounded by id count and
//! by the bytes of the (de-duplicated) blocks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub const DEFAULT_MAX_BYTES: usize = 512 << 20;

#[derive(Debug)]
pub struct ToolMemory {
    max_ids: usize,
    max_bytes: usize,
    clock: u64,
    ids: HashMap<String, (Arc<str>, u64, bool)>,
    lru: BTreeMap<u64, String>,
    /// block → number of ids pointing at it (de-duplication by content).
    blocks: HashMap<Arc<str>, usize>,
    bytes: usize,
}

impl ToolMemory {
    pub fn new(max_ids: usize, max_bytes: usize) -> Self {
        ToolMemory { max_ids, max_bytes, clock: 0, ids: HashMap::new(), lru: BTreeMap::new(), blocks: HashMap::new(), bytes: 0 }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// Remember `ids` → `block`. `from_disk` marks entries imported from a
    /// cache file's tool map (KVCACHE.md §2.2).
    pub fn remember(&mut self, ids: &[String], block: &str, from_disk: bool) {
        if block.is_empty() {
            return;
        }
        let shared: Arc<str> = match self.blocks.get_key_value(block) {
            Some((k, _)) => k.clone(),
            None => Arc::from(block),
        };
        for id in ids {
            if id.is_empty() {
                continue;
            }
            self.remove(id);
            self.clock += 1;
            let c = self.blocks.entry(shared.clone()).or_insert(0);
            if *c == 0 {
                self.bytes += shared.len();
            }
            *c += 1;
            self.ids.insert(id.clone(), (shared.clone(), self.clock, from_disk));
            self.lru.insert(self.clock, id.clone());
        }
        self.prune();
    }

    fn remove(&mut self, id: &str) {
        if let Some((block, stamp, _)) = self.ids.remove(id) {
            self.lru.remove(&stamp);
            if let Some(c) = self.blocks.get_mut(&block) {
                *c -= 1;
                if *c == 0 {
                    self.blocks.remove(&block);
                    self.bytes -= block.len();
                }
            }
        }
    }

    fn prune(&mut self) {
        while self.ids.len() > self.max_ids || (self.bytes > self.max_bytes && self.ids.len() > 1) {
            let Some((_, oldest)) = self.lru.iter().next().map(|(k, v)| (*k, v.clone())) else { break };
            self.remove(&oldest);
        }
    }

    /// Raw block for `id` (touches the LRU).
    pub fn get(&mut self, id: &str) -> Option<Arc<str>> {
        let (block, stamp, disk) = self.ids.get(id)?.clone();
        self.lru.remove(&stamp);
        self.clock += 1;
        self.lru.insert(self.clock, id.to_string());
        self.ids.insert(id.to_string(), (block.clone(), self.clock, disk));
        Some(block)
    }

    /// The block to replay for an assistant message: only when every call id
    /// is known and all map to the same block (§3.5).
    pub fn replay_block(&mut self, ids: &[&str]) -> Option<Arc<str>> {
        if ids.is_empty() {
            return None;
        }
        let mut out: Option<Arc<str>> = None;
        for id in ids {
            let b = self.get(id)?;
            match &out {
                None => out = Some(b),
                Some(o) if Arc::ptr_eq(o, &b) || **o == *b => {}
                Some(_) => return None,
            }
        }
        out
    }

    /// Ids whose remembered block is exactly `block` (for a cache file's
    /// tool-id map, KVCACHE.md §2.2). Linear: stores are rare.
    pub fn ids_for_block(&self, block: &[u8]) -> Vec<String> {
        let mut v: Vec<String> =
            self.ids.iter().filter(|(_, (b, _, _))| b.as_bytes() == block).map(|(k, _)| k.clone()).collect();
        v.sort();
        v
    }

    /// All (id, block) pairs, for writing cache-file tool maps.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ids.iter().map(|(k, (b, _, _))| (k.as_str(), &**b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_rules_and_lru() {
        let mut m = ToolMemory::new(3, DEFAULT_MAX_BYTES);
        m.remember(&["a".into(), "b".into()], "\n\nBLOCK1", false);
        m.remember(&["c".into()], "\n\nBLOCK2", false);
        assert_eq!(m.replay_block(&["a", "b"]).as_deref(), Some("\n\nBLOCK1"));
        assert_eq!(m.replay_block(&["a", "c"]), None); // different blocks
        assert_eq!(m.replay_block(&["a", "zz"]), None); // unknown id
        assert_eq!(m.bytes, 16);
        // "a","b","c" known; touching a then adding d prunes the oldest (b).
        m.get("a");
        m.remember(&["d".into()], "\n\nBLOCK1", false);
        assert!(!m.contains("b"));
        assert!(m.contains("a") && m.contains("c") && m.contains("d"));
        assert_eq!(m.bytes, 16); // BLOCK1 stored once
        assert_eq!(m.ids_for_block(b"\n\nBLOCK1"), vec!["a".to_string(), "d".to_string()]);
        assert!(m.ids_for_block(b"\n\nBLOCK3").is_empty());
    }

    #[test]
    fn byte_bound() {
        let mut m = ToolMemory::new(100, 10);
        m.remember(&["x".into()], "123456", false);
        m.remember(&["y".into()], "abcdef", false);
        assert!(!m.contains("x") && m.contains("y"));
    }
}
