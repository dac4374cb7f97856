#!/usr/bin/env python3
"""examples/char_lstm.c against the same program in another language
(examples/rust/char_lstm.rs, examples/go/char_lstm), same seed
and options:

- the output line for line: the header, the loss at each reported step, the
  held-out loss, the sampled characters (byte for byte) and the last line,
  the throughput (chars_per_s) and the "saved ..." line (paths) aside;
- bit-identical weights: the state dicts both saved are equal byte for byte;
- the model learns: the final loss is below the first and the held-out loss
  below --max-val-loss.

The twin runs first: its exit 77 (no cargo or Go, crates.io unreachable, no
text) is this test's. Usage:
  char_lstm_twin.py --c CHAR_LSTM --work DIR [--max-val-loss L] -- TWIN_CMD... -- ARGS...
(ARGS go to both programs; --save is added here)
"""

from twin_common import fresh, kept, learns, options, run, same_bytes, same_lines


def compared(out):
    """The lines both programs must print alike (no paths, no throughput, no build noise)."""
    return kept(out, ("saved ", "go build"), r" chars_per_s=\S+")


def main():
    a, twin, args = options(__doc__, max_val_loss=3.25)
    pt = fresh(a.work, "twin.pt", "c.pt")
    out_twin = run(twin + args + ["--save", pt["twin.pt"]], "the twin").stdout
    out_c = run([a.c] + args + ["--save", pt["c.pt"]], "char_lstm.c").stdout
    print(out_twin.rstrip())
    lc = compared(out_c)
    same_lines(compared(out_twin), lc, "the twin's output differs from char_lstm.c's", min_lines=5)
    print(f"output: {len(lc)} lines equal to char_lstm.c's (the sample included)")
    wc = same_bytes(pt["twin.pt"], pt["c.pt"], "the saved weights differ from char_lstm.c's")
    print(f"weights: the state dicts are equal byte for byte ({len(wc)} bytes)")
    print("PASS: " + learns(out_c, "val_loss", "held-out loss", a.max_val_loss))


if __name__ == "__main__":
    main()
