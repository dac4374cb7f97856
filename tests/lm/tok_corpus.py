"""The tokenizer test corpus: at least 10,000 texts built offline from what
this machine has (Python's own sources, the licence texts under /usr/share)
and from a seeded generator (prose-like runs in a dozen scripts, emoji with
modifiers and joiners, combining marks, digits of several scripts, runs of
every kind of whitespace, contractions, special-token look-alikes).

Each text is one record (it may hold newlines), returned in a fixed order.
"""
import glob
import os
import random
import sys
import sysconfig

SCRIPTS = {
    "latin": [(0x61, 0x7A), (0x41, 0x5A), (0xE0, 0xFF), (0x100, 0x17F)],
    "greek": [(0x3B1, 0x3C9), (0x391, 0x3A9)],
    "cyrillic": [(0x430, 0x44F), (0x410, 0x42F)],
    "arabic": [(0x627, 0x64A)],
    "hebrew": [(0x5D0, 0x5EA)],
    "devanagari": [(0x915, 0x939), (0x93E, 0x94C)],
    "thai": [(0xE01, 0xE2E)],
    "cjk": [(0x4E00, 0x4FFF), (0x6700, 0x67FF)],
    "kana": [(0x3041, 0x3096), (0x30A1, 0x30FA)],
    "hangul": [(0xAC00, 0xAFFF)],
    "georgian": [(0x10D0, 0x10FA)],
    "armenian": [(0x561, 0x586)],
}
EMOJI = ["\U0001F600", "\U0001F602", "\U0001F44D", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467",
         "\U0001F1EB\U0001F1F7", "\u2764\uFE0F", "\U0001F9D1\u200D\U0001F4BB", "\U0001F30D", "\u2728", "\U0001F680",
         "\U0001F3F3\uFE0F\u200D\U0001F308", "\U0001F914", "\u263A", "\U0001FAE0"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\u00A0", "\u0085", "\u2028", "\u3000", "\u2003", "\u200B",
          "\u000B", "\u000C", " \n ", "\n\n\n", "\t\t", "    "]
DIGITS = ["0123456789", "\u0660\u0661\u0662\u0663", "\u0966\u0967\u0968", "\uFF11\uFF12\uFF13", "\u00B2\u00BD", "\u2160\u2161"]
WORDS = ["don't", "I'M", "they'LL", "we've", "she'd", "it's", "You're", "o'clock", "rock'n'roll", "l'été"]
SPECIALS = ["<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>",
            "<|tool|>", "[MASK]", "foo_bar"]


def word(rng, script):
    ranges = SCRIPTS[script]
    n = rng.randint(1, 9)
    out = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def generated(rng, n):
    names = sorted(SCRIPTS)
    texts = []
    for i in range(n):
        kind = i % 6
        if kind == 0:  # prose in one script
            s = rng.choice(names)
            texts.append(" ".join(word(rng, s) for _ in range(rng.randint(1, 14))) + rng.choice(["", ".", "!", "?", "。"]))
        elif kind == 1:  # mixed scripts, emoji, numbers
            parts = []
            for _ in range(rng.randint(2, 10)):
                r = rng.random()
                if r < 0.4:
                    parts.append(word(rng, rng.choice(names)))
                elif r < 0.6:
                    parts.append(rng.choice(EMOJI) * rng.randint(1, 3))
                elif r < 0.8:
                    parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
                else:
                    parts.append(rng.choice(DIGITS))
            texts.append(rng.choice([" ", "", "  ", "\t"]).join(parts))
        elif kind == 2:  # whitespace runs around words
            parts = []
            for _ in range(rng.randint(1, 8)):
                parts.append(rng.choice(SPACES) * rng.randint(1, 4))
                parts.append(word(rng, rng.choice(["latin", "cyrillic", "cjk"])))
            if rng.random() < 0.5:
                parts.append(rng.choice(SPACES) * rng.randint(1, 3))
            texts.append("".join(parts))
        elif kind == 3:  # contractions, punctuation, code-ish text
            parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 6))]
            parts += [rng.choice(["(x)", "{'a': 1}", "a->b", "i++", "#!", "...", "--", "$HOME", "===", "«quote»"])]
            rng.shuffle(parts)
            texts.append(" ".join(parts))
        elif kind == 4:  # special-token look-alikes in text
            parts = []
            for _ in range(rng.randint(1, 6)):
                parts.append(rng.choice(SPECIALS + WORDS + [" ", "  ", "\n"]))
            texts.append(rng.choice(["", " "]).join(parts))
        else:  # combining marks and decomposed letters
            base = word(rng, "latin")
            marks = "".join(chr(rng.randint(0x300, 0x36F)) for _ in range(rng.randint(1, 3)))
            texts.append(base + marks + " e\u0301t\u00E9 " + word(rng, "devanagari") + "\u094D" + word(rng, "thai"))
    return texts


def file_lines(paths, limit):
    out = []
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line.strip():
                        out.append(line)
                    if len(out) >= limit:
                        return out
        except (OSError, UnicodeDecodeError):
            continue
    return out


def build():
    rng = random.Random(20261127)
    stdlib = sysconfig.get_paths()["stdlib"]
    code = file_lines(sorted(glob.glob(os.path.join(stdlib, "*.py"))), 4000)
    prose = file_lines(sorted(glob.glob("/usr/share/common-licenses/*")) +
                       sorted(glob.glob("/usr/share/doc/*/copyright"))[:400], 2500)
    # Multi-line records: a few consecutive code lines joined, keeping indentation.
    blocks = ["\n".join(code[i:i + 4]) for i in range(0, min(len(code), 2000), 4)]
    texts = code + prose + blocks + generated(rng, 4000)
    texts += ["", " ", "\n", "a", "😀", " 😀", "<s>", "<s> hello", "hello</s>", "  leading", "trailing  "]
    return texts


if __name__ == "__main__":
    t = build()
    print(len(t), "texts", sum(len(x) for x in t), "characters", file=sys.stderr)
