//! DSML output parsing (SERVING.md §4 and the §11 scenarios 9-15, 19-20), non-streaming and
//! streaming. Expected values are written from the spec, and parsed tool arguments are
//! checked by an independent JSON parser (serde_json).

use ds4_tok::chat::{dsml_tool_calls, ToolCall};
use ds4_tok::dsml::{
    parse_output, resolve_finish, DecodeState, DecodeTracker, Finish, ParsedOutput, Spelling, StreamEvent, StreamParser,
    ToolMarkers,
};
use serde_json::{json, Value};

fn args_json(p: &ParsedOutput, i: usize) -> Value {
    serde_json::from_str(&p.calls[i].arguments).expect("internal arguments are JSON")
}

const BLOCK: &str = "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"bash\">\n<｜DSML｜parameter name=\"command\" string=\"true\">ls -la 2&gt;&amp;1 &amp;&amp; echo \"done\" ü</｜DSML｜parameter>\n<｜DSML｜parameter name=\"timeout\" string=\"false\">{ \"s\": [1, 2] }</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

#[test]
fn thinking_split_and_full_dsml() {
    let text = format!("Let me look.</think>Running it.{BLOCK}");
    let p = parse_output(&text, true);
    assert_eq!(p.reasoning, "Let me look.");
    assert_eq!(p.content, "Running it.");
    assert!(!p.malformed);
    assert_eq!(p.spelling, Some(Spelling::Dsml));
    assert_eq!(p.raw_dsml.as_deref(), Some(BLOCK));
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].name, "bash");
    // Internal form keeps generation order with ", " / ": " separators; entities decoded.
    assert_eq!(p.calls[0].arguments, r#"{"command": "ls -la 2>&1 && echo \"done\" ü", "timeout": {"s":[1,2]}}"#);
    assert_eq!(p.calls[0].compact_arguments(), r#"{"command":"ls -la 2>&1 && echo \"done\" ü","timeout":{"s":[1,2]}}"#);
    assert_eq!(args_json(&p, 0), json!({"command": "ls -la 2>&1 && echo \"done\" ü", "timeout": {"s": [1, 2]}}));
    // A leading <think> is stripped.
    assert_eq!(parse_output("<think>r</think>c", true).reasoning, "r");
}

#[test]
fn short_and_xml_spellings() {
    // §11.9: first bar missing.
    let short = "r</think>ok\n\n<DSML｜tool_calls>\n<DSML｜invoke name=\"f\">\n<DSML｜parameter name=\"a\" string=\"true\">x</DSML｜parameter>\n</DSML｜invoke>\n</DSML｜tool_calls>";
    let p = parse_output(short, true);
    assert_eq!((p.reasoning.as_str(), p.content.as_str(), p.spelling), ("r", "ok", Some(Spelling::Short)));
    assert_eq!(args_json(&p, 0), json!({"a": "x"}));
    let xml = "sure<tool_calls><invoke name=\"g\"><parameter name=\"n\" string=\"false\">3</parameter></invoke><invoke name=\"h\"></invoke></tool_calls>";
    let p = parse_output(xml, false);
    assert_eq!((p.content.as_str(), p.spelling), ("sure", Some(Spelling::Xml)));
    assert_eq!(p.calls.len(), 2);
    assert_eq!(args_json(&p, 0), json!({"n": 3}));
    assert_eq!(p.calls[1].arguments, "{}");
    // Priority: "\n\n"+full beats an earlier full start without the blank line.
    let two = "a<｜DSML｜tool_calls>junk\n\n<｜DSML｜tool_calls></｜DSML｜tool_calls>";
    let p = parse_output(two, false);
    assert!(!p.malformed);
    assert_eq!(p.content, "a<｜DSML｜tool_calls>junk");
    assert_eq!(p.raw_dsml.as_deref(), Some("\n\n<｜DSML｜tool_calls></｜DSML｜tool_calls>"));
}

#[test]
fn loose_nested_parameters() {
    // §11.10: a parameter without `string` whose body starts with parameters is an object.
    let t = "<｜DSML｜tool_calls><｜DSML｜invoke name=\"edit\"><｜DSML｜parameter name=\"path\">a.txt</｜DSML｜parameter>\
<｜DSML｜parameter name=\"edits\">\n <｜DSML｜parameter name=\"oldText\">x &amp; y</｜DSML｜parameter><｜DSML｜parameter name=\"n\" string=\"false\">[1, 2]</｜DSML｜parameter>\n</｜DSML｜parameter>\
<｜DSML｜parameter name=\"after\" string=\"false\"></｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>";
    let p = parse_output(t, false);
    assert!(!p.malformed, "{p:?}");
    assert_eq!(args_json(&p, 0), json!({"path": "a.txt", "edits": {"oldText": "x & y", "n": [1, 2]}, "after": null}));
    // The outer end tag is optional (here the nested parameter is the last one).
    let t2 = t.replace("\n</｜DSML｜parameter><｜DSML｜parameter name=\"after\" string=\"false\"></｜DSML｜parameter>", "");
    assert_ne!(t2, t);
    assert_eq!(args_json(&parse_output(&t2, false), 0), json!({"path": "a.txt", "edits": {"oldText": "x & y", "n": [1, 2]}}));
}

#[test]
fn malformed_blocks_are_content() {
    // §11.11: invoke without name.
    let t = "r</think>text\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
    let p = parse_output(t, true);
    assert!(p.malformed);
    assert_eq!(p.content, t);
    assert!(p.reasoning.is_empty() && p.calls.is_empty());
    // Unterminated block (max_tokens mid-call), unknown element, parameter without name.
    for bad in [
        "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">par",
        "<｜DSML｜tool_calls>\n<other/>\n</｜DSML｜tool_calls>",
        "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter string=\"true\">v</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>",
        "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"e\"></｜DSML｜invoke></｜DSML｜tool_calls>",
    ] {
        let p = parse_output(bad, false);
        assert!(p.malformed, "{bad}");
        assert_eq!(p.content, bad);
    }
}

#[test]
fn dsml_inside_thinking_is_not_executable() {
    // §11.12
    let t = format!("I could call{BLOCK} but no.</think>Final answer.");
    let p = parse_output(&t, true);
    assert!(p.calls.is_empty());
    assert_eq!(p.reasoning, format!("I could call{BLOCK} but no."));
    assert_eq!(p.content, "Final answer.");
    // No </think> at all: [DECISION] unfinished reasoning stays reasoning.
    let p = parse_output(&format!("<think>still thinking{BLOCK}"), true);
    assert_eq!(p.reasoning, format!("still thinking{BLOCK}"));
    assert!(p.content.is_empty() && p.calls.is_empty());
    // Tool search starts after the LAST </think>; the reasoning split uses the first.
    let t = format!("a</think>b</think>c{BLOCK}");
    let p = parse_output(&t, true);
    assert_eq!((p.reasoning.as_str(), p.content.as_str(), p.calls.len()), ("a", "b</think>c", 1));
}

#[test]
fn separator_whitespace_is_not_content() {
    // §11.13
    let p = parse_output(&format!("r</think>Hello. \t\n{BLOCK}"), true);
    assert_eq!(p.content, "Hello.");
    let p = parse_output(&format!("r</think>{BLOCK}"), true);
    assert_eq!(p.content, "");
    assert_eq!(p.calls.len(), 1);
}

#[test]
fn non_thinking_and_no_tools() {
    let p = parse_output("plain answer", false);
    assert_eq!((p.reasoning.as_str(), p.content.as_str()), ("", "plain answer"));
    assert!(p.calls.is_empty() && !p.malformed && p.raw_dsml.is_none());
    // Orphan end marker (§11.15): ignored, text stays content.
    let p = parse_output("x</｜DSML｜tool_calls> y", false);
    assert_eq!(p.content, "x</｜DSML｜tool_calls> y");
    let mut m = ToolMarkers::new(false);
    let text = b"x</\xef\xbd\x9cDSML\xef\xbd\x9ctool_calls> y";
    m.update(text, text);
    assert!(m.orphan_end && !m.saw_start && !m.saw_end);
}

#[test]
fn parse_render_round_trip() {
    // Rendering the parsed calls canonically and parsing again gives the same calls, so the
    // rendered history is a stable cache key (SERVING.md §11.8).
    let calls = vec![
        ToolCall { id: "a".into(), name: "w".into(), arguments: r#"{"s": "1 < 2 && </｜DSML｜parameter> ok", "n": [1, {"k": "v"}], "b": true}"#.into() },
        ToolCall { id: "b".into(), name: "empty".into(), arguments: "{}".into() },
    ];
    let block = dsml_tool_calls(&calls);
    let p = parse_output(&format!("c{block}"), false);
    assert_eq!(p.calls.len(), 2);
    assert_eq!(args_json(&p, 0), json!({"s": "1 < 2 && </｜DSML｜parameter> ok", "n": [1, {"k": "v"}], "b": true}));
    let again: Vec<ToolCall> = p.calls.iter().map(|c| ToolCall { id: String::new(), name: c.name.clone(), arguments: c.arguments.clone() }).collect();
    assert_eq!(dsml_tool_calls(&again), block);
}

#[test]
fn finish_reason_rules() {
    let mut m = ToolMarkers::new(false);
    let open = "t<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">";
    m.update(open.as_bytes(), open.as_bytes());
    assert!(m.saw_start && !m.saw_end);
    let p = parse_output(open, false);
    assert_eq!(resolve_finish(Finish::Length, true, &m, &p), Finish::Error);
    assert_eq!(resolve_finish(Finish::Length, false, &m, &p), Finish::Length);
    let full = format!("t{BLOCK}");
    let mut m = ToolMarkers::new(false);
    m.update(full.as_bytes(), full.as_bytes());
    assert!(m.saw_end);
    assert_eq!(resolve_finish(Finish::ToolCalls, true, &m, &parse_output(&full, false)), Finish::ToolCalls);
    let bad = "t<｜DSML｜tool_calls><｜DSML｜invoke></｜DSML｜invoke></｜DSML｜tool_calls>";
    let mut m = ToolMarkers::new(false);
    m.update(bad.as_bytes(), bad.as_bytes());
    assert_eq!(resolve_finish(Finish::ToolCalls, true, &m, &parse_output(bad, false)), Finish::Stop);
    // Markers inside reasoning do not count.
    let mut m = ToolMarkers::new(true);
    let mut text = Vec::new();
    for piece in ["hm", BLOCK, " done", "</think>", "answer"] {
        text.extend_from_slice(piece.as_bytes());
        m.update(&text, piece.as_bytes());
    }
    assert!(!m.saw_start && !m.saw_end);
}

#[test]
fn decode_tracker_states() {
    let text = "x\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">hi</｜DSML｜parameter>\n<｜DSML｜parameter name=\"b\" string=\"false\">[\"s\", 1]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>tail";
    let at = |needle: &str, extra: usize| {
        let end = text.find(needle).unwrap() + needle.len() + extra;
        let mut t = DecodeTracker::new();
        // Byte-by-byte updates must agree with one update on the whole prefix.
        let mut t2 = DecodeTracker::new();
        for k in 1..=end {
            t2.update(&text.as_bytes()[..k]);
        }
        let s = t.update(&text.as_bytes()[..end]);
        assert_eq!(s, t2.state(), "{needle}+{extra}");
        s
    };
    assert_eq!(at("x", 0), DecodeState::Outside);
    assert_eq!(at("<｜DSML｜tool_calls>", 0), DecodeState::Structural);
    assert_eq!(at("string=\"true\">", 0), DecodeState::StringBody);
    assert_eq!(at("string=\"true\">h", 0), DecodeState::StringBody);
    assert_eq!(at("hi</", 0), DecodeState::Structural);
    assert_eq!(at("string=\"false\">", 0), DecodeState::JsonStructural);
    assert_eq!(at("string=\"false\">[\"", 0), DecodeState::JsonString);
    assert_eq!(at("string=\"false\">[\"s\"", 0), DecodeState::JsonStructural);
    assert_eq!(at("</｜DSML｜tool_calls>", 0), DecodeState::Outside);
    assert_eq!(at("tail", 0), DecodeState::Outside);
    assert!(DecodeState::StringBody.uses_payload_sampling() && !DecodeState::Structural.uses_payload_sampling());
}

// ------------------------------------------------------------------------------------------
// Streaming

/// Merged view of a stream: reasoning, content, per-call (name, concatenated args), and the
/// order in which the kinds first appeared.
#[derive(Debug, PartialEq, Default)]
struct Collected {
    reasoning: String,
    reasoning_done: usize,
    content: String,
    calls: Vec<(String, String, bool)>,
    order: Vec<&'static str>,
}

/// `invalid_input`: the generated bytes held invalid UTF-8, so U+FFFD may legitimately appear.
fn collect_with(events: &[StreamEvent], invalid_input: bool) -> Collected {
    let mut c = Collected::default();
    let note = |c: &mut Collected, k: &'static str| {
        if c.order.last() != Some(&k) {
            c.order.push(k);
        }
    };
    for e in events {
        match e {
            StreamEvent::Reasoning(s) => {
                assert!(!s.is_empty() && (invalid_input || !s.contains('\u{fffd}')));
                c.reasoning.push_str(s);
                note(&mut c, "reasoning");
            }
            StreamEvent::ReasoningDone => c.reasoning_done += 1,
            StreamEvent::Content(s) => {
                assert!(!s.is_empty() && (invalid_input || !s.contains('\u{fffd}')));
                c.content.push_str(s);
                note(&mut c, "content");
            }
            StreamEvent::ToolCallStart { index, name } => {
                assert_eq!(*index, c.calls.len());
                c.calls.push((name.clone(), String::new(), false));
                note(&mut c, "tool");
            }
            StreamEvent::ToolCallArgs { index, fragment } => {
                assert!(!fragment.is_empty() && (invalid_input || !fragment.contains('\u{fffd}')));
                assert!(!c.calls[*index].2);
                c.calls[*index].1.push_str(fragment);
            }
            StreamEvent::ToolCallEnd { index } => c.calls[*index].2 = true,
        }
    }
    c
}

fn stream(chunks: &[&[u8]], thinking: bool, tools: bool) -> (Collected, ds4_tok::dsml::StreamEnd) {
    let mut p = StreamParser::new(thinking, tools);
    let mut ev = Vec::new();
    for c in chunks {
        ev.extend(p.push(c));
    }
    let end = p.finish();
    ev.extend(end.events.clone());
    let invalid = std::str::from_utf8(&chunks.concat()).is_err();
    (collect_with(&ev, invalid), end)
}

const STREAM_TEXT: &str = "<think>Check the tool output → 中文.</think>It is sunny. \n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"bash\">\n<｜DSML｜parameter name=\"command\" string=\"true\">echo partial &amp;&amp; done 😀 \"q\"\n</｜DSML｜parameter>\n<｜DSML｜parameter name=\"n\" string=\"false\">[1,2,3]</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"read\">\n<｜DSML｜parameter name=\"path\" string=\"true\">/tmp/a&lt;b&gt;</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

fn expected_stream() -> Collected {
    Collected {
        reasoning: "Check the tool output → 中文.".into(),
        reasoning_done: 1,
        content: "It is sunny.".into(),
        calls: vec![
            ("bash".into(), "{\"command\":\"echo partial && done 😀 \\\"q\\\"\\n\",\"n\":[1,2,3]}".into(), true),
            ("read".into(), "{\"path\":\"/tmp/a<b>\"}".into(), true),
        ],
        order: vec!["reasoning", "content", "tool"],
    }
}

#[test]
fn stream_one_shot_and_bytewise() {
    let want = expected_stream();
    let (got, end) = stream(&[STREAM_TEXT.as_bytes()], true, true);
    assert_eq!(got, want);
    assert_eq!(end.streamed_calls, 2);
    assert!(end.saw_think_end);
    // The streamed arguments are valid JSON equal to the parsed calls' compact form.
    for (i, (_, args, _)) in want.calls.iter().enumerate() {
        let a: Value = serde_json::from_str(args).unwrap();
        let b: Value = serde_json::from_str(&end.parsed.calls[i].compact_arguments()).unwrap();
        assert_eq!(a, b);
    }
    let bytes: Vec<&[u8]> = STREAM_TEXT.as_bytes().chunks(1).collect();
    assert_eq!(stream(&bytes, true, true).0, want);
}

#[test]
fn stream_split_at_every_byte_position() {
    let want = expected_stream();
    let b = STREAM_TEXT.as_bytes();
    for k in 0..=b.len() {
        let (got, end) = stream(&[&b[..k], &b[k..]], true, true);
        assert_eq!(got, want, "split at byte {k}");
        assert_eq!(end.streamed_calls, 2, "split at byte {k}");
    }
    // Three-way splits around the tool block (every pair of cut points in it would be slow;
    // take every cut inside the block against a few fixed second cuts).
    let block_start = STREAM_TEXT.find("<｜DSML｜tool_calls>").unwrap();
    for k in block_start..b.len() {
        for d in [1, 2, 3, 5, 8, 13] {
            let j = (k + d).min(b.len());
            assert_eq!(stream(&[&b[..k], &b[k..j], &b[j..]], true, true).0, want, "cuts {k},{j}");
        }
    }
}

#[test]
fn stream_holds_partials() {
    // §11.20: incomplete tags wait (no premature header), partial entity held, partial UTF-8
    // held, raw JSON streamed as generated.
    let mut p = StreamParser::new(false, true);
    assert_eq!(p.push_str("ok"), vec![StreamEvent::Content("ok".into())]);
    // Separator whitespace and a partial tag are held.
    assert_eq!(p.push_str(" <｜DSML｜tool_"), vec![]);
    assert_eq!(p.push_str("calls>\n<｜DSML｜invoke name=\"bash"), vec![]);
    let ev = p.push_str("\">\n<｜DSML｜parameter name=\"c\" string=\"true\">echo partial &amp");
    assert_eq!(
        ev,
        vec![
            StreamEvent::ToolCallStart { index: 0, name: "bash".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: "{".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: "\"c\":\"".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: "echo partial ".into() },
        ]
    );
    assert_eq!(p.push_str(";"), vec![StreamEvent::ToolCallArgs { index: 0, fragment: "&".into() }]);
    assert_eq!(p.push(b" \xf0\x9f"), vec![StreamEvent::ToolCallArgs { index: 0, fragment: " ".into() }]);
    assert_eq!(p.push(b"\x98\x80</\xef\xbd\x9cDSML"), vec![StreamEvent::ToolCallArgs { index: 0, fragment: "😀".into() }]);
    let ev = p.push_str("｜parameter>\n<｜DSML｜parameter name=\"n\" string=\"false\">[1,2,3");
    assert_eq!(
        ev,
        vec![
            StreamEvent::ToolCallArgs { index: 0, fragment: "\"".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: ",\"n\":".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: "[1,2,3".into() },
        ]
    );
    let ev = p.push_str("]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
    assert_eq!(
        ev,
        vec![
            StreamEvent::ToolCallArgs { index: 0, fragment: "]".into() },
            StreamEvent::ToolCallArgs { index: 0, fragment: "}".into() },
            StreamEvent::ToolCallEnd { index: 0 },
        ]
    );
    assert!(p.markers().saw_start && p.markers().saw_end);
    let end = p.finish();
    assert!(end.events.is_empty());
    assert_eq!(end.parsed.calls[0].compact_arguments(), r#"{"c":"echo partial & 😀","n":[1,2,3]}"#);
}

#[test]
fn stream_reasoning_holds_partial_think_end() {
    // §11.19: no tools; </think> split across pushes; reasoning never shows a partial tag.
    let text = "Reasoning here.</think>Answer <b>bold</b> ok.";
    let b = text.as_bytes();
    for k in 0..=b.len() {
        let (got, _) = stream(&[&b[..k], &b[k..]], true, false);
        assert_eq!(got.reasoning, "Reasoning here.", "split {k}");
        assert_eq!(got.content, "Answer <b>bold</b> ok.", "split {k}");
    }
    // Generation cut inside reasoning: everything is reasoning, no ReasoningDone.
    let (got, end) = stream(&[b"<think>unfinished </thi"], true, false);
    assert_eq!((got.reasoning.as_str(), got.reasoning_done, got.content.as_str()), ("unfinished </thi", 0, ""));
    assert!(!end.saw_think_end);
    assert_eq!(end.parsed.reasoning, "unfinished </thi");
    // A lone "<thi" at the very start is held until it cannot be "<think>".
    let mut p = StreamParser::new(true, false);
    assert_eq!(p.push_str("<thi"), vec![]);
    assert_eq!(p.push_str("s is it"), vec![StreamEvent::Reasoning("<thi".into())]);
}

#[test]
fn stream_without_tools_passes_dsml_as_content() {
    let text = format!("x{BLOCK}");
    let (got, end) = stream(&[text.as_bytes()], false, false);
    assert_eq!(got.content, text);
    assert!(got.calls.is_empty());
    // The final parse still finds the call (parsing runs even without tools).
    assert_eq!(end.parsed.calls.len(), 1);
    assert_eq!(end.streamed_calls, 0);
}

#[test]
fn stream_malformed_invoke_stops_projection() {
    let text = "a\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
    let (got, end) = stream(&[text.as_bytes()], false, true);
    assert_eq!(got.content, "a");
    assert!(got.calls.is_empty());
    assert!(end.parsed.malformed);
    assert_eq!(end.parsed.content, text);
}

#[test]
fn stream_invalid_utf8_never_panics() {
    let mut junk: Vec<u8> = (0..=255u8).collect();
    junk.extend_from_slice("</think>x<｜DSML｜tool_calls><｜DSML｜invoke name=\"\u{0}\"><｜DSML｜parameter name=\"a\" string=\"true\">\u{ff}\u{fe}".as_bytes());
    junk.extend_from_slice(b"\xff\xfe\xc3</\xef\xbd\x9cDSML\xef\xbd\x9cparameter>");
    for tools in [false, true] {
        for thinking in [false, true] {
            let mut p = StreamParser::new(thinking, tools);
            for c in junk.chunks(3) {
                let _ = p.push(c);
            }
            let _ = p.finish();
        }
    }
}

#[test]
fn stream_result_does_not_depend_on_chunking() {
    // Random texts built from DSML fragments, tags, entities, multi-byte chars and whitespace:
    // the merged events must be the same whether the text arrives at once, byte by byte, or
    // in random chunks.
    let frags: [&str; 30] = [
        "<think>", "</think>", "</thi", "\n\n", " ", "\t", "text", "中文", "😀", "é", "&amp;", "&lt;", "&am", "<", ">",
        "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", "<｜DSML｜invoke name=\"f\">", "</｜DSML｜invoke>",
        "<｜DSML｜parameter name=\"a\" string=\"true\">", "<｜DSML｜parameter name=\"b\" string=\"false\">",
        "</｜DSML｜parameter>", "[1, \"x\"]", "\"", "<DSML｜tool_calls>", "<tool_calls>", "<invoke name=\"g\">",
        "<｜DSML｜invoke>", "<｜DSML｜parameter name=\"c\">", "｜DSML｜",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for case in 0..400 {
        let mut text = Vec::new();
        // Bias towards well-formed blocks half of the time.
        if case % 2 == 0 {
            text.extend_from_slice(STREAM_TEXT.as_bytes());
            let cut = rnd(text.len());
            text.truncate(cut);
        }
        for _ in 0..rnd(25) {
            text.extend_from_slice(frags[rnd(frags.len())].as_bytes());
        }
        if rnd(4) == 0 {
            let i = rnd(text.len() + 1);
            text.insert(i, 0xff); // invalid UTF-8 somewhere
        }
        for (thinking, tools) in [(false, false), (false, true), (true, false), (true, true)] {
            let (one, end1) = stream(&[&text], thinking, tools);
            let bytes: Vec<&[u8]> = text.chunks(1).collect();
            let (bw, end2) = stream(&bytes, thinking, tools);
            let mut chunks = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let j = (i + 1 + rnd(7)).min(text.len());
                chunks.push(&text[i..j]);
                i = j;
            }
            let (rc, _) = stream(&chunks, thinking, tools);
            let ctx = format!("case {case} thinking={thinking} tools={tools} text={:?}", String::from_utf8_lossy(&text));
            assert_eq!(one, bw, "{ctx}");
            assert_eq!(one, rc, "{ctx}");
            assert_eq!(end1.parsed, end2.parsed, "{ctx}");
            assert_eq!(end1.streamed_calls, end2.streamed_calls, "{ctx}");
        }
    }
}
