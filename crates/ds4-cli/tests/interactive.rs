//! The interactive chat driven through a real terminal: the `ds4` binary runs
//! inside a private tmux server, keys are typed with `send-keys` and the
//! screen is read back with `capture-pane`. Prefix reuse is read from the
//! `--trace` file.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str) -> Tmux {
        let socket = format!("ds4test-{}-{name}", std::process::id());
        let t = Tmux { socket };
        let ok = t.cmd(&["new-session", "-d", "-s", "t", "-x", "160", "-y", "50", cmd]).status.success();
        assert!(ok, "tmux new-session failed (is tmux installed?)");
        t
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("tmux is required for the interactive test")
    }

    fn send(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        assert!(self.cmd(&a).status.success());
    }

    /// Type a line literally, then Enter.
    fn line(&self, text: &str) {
        assert!(self.cmd(&["send-keys", "-t", "t", "-l", text]).status.success());
        self.send(&["Enter"]);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-J", "-S", "-5000", "-t", "t"]).stdout).into_owned()
    }

    fn alive(&self) -> bool {
        self.cmd(&["has-session", "-t", "t"]).status.success()
    }

    fn wait<F: Fn(&str) -> bool>(&self, what: &str, f: F) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_exit(&self) {
        let t0 = Instant::now();
        while self.alive() {
            if t0.elapsed() > Duration::from_secs(30) {
                panic!("ds4 did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn prompts(s: &str) -> usize {
    s.lines().filter(|l| l.starts_with("ds4> ")).count()
}

/// The screen's last non-empty line is an empty prompt. Long generations can push earlier
/// prompts out of tmux's scrollback, so tests that let the model run use this plus the trace
/// file's turn count instead of counting prompts on screen.
fn at_prompt(s: &str) -> bool {
    s.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim_end() == "ds4>")
}

/// Turn records of the trace file: (key, value) maps in order.
fn turns(trace: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    let mut out = Vec::new();
    for block in text.split("===== turn ").skip(1) {
        let mut m = std::collections::HashMap::new();
        for line in block.lines().skip(1) {
            if let Some((k, v)) = line.split_once(": ") {
                m.insert(k.to_string(), v.to_string());
            }
        }
        out.push(m);
    }
    out
}

fn num(m: &std::collections::HashMap<String, String>, k: &str) -> usize {
    m.get(k).unwrap_or_else(|| panic!("trace lacks {k}")).parse().unwrap()
}

/// Tokens of a user text in the demo vocabulary (the chat tokenizer on a
/// text without specials is plain BPE).
fn demo_token_count(text: &str) -> usize {
    let o = run(&["--demo", "--dump-tokens", "--chat", "-p", text]);
    assert!(o.status.success(), "{}", show(&o));
    String::from_utf8(o.stdout).unwrap().lines().count()
}

fn command(args: &str, home: &Path) -> String {
    // The shell wrapper keeps the pane open briefly on failure so the screen
    // can be inspected, and isolates the history file.
    format!("env HOME={} {} {args}", home.display(), env!("CARGO_BIN_EXE_ds4"))
}

fn home(name: &str) -> PathBuf {
    let h = scratch(&format!("home-{name}"));
    std::fs::create_dir_all(&h).unwrap();
    h
}

#[test]
fn chat_turns_reuse_the_live_session_and_commands_work() {
    let trace = scratch("chat.trace");
    let h = home("chat");
    let tm = Tmux::start("chat", &command(&format!("--demo -n 16 --seed 5 --trace {}", trace.display()), &h));
    tm.wait("the prompt", |s| s.contains("ds4> ") && s.contains("/think-max"));

    // Turn 1 (thinking on by default).
    tm.line("Hello there");
    let s = tm.wait("turn 1 to finish", |s| prompts(s) >= 2);
    assert!(s.contains("processing "), "prefill progress shown:\n{s}");
    assert!(s.contains("ds4: prefill: ") && s.contains("generation: "), "speeds shown:\n{s}");
    let t = turns(&trace);
    assert_eq!(t.len(), 1, "{s}");
    assert_eq!(num(&t[0], "reused_tokens"), 0);
    assert_eq!(t[0]["think_mode"], "high");
    let gen1 = num(&t[0], "generated_tokens");
    assert!(gen1 >= 1);
    // The answer is on screen (reasoning and answer text as printed).
    let shown = format!("{} {}", t[0]["reasoning"], t[0]["answer"]);
    let words: Vec<&str> = shown.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 3).collect();
    assert!(words.is_empty() || words.iter().any(|w| s.contains(w)), "generated text {words:?} on screen:\n{s}");

    // /nothink, then turn 2: only the new suffix is prefilled.
    tm.line("/nothink");
    tm.wait("the mode change", |s| s.contains("Thinking mode: none."));
    tm.line("again please");
    let s = tm.wait("turn 2 to finish", |s| prompts(s) >= 4);
    let t = turns(&trace);
    assert_eq!(t.len(), 2, "{s}");
    assert_eq!(t[1]["think_mode"], "none");
    let t1_len = num(&t[0], "transcript_tokens");
    // Live KV = transcript of turn 1 without its closing EOS.
    assert_eq!(num(&t[1], "reused_tokens"), t1_len - 1);
    // EOS + <｜User｜> + text + <｜Assistant｜> + </think>.
    assert_eq!(num(&t[1], "prefilled_tokens"), 1 + 1 + demo_token_count("again please") + 2);
    assert!(t[1]["prefilled_text"].ends_with("again please<｜Assistant｜></think>"), "{:?}", t[1]);

    // Unknown command and /help stay in the prompt.
    tm.line("/bogus");
    tm.wait("the unknown-command message", |s| s.contains("unknown command: /bogus"));
    tm.line("/quit");
    tm.wait_exit();
}

#[test]
fn ctrl_c_stops_generation_and_exits_on_empty_prompt() {
    let trace = scratch("ctrlc.trace");
    let h = home("ctrlc");
    // A cap far beyond what the test waits for: only Ctrl+C ends the turn.
    let tm = Tmux::start("ctrlc", &command(&format!("--demo --nothink -n 100000 --seed 9 --trace {}", trace.display()), &h));
    tm.wait("the prompt", |s| s.contains("ds4> "));
    tm.line("Write a very long story");
    // Wait until generation has produced output (the prefill line is done).
    let before = tm.wait("generation to start", |s| s.contains("processing ") && s.contains("100.0%"));
    std::thread::sleep(Duration::from_millis(300));
    let _ = before;
    tm.send(&["C-c"]);
    let s = tm.wait("the prompt after Ctrl+C", |s| at_prompt(s) && turns(&trace).len() >= 1);
    assert!(s.contains("ds4: prefill: "), "{s}");
    let t = turns(&trace);
    assert_eq!(t.len(), 1, "{s}");
    assert_eq!(t[0]["stop"], "interrupted");
    let gen = num(&t[0], "generated_tokens");
    assert!(gen >= 1 && gen < 100000, "generated {gen}");

    // The interrupted answer stays in the transcript; the next turn reuses it.
    tm.line("continue");
    tm.wait("turn 2 generating", |s| s.rfind("ds4> continue").is_some_and(|i| s[i..].contains("100.0%")));
    std::thread::sleep(Duration::from_millis(200));
    // Turn 1's length depends on when its Ctrl+C landed, so turn 2 may sample the end token
    // early; a Ctrl+C on the then empty prompt would (by design) exit. Interrupt only a turn
    // that is still running (the trace records a turn when it ends).
    if turns(&trace).len() < 2 {
        tm.send(&["C-c"]);
    }
    tm.wait("the prompt after the second Ctrl+C", |s| at_prompt(s) && turns(&trace).len() >= 2);
    let t = turns(&trace);
    assert_eq!(t.len(), 2);
    assert_eq!(num(&t[1], "reused_tokens"), num(&t[0], "transcript_tokens") - 1);

    // Ctrl+C on a non-empty line clears it and stays; on an empty one, exits.
    assert!(tm.cmd(&["send-keys", "-t", "t", "-l", "half typed"]).status.success());
    tm.wait("the typed text", |s| s.contains("ds4> half typed"));
    tm.send(&["C-c"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(tm.alive(), "Ctrl+C on a non-empty line must not exit");
    tm.wait("the cleared line", |s| !s.contains("ds4> half typed"));
    tm.send(&["C-c"]);
    tm.wait_exit();
    // History was written.
    let hist = std::fs::read_to_string(h.join(".ds4_history")).unwrap_or_default();
    assert!(hist.contains("Write a very long story"), "history: {hist:?}");
}
