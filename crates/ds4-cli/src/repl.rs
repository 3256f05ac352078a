//! Interactive multi-turn chat (CLI.md §2.2, §3). `Chat` holds the token
//! transcript and one live session, so each turn prefills only what the
//! session does not already hold; `run` is the line-editor loop around it.

use anyhow::Result;
use ds4_engine::sampling::{seed_from_time, Sampler, SamplerParams};
use ds4_tok::Tokenizer;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::printer::TokenPrinter;
use crate::progress::PrefillProgress;
use crate::prompt::{think_max_warning, ThinkMode, Transcript};
use crate::session::{generate, generation_budget, rate, LiveSession, NoSession, StopReason};
use crate::trace::{Trace, TurnRecord};

/// Creates sessions (again on `/ctx N`).
pub trait SessionFactory {
    fn create(&mut self, ctx: usize) -> Result<Box<dyn LiveSession>>;
    /// The context-memory line printed when a session is (re)created.
    fn memory_note(&self, ctx: usize) -> String;
}

pub struct ChatOptions {
    pub system: String,
    pub mode: ThinkMode,
    pub max_new: usize,
    pub params: SamplerParams,
    pub seed: Option<u64>,
    /// Grey reasoning (stdout is a terminal).
    pub color: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// What one turn did (for tests and the trace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    pub reused: usize,
    pub prefilled: usize,
    pub generated: usize,
    pub stop: Option<StopReason>,
    pub rolled_back: bool,
}

pub struct Chat<'t> {
    tok: &'t Tokenizer,
    factory: Box<dyn SessionFactory + 't>,
    session: Box<dyn LiveSession>,
    pub transcript: Transcript,
    pub ctx: usize,
    pub mode: ThinkMode,
    opts: ChatOptions,
    trace: Option<Trace>,
    turns: usize,
    pub interrupt: Arc<AtomicBool>,
}

pub const HELP: &str = "\
Commands:
  /help          Show this help.
  /think         Use normal thinking mode.
  /think-max     Use Think Max only when context is at least 393216 tokens.
  /nothink       Disable thinking mode.
  /ctx N         Set context size for following prompts.
  /read FILE     Read a prompt from FILE and run it.
  /quit, /exit   Leave the prompt.
  Ctrl+C         Stop generation and return to the prompt; on an empty prompt, exit.
";

impl<'t> Chat<'t> {
    pub fn new(
        tok: &'t Tokenizer,
        mut factory: Box<dyn SessionFactory + 't>,
        ctx: usize,
        opts: ChatOptions,
        trace: Option<Trace>,
    ) -> Result<Chat<'t>> {
        let session = factory.create(ctx)?;
        let mode = opts.mode;
        let transcript = Transcript::new(tok, &opts.system, crate::prompt::effective(mode, ctx) == ThinkMode::Max);
        Ok(Chat {
            tok,
            factory,
            session,
            transcript,
            ctx,
            mode,
            opts,
            trace,
            turns: 0,
            interrupt: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn session(&self) -> &dyn LiveSession {
        self.session.as_ref()
    }

    fn apply_preamble(&mut self) {
        let want = crate::prompt::effective(self.mode, self.ctx) == ThinkMode::Max;
        if self.transcript.set_max_preamble(self.tok, want) {
            // Every later position moved: the live KV no longer matches.
            self.session.invalidate();
            if let Some(t) = &mut self.trace {
                let _ = t.event(if want { "max preamble inserted; session invalidated" } else { "max preamble removed; session invalidated" });
            }
        }
    }

    /// Handle one input line (already trimmed, non-empty).
    pub fn line(&mut self, line: &str, out: &mut dyn Write, err: &mut dyn Write) -> Result<Flow> {
        if !line.starts_with('/') {
            self.turn(line.as_bytes(), out, err)?;
            return Ok(Flow::Continue);
        }
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (line, ""),
        };
        match cmd {
            "/help" => write!(out, "{HELP}")?,
            "/quit" | "/exit" => return Ok(Flow::Quit),
            "/think" => {
                self.mode = ThinkMode::High;
                self.apply_preamble();
                writeln!(out, "Thinking mode: high.")?;
            }
            "/nothink" => {
                self.mode = ThinkMode::None;
                self.apply_preamble();
                writeln!(out, "Thinking mode: none.")?;
            }
            "/think-max" => {
                self.mode = ThinkMode::Max;
                self.apply_preamble();
                if crate::prompt::effective(self.mode, self.ctx) == ThinkMode::Max {
                    writeln!(out, "Thinking mode: max.")?;
                } else {
                    writeln!(err, "ds4: {}", think_max_warning("/think-max", self.ctx))?;
                    writeln!(out, "Thinking mode: high (ctx below 393216).")?;
                }
            }
            "/ctx" => match arg.parse::<usize>() {
                Ok(n) if n > 0 && n <= i32::MAX as usize => {
                    writeln!(err, "ds4: {}", self.factory.memory_note(n))?;
                    // Free the old session first: its buffers scale with ctx.
                    self.session = Box::new(NoSession);
                    self.ctx = n;
                    match self.factory.create(n) {
                        Ok(s) => self.session = s,
                        Err(e) => writeln!(err, "ds4: cannot create a session with ctx={n}: {e:#}")?,
                    }
                    self.apply_preamble();
                    if self.mode == ThinkMode::Max && crate::prompt::effective(self.mode, n) != ThinkMode::Max {
                        writeln!(err, "ds4: {}", think_max_warning("/ctx", n))?;
                    }
                    if let Some(t) = &mut self.trace {
                        let _ = t.event(&format!("context set to {n}; session recreated"));
                    }
                }
                _ => writeln!(err, "ds4: /ctx needs a positive integer")?,
            },
            "/read" => {
                if arg.is_empty() {
                    writeln!(err, "ds4: /read needs a file path")?;
                } else {
                    match std::fs::read(arg) {
                        Ok(bytes) => self.turn(&bytes, out, err).map(|_| ())?,
                        Err(e) => writeln!(err, "ds4: failed to read prompt file {arg}: {e}")?,
                    }
                }
            }
            _ => {
                writeln!(err, "ds4: unknown command: {line}")?;
                writeln!(err, "ds4: type /help for commands")?;
            }
        }
        Ok(Flow::Continue)
    }

    /// One user message: extend the transcript, sync (prefilling only the new
    /// suffix when the live KV is a prefix), generate, close with EOS.
    pub fn turn(&mut self, text: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> Result<TurnSummary> {
        self.interrupt.store(false, Ordering::Relaxed);
        let eff = crate::prompt::effective(self.mode, self.ctx);
        self.apply_preamble();
        let rollback = self.transcript.begin_turn(self.tok, text, eff);
        let live = self.session.tokens();
        let common = live.iter().zip(&self.transcript.tokens).take_while(|(a, b)| a == b).count();
        let expect_reuse = if common == live.len() { common } else { 0 };
        let suffix = self.transcript.tokens.len() - expect_reuse;

        let t0 = std::time::Instant::now();
        let mut progress = PrefillProgress::new(suffix);
        let interrupt = self.interrupt.clone();
        let synced = self.session.sync(&self.transcript.tokens, &mut |done, _total| {
            progress.update(done);
            !interrupt.load(Ordering::Relaxed)
        });
        progress.end();
        let prefill_s = t0.elapsed().as_secs_f64();
        let reused = match synced {
            Ok(r) => r,
            Err(e) => {
                self.transcript.rollback(rollback);
                self.session.invalidate();
                if self.interrupt.swap(false, Ordering::Relaxed) {
                    writeln!(err, "ds4: prompt processing interrupted")?;
                } else {
                    writeln!(err, "ds4: prompt processing failed: {e:#}")?;
                }
                return Ok(TurnSummary { reused: 0, prefilled: 0, generated: 0, stop: None, rolled_back: true });
            }
        };
        let prefilled = self.transcript.tokens.len() - reused;
        let prefilled_text = self.tok.decode(&self.transcript.tokens[reused..]);

        let budget = generation_budget(self.opts.max_new, self.session.ctx(), self.session.tokens().len());
        // As in ds4, every turn starts its own RNG stream from --seed.
        let seed = self.opts.seed.unwrap_or_else(seed_from_time);
        let mut sampler = Sampler::new(self.opts.params, seed);
        let eos = self.tok.special().eos;
        let mut printer = TokenPrinter::new(&mut *out, eff.is_thinking(), self.opts.color);
        let tok = self.tok;
        let transcript = &mut self.transcript;
        let gen = generate(self.session.as_mut(), &mut sampler, budget, eos, &self.interrupt, &mut |id| {
            transcript.tokens.push(id);
            printer.write(tok.token_bytes(id).unwrap_or(&[]))?;
            Ok(())
        });
        printer.finish()?;
        let (reasoning, answer) = (std::mem::take(&mut printer.reasoning), std::mem::take(&mut printer.answer));
        drop(printer);
        let gen = match gen {
            Ok(g) => g,
            Err(e) => {
                // The KV may hold a half-evaluated step: start over next turn.
                self.session.invalidate();
                writeln!(err, "ds4: decode failed: {e:#}")?;
                self.transcript.tokens.push(eos);
                return Ok(TurnSummary { reused, prefilled, generated: 0, stop: None, rolled_back: false });
            }
        };
        let interrupted = gen.stop == StopReason::Interrupted;
        let rolled_back = interrupted && gen.tokens.is_empty();
        if rolled_back {
            self.transcript.rollback(rollback);
            self.session.invalidate();
        } else {
            self.transcript.tokens.push(eos);
        }
        self.interrupt.store(false, Ordering::Relaxed);
        writeln!(
            err,
            "ds4: prefill: {:.2} t/s, generation: {:.2} t/s",
            rate(prefilled, prefill_s),
            rate(gen.tokens.len(), gen.seconds)
        )?;
        if let Some(s) = &gen.spec {
            writeln!(err, "ds4: {}", crate::session::spec_line(s))?;
        }
        self.turns += 1;
        if let Some(t) = &mut self.trace {
            let _ = t.turn(&TurnRecord {
                turn: self.turns,
                mode: crate::prompt::mode_name(eff),
                transcript_tokens: self.transcript.tokens.len(),
                reused_tokens: reused,
                prefilled_tokens: prefilled,
                prefilled_text: &prefilled_text,
                generated_tokens: gen.tokens.len(),
                reasoning: &reasoning,
                answer: &answer,
                stop: gen.stop.as_str(),
                prefill_seconds: prefill_s,
                generation_seconds: gen.seconds,
            });
        }
        Ok(TurnSummary { reused, prefilled, generated: gen.tokens.len(), stop: Some(gen.stop), rolled_back })
    }
}

/// The line-editor loop. Ctrl+C at an empty prompt (or Ctrl+D) exits; on a
/// non-empty line it clears the line; during a turn it stops generation.
pub fn run(chat: &mut Chat) -> Result<()> {
    use rustyline::error::ReadlineError;
    use rustyline::{Cmd, ConditionalEventHandler, Event, EventContext, EventHandler, KeyEvent, Movement, RepeatCount};

    struct CtrlC;
    impl ConditionalEventHandler for CtrlC {
        fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
            if ctx.line().is_empty() {
                Some(Cmd::Interrupt)
            } else {
                Some(Cmd::Kill(Movement::WholeBuffer))
            }
        }
    }

    // SIGINT while a turn runs (the terminal is in cooked mode then) only
    // raises the flag; the generation loop checks it between tokens.
    signal_hook::flag::register(signal_hook::consts::SIGINT, chat.interrupt.clone())?;

    let config = rustyline::Config::builder().max_history_size(512)?.auto_add_history(false).build();
    let mut rl: rustyline::Editor<(), rustyline::history::DefaultHistory> = rustyline::Editor::with_config(config)?;
    rl.bind_sequence(KeyEvent::ctrl('C'), EventHandler::Conditional(Box::new(CtrlC)));
    let history = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".ds4_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    print!("{HELP}");
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    loop {
        chat.interrupt.store(false, Ordering::Relaxed);
        let line = match rl.readline("ds4> ") {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) | Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = rl.add_history_entry(line);
        if let Some(h) = &history {
            let _ = rl.save_history(h);
        }
        let flow = chat.line(line, &mut stdout.lock(), &mut stderr.lock())?;
        if flow == Flow::Quit {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::tests::tiny_tokenizer;
    use crate::prompt::{encode_text, THINK_MAX_PREAMBLE};
    use crate::session::fake::FakeSession;
    use std::cell::RefCell;
    use std::rc::Rc;

    struct FakeFactory {
        script: Vec<u32>,
        log: Rc<RefCell<Vec<(usize, Rc<RefCell<Vec<Vec<u32>>>>)>>>,
        vocab: usize,
    }

    impl SessionFactory for FakeFactory {
        fn create(&mut self, ctx: usize) -> Result<Box<dyn LiveSession>> {
            let s = FakeSession::new(ctx, self.vocab, self.script.clone());
            self.log.borrow_mut().push((ctx, s.prefills.clone()));
            Ok(Box::new(s))
        }
        fn memory_note(&self, ctx: usize) -> String {
            format!("context buffers for ctx={ctx}")
        }
    }

    type Log = Rc<RefCell<Vec<(usize, Rc<RefCell<Vec<Vec<u32>>>>)>>>;

    fn chat<'t>(tok: &'t Tokenizer, ctx: usize, mode: ThinkMode, script: Vec<u32>) -> (Chat<'t>, Log) {
        let log: Log = Rc::new(RefCell::new(Vec::new()));
        let f = FakeFactory { script, log: log.clone(), vocab: tok.vocab_size() };
        let opts = ChatOptions {
            system: "sys".into(),
            mode,
            max_new: 100,
            params: SamplerParams::greedy(),
            seed: Some(1),
            color: false,
        };
        (Chat::new(tok, Box::new(f), ctx, opts, None).unwrap(), log)
    }

    fn last_prefill(log: &Log) -> Vec<u32> {
        let l = log.borrow();
        let p = l.last().unwrap().1.borrow();
        p.last().unwrap().clone()
    }

    /// Bytes ids of the tiny vocabulary: byte b has id 3 + b... except that
    /// the byte-symbol order follows byte_to_char; look them up instead.
    fn byte_id(tok: &Tokenizer, b: u8) -> u32 {
        tok.token_to_id(&ds4_tok::byte_to_char(b).to_string()).unwrap()
    }

    #[test]
    fn second_turn_prefills_only_the_new_suffix() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        // The model "answers": <reasoning "a"> </think> "b" EOS.
        let script = vec![byte_id(&tok, b'a'), sp.think_end, byte_id(&tok, b'b'), sp.eos];
        let (mut c, log) = chat(&tok, 1000, ThinkMode::High, script);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let s1 = c.turn(b"hello", &mut out, &mut err).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), "a\nb\n");
        assert_eq!(s1.reused, 0);
        assert_eq!(s1.prefilled, last_prefill(&log).len());
        assert_eq!(s1.generated, 3);
        assert_eq!(s1.stop, Some(StopReason::Eos));
        // Reasoning and </think> are kept, then EOS.
        let t1 = c.transcript.tokens.clone();
        assert_eq!(&t1[t1.len() - 4..], &[byte_id(&tok, b'a'), sp.think_end, byte_id(&tok, b'b'), sp.eos]);
        assert!(String::from_utf8_lossy(&err).contains("ds4: prefill: "));

        // Second turn: only EOS + the new user message is prefilled.
        let s2 = c.turn(b"hello", &mut out, &mut err).unwrap();
        let mut want = vec![sp.eos, sp.user];
        want.extend(encode_text(&tok, b"hello"));
        want.extend([sp.assistant, sp.think]);
        assert_eq!(last_prefill(&log), want);
        assert_eq!(s2.prefilled, want.len());
        assert_eq!(s2.reused, t1.len() - 1);
        assert!(c.transcript.tokens.starts_with(&t1));
    }

    #[test]
    fn think_max_preamble_and_invalidation() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let pre = encode_text(&tok, THINK_MAX_PREAMBLE.as_bytes());
        let script = vec![byte_id(&tok, b'x'), sp.eos];

        // Below the minimum context: stays high, warns, no preamble.
        let (mut c, _) = chat(&tok, 1000, ThinkMode::High, script.clone());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        c.line("/think-max", &mut out, &mut err).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), "Thinking mode: high (ctx below 393216).\n");
        assert!(String::from_utf8_lossy(&err).contains("warning: /think-max needs --ctx >= 393216; ctx=1000"));
        assert!(!c.transcript.has_max_preamble());

        // At 393216: inserted at index 1, session invalidated, next turn
        // prefills from zero.
        let (mut c, log) = chat(&tok, 393216, ThinkMode::None, script.clone());
        c.turn(b"hello", &mut out, &mut err).unwrap();
        out.clear();
        c.line("/think-max", &mut out, &mut err).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), "Thinking mode: max.\n");
        assert_eq!(&c.transcript.tokens[1..1 + pre.len()], &pre[..]);
        assert!(c.session().tokens().is_empty());
        let s = c.turn(b"hello", &mut out, &mut err).unwrap();
        assert_eq!(s.reused, 0);
        assert_eq!(last_prefill(&log)[..1 + pre.len()], c.transcript.tokens[..1 + pre.len()]);
        assert_eq!(*last_prefill(&log).last().unwrap(), sp.think);

        // /nothink removes it again.
        c.line("/nothink", &mut out, &mut err).unwrap();
        assert!(!c.transcript.has_max_preamble());
        assert_eq!(c.transcript.tokens[1], encode_text(&tok, b"sys")[0]);
        let s = c.turn(b"hello", &mut out, &mut err).unwrap();
        assert_eq!(s.reused, 0);
        assert_eq!(*last_prefill(&log).last().unwrap(), sp.think_end);
    }

    #[test]
    fn interrupt_before_first_token_rolls_back() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let (mut c, _) = chat(&tok, 1000, ThinkMode::None, vec![byte_id(&tok, b'x'), sp.eos]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        c.turn(b"hello", &mut out, &mut err).unwrap();
        let before = c.transcript.tokens.clone();

        // Raise the flag from the progress path: the fake sync reports
        // progress, then generation sees the flag before the first token.
        struct Raise(Arc<AtomicBool>, Box<dyn LiveSession>);
        impl LiveSession for Raise {
            fn ctx(&self) -> usize {
                self.1.ctx()
            }
            fn tokens(&self) -> &[u32] {
                self.1.tokens()
            }
            fn sync(&mut self, p: &[u32], cb: &mut dyn FnMut(usize, usize) -> bool) -> Result<usize> {
                let r = self.1.sync(p, cb);
                self.0.store(true, Ordering::Relaxed);
                r
            }
            fn eval(&mut self, t: u32) -> Result<()> {
                self.1.eval(t)
            }
            fn logits(&self) -> &[f32] {
                self.1.logits()
            }
            fn invalidate(&mut self) {
                self.1.invalidate()
            }
            fn extend_all(&mut self, t: &[u32], cb: &mut dyn FnMut(usize, usize) -> bool) -> Result<Vec<f32>> {
                self.1.extend_all(t, cb)
            }
        }
        let inner = std::mem::replace(&mut c.session, Box::new(FakeSession::new(1, 2, vec![])));
        c.session = Box::new(Raise(c.interrupt.clone(), inner));
        let s = c.turn(b"again", &mut out, &mut err).unwrap();
        assert!(s.rolled_back);
        assert_eq!(s.generated, 0);
        assert_eq!(c.transcript.tokens, before);
        assert!(c.session().tokens().is_empty());
    }

    #[test]
    fn failed_prefill_rolls_back() {
        let tok = tiny_tokenizer();
        // A context too small for the prompt.
        let (mut c, _) = chat(&tok, 8, ThinkMode::None, vec![1]);
        let before = c.transcript.tokens.clone();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let s = c.turn(b"hello hello hello", &mut out, &mut err).unwrap();
        assert!(s.rolled_back);
        assert_eq!(c.transcript.tokens, before);
        assert!(String::from_utf8_lossy(&err).contains("prompt processing failed"));
    }

    #[test]
    fn ctx_read_and_unknown_commands() {
        let tok = tiny_tokenizer();
        let sp = *tok.special();
        let (mut c, log) = chat(&tok, 1000, ThinkMode::None, vec![byte_id(&tok, b'y'), sp.eos]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        c.turn(b"hello", &mut out, &mut err).unwrap();
        let t = c.transcript.tokens.clone();

        c.line("/ctx 2048", &mut out, &mut err).unwrap();
        assert_eq!(c.ctx, 2048);
        assert_eq!(log.borrow().last().unwrap().0, 2048);
        assert!(String::from_utf8_lossy(&err).contains("context buffers for ctx=2048"));
        assert_eq!(c.transcript.tokens, t, "transcript kept");
        // The whole transcript is prefilled in the new session.
        let s = c.turn(b"hello", &mut out, &mut err).unwrap();
        assert_eq!(s.reused, 0);
        assert!(last_prefill(&log).starts_with(&t));

        err.clear();
        c.line("/ctx zero", &mut out, &mut err).unwrap();
        c.line("/ctx", &mut out, &mut err).unwrap();
        assert_eq!(c.ctx, 2048);
        assert_eq!(String::from_utf8_lossy(&err).matches("/ctx needs a positive integer").count(), 2);

        let dir = std::env::temp_dir().join(format!("ds4-repl-read-{}", std::process::id()));
        std::fs::write(&dir, b"hello\x00file").unwrap();
        let before = c.transcript.tokens.len();
        c.line(&format!("/read {}", dir.display()), &mut out, &mut err).unwrap();
        std::fs::remove_file(&dir).unwrap();
        let mut msg = vec![sp.user];
        msg.extend(encode_text(&tok, b"hello\x00file"));
        assert_eq!(&c.transcript.tokens[before..before + msg.len()], &msg[..]);

        err.clear();
        c.line("/read", &mut out, &mut err).unwrap();
        c.line("/read /nonexistent/file", &mut out, &mut err).unwrap();
        c.line("/frobnicate now", &mut out, &mut err).unwrap();
        let e = String::from_utf8_lossy(&err);
        assert!(e.contains("/read needs a file path"));
        assert!(e.contains("failed to read prompt file /nonexistent/file"));
        assert!(e.contains("unknown command: /frobnicate now"));
        assert!(e.contains("type /help for commands"));

        out.clear();
        c.line("/help", &mut out, &mut err).unwrap();
        assert!(String::from_utf8_lossy(&out).contains("/read FILE"));
        assert_eq!(c.line("/exit", &mut out, &mut err).unwrap(), Flow::Quit);
        assert_eq!(c.line("/quit", &mut out, &mut err).unwrap(), Flow::Quit);
    }
}
