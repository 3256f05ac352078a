//! Bridge to the DSML tool-call parser (SERVING.md §4). The parser itself
//! lives in `ds4_tok::dsml`; this module adapts it to the server's needs.

use crate::output::TOOL_STARTS;

#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    pub name: String,
    /// Compact JSON object text for the wire (§4.3).
    pub arguments: String,
}

/// End tag matching a start form.
fn end_tag(start: &str) -> &'static str {
    if start.contains("｜DSML｜") {
        "</｜DSML｜tool_calls>"
    } else if start.contains("DSML｜") {
        "</DSML｜tool_calls>"
    } else {
        "</tool_calls>"
    }
}

/// Has the tool block (text starting at its start tag) been closed?
pub fn block_closed(block: &str) -> bool {
    let start = TOOL_STARTS.iter().find(|s| block.trim_start_matches('\n').starts_with(s.trim_start_matches('\n')));
    match start {
        Some(s) => block.contains(end_tag(s)),
        None => false,
    }
}

/// Parse one tool block starting at its start form. Returns the calls and
/// the byte length of the raw block (through the end tag).
pub fn parse_block(_block: &str) -> Result<(Vec<ParsedCall>, usize), String> {
    Err("DSML parser not integrated yet".into())
}
