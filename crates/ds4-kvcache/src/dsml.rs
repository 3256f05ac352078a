//! Finding DSML tool-call blocks in a cache text (KVCACHE.md §2.2), so that
//! the tool-id map trailer only records blocks the checkpoint really contains.

use crate::format::{tool_map_entry_ok, ToolMapEntry};

const FULL_START: &str = "<｜DSML｜tool_calls>";
const FULL_END: &str = "</｜DSML｜tool_calls>";
const SHORT_START: &str = "<DSML｜tool_calls>";
const SHORT_END: &str = "</DSML｜tool_calls>";

/// (start marker, end marker) forms in ds4's priority order; the earliest
/// start wins, and on equal starts the first form (the one including the
/// leading "\n\n") wins.
const FORMS: [(&str, &str, bool); 6] = [
    (FULL_START, FULL_END, true),
    (FULL_START, FULL_END, false),
    (SHORT_START, SHORT_END, true),
    (SHORT_START, SHORT_END, false),
    ("<tool_calls>", "</tool_calls>", true),
    ("<tool_calls>", "</tool_calls>", false),
];

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    hay[from..].windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// Byte ranges of the DSML tool blocks in `text`, in order, each from its
/// start form (including a leading "\n\n" when present) through its end tag.
pub fn tool_blocks(text: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let mut best: Option<(usize, usize)> = None;
        for (start, end, nl) in FORMS {
            let mut pat = Vec::with_capacity(start.len() + 2);
            if nl {
                pat.extend_from_slice(b"\n\n");
            }
            pat.extend_from_slice(start.as_bytes());
            let Some(s) = find(text, &pat, pos) else { continue };
            if matches!(best, Some((b, _)) if s >= b) {
                continue;
            }
            let Some(e) = find(text, end.as_bytes(), s) else { continue };
            best = Some((s, e + end.len()));
        }
        match best {
            Some((s, e)) => {
                out.push(s..e);
                pos = e;
            }
            None => return out,
        }
    }
}

/// Builds the tool-map trailer entries for a cache text: for each DSML block
/// of `text` (each distinct block once), `ids_for_block` returns the tool-call
/// ids whose remembered exact DSML equals that block (the server's tool
/// memory). Blocks unknown to tool memory contribute nothing.
pub fn tool_map_for_text<F>(text: &[u8], mut ids_for_block: F) -> Vec<ToolMapEntry>
where
    F: FnMut(&[u8]) -> Vec<String>,
{
    let mut out = Vec::new();
    let mut seen: Vec<&[u8]> = Vec::new();
    for r in tool_blocks(text) {
        let block = &text[r];
        if seen.contains(&block) {
            continue;
        }
        seen.push(block);
        for id in ids_for_block(block) {
            let e = ToolMapEntry { id, dsml: block.to_vec() };
            if tool_map_entry_ok(&e) {
                out.push(e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_blocks_in_order() {
        let b1 = "\n\n<｜DSML｜tool_calls><｜DSML｜invoke name=\"a\"></｜DSML｜invoke></｜DSML｜tool_calls>";
        let b2 = "<DSML｜tool_calls>x</DSML｜tool_calls>";
        let b3 = "\n\n<tool_calls>y</tool_calls>";
        let text = format!("sys<｜User｜>hi<｜Assistant｜></think>ok{b1}<｜end▁of▁sentence｜>more{b2} and{b3}tail");
        let t = text.as_bytes();
        let got: Vec<&[u8]> = tool_blocks(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(got, vec![b1.as_bytes(), b2.as_bytes(), b3.as_bytes()]);
    }

    #[test]
    fn unterminated_and_empty() {
        assert!(tool_blocks(b"").is_empty());
        assert!(tool_blocks("<｜DSML｜tool_calls> never closed".as_bytes()).is_empty());
        // An unterminated full form does not hide a later complete short form.
        let t = "<｜DSML｜tool_calls>open <tool_calls>z</tool_calls>".as_bytes();
        let got: Vec<&[u8]> = tool_blocks(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(got, vec![&b"<tool_calls>z</tool_calls>"[..]]);
    }

    #[test]
    fn tool_map_only_for_known_blocks() {
        // KVCACHE.md §9.8: only ids whose DSML block occurs in the text.
        let keep = "\n\n<｜DSML｜tool_calls>keep</｜DSML｜tool_calls>";
        let other = "\n\n<｜DSML｜tool_calls>other</｜DSML｜tool_calls>";
        let text = format!("a{keep}b{keep}c");
        let memory = [("call_keep", keep), ("call_keep2", keep), ("call_other", other)];
        let entries = tool_map_for_text(text.as_bytes(), |block| {
            memory.iter().filter(|(_, d)| d.as_bytes() == block).map(|(i, _)| i.to_string()).collect()
        });
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["call_keep", "call_keep2"]);
        assert!(entries.iter().all(|e| e.dsml == keep.as_bytes()));
    }
}
