"""ctorch's TensorBoard files read by TensorBoard's own reader (the PyPI
tensorboard package's EventAccumulator), compared record by record with the
file torch.utils.tensorboard.SummaryWriter writes for the same calls on the
same data (seeded tensors, fixed steps and wall times):

- scalars: tag, step, wall time, value equal;
- histograms: min, max, num, bucket limits and counts equal; sum and sum of
  squares to 1e-12 (numpy's pairwise sum and BLAS dot against ATen's sum and
  a running sum: the same numbers, added in another order);
- images: width, height and decoded pixels equal (the PNG bytes differ:
  PIL's compressor and filters against ctorch's);
- text: the string equal;
- hparams: the run directory's experiment, session start and end records
  (the hparams plugin's messages, parsed) and the metric scalars equal.
Then every record kind written with non-ASCII UTF-8 strings (tags, text,
hparam names and values, metric names, run name, file-name suffix), after
invalid UTF-8 in each was refused, is read back strictly record by record
(protobuf's UTF-8 check) and through the reader. Then a writer killed by
SIGKILL right after its last add: every record it added is read back. Exit 77 (skipped) without the tensorboard package.

Usage: tensorboard_vs_torch.py PATH/TO/tb_write"""
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

EventAccumulator = need("tensorboard.backend.event_processing.event_accumulator").EventAccumulator
need("numpy")  # the histograms' reference (make_histogram)
import torch  # noqa: E402

ALL = {"scalars": 0, "histograms": 0, "images": 0, "tensors": 0}
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def load(path):
    ea = EventAccumulator(path, size_guidance=ALL)
    ea.Reload()
    return ea


def png_pixels(data):
    """(width, height, channels, bytes) of an 8-bit non-interlaced PNG (any filter)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw, stride, out, prev = zlib.decompress(idat), w * ch, bytearray(), bytearray(w * ch)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return w, h, ch, bytes(out)


def torch_side(logdir):
    """The same calls through torch.utils.tensorboard (None if it cannot be imported here)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception as e:  # noqa: BLE001 (an old torch with a newer tensorboard, say)
        print(f"note: torch.utils.tensorboard unavailable ({e}); comparing with the expected values only")
        return None
    w = SummaryWriter(logdir)
    for i in range(10):
        w.add_scalar("train/loss", 1.0 / (i + 1), i, walltime=1000.0 + i)
    w.add_scalar("big", 3e38, 0, walltime=1000.0)
    torch.manual_seed(7)
    hists = [("weights", torch.randn(1000) * (i + 1), i, 2000.0 + i) for i in range(3)]
    hists.append(("zero", torch.zeros(1, dtype=torch.float64), 0, 2100.0))
    for tag, v, step, wt in hists:
        try:
            w.add_histogram(tag, v, step, walltime=wt)
        except TypeError as e:
            # torch 1.13's make_histogram calls np.greater(..., dtype=np.int32),
            # which numpy >= 1.24 refuses: the expected record is then built
            # with torch 2.x's make_histogram (below), the same algorithm.
            print(f"note: torch {torch.__version__}'s add_histogram fails here ({e}); "
                  f"{tag} compared with torch 2.x's make_histogram instead")
            EXPECTED_HIST.setdefault(tag, []).append((step, wt, make_histogram(v.double().numpy())))
    torch.manual_seed(5)
    rgb, grey, rgba = torch.rand(3, 8, 10), torch.randint(0, 256, (1, 6, 7), dtype=torch.uint8), torch.rand(4, 5, 5)
    w.add_image("img/rgb", rgb, 1, walltime=3000.0)
    w.add_image("img/grey", grey, 2, walltime=3001.0)
    w.add_image("img/rgba", rgba, 3, walltime=3002.0)
    w.add_text("notes", "hello **world**: \u00e9t\u00e9", 4, walltime=4000.0)
    w.add_hparams({"lr": 0.01, "optimizer": "adam", "batch": 64}, {"hparam/accuracy": 0.9, "hparam/loss": 0.25},
                  run_name="run1")
    w.close()
    return logdir


EXPECTED_HIST = {}


def hparams_of(ea):
    """{tag: parsed HParamsPluginData} of the hparams plugin's records."""
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
    out = {}
    for tag, content in ea.PluginTagToContent("hparams").items():
        m = HParamsPluginData()
        m.ParseFromString(content)
        out[tag] = m
    return out


def make_histogram(values):
    """torch 2.x's torch.utils.tensorboard.summary.make_histogram with the default
    ("tensorflow") bins, for a torch whose own one fails with this numpy."""
    import numpy as np
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    bins = [-b for b in buckets[::-1]] + [0] + buckets
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return (float(values.min()), float(values.max()), float(len(values)), float(values.sum()),
            float(values.dot(values)), [float(x) for x in limits], [float(x) for x in counts])


UTF8 = ["a/\u00e9t\u00e9", "b/\u65e5\u672c", "c/\U0001F600", "d/\U0010FFFF\uD7FF\uE000"]


def strict_records(path):
    """Every record of an event file parsed strictly (protobuf refuses a string
    field with bad UTF-8: "String field had bad UTF-8"), with the plugin
    contents and text tensors inside decoded too. Returns the events."""
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
    events = []
    for raw in RawEventFileLoader(path).Load():
        ev = event_pb2.Event.FromString(raw)
        for v in ev.summary.value:
            if v.metadata.plugin_data.plugin_name == "hparams":
                HParamsPluginData.FromString(v.metadata.plugin_data.content)
            for sv in v.tensor.string_val:
                sv.decode("utf-8", errors="strict")
        events.append(ev)
    return events


def strings_check(tb_write, tmp):
    """Every record kind written with non-ASCII UTF-8 strings
    (after invalid ones were refused, tb_write --strings) is read back, strictly
    record by record and through EventAccumulator, with the strings intact."""
    d = os.path.join(tmp, "strings")
    path = subprocess.run([tb_write, "--strings", d], check=True, text=True, stdout=subprocess.PIPE).stdout.strip()
    expect(path.endswith(".\u00e9"), f"file-name suffix kept: {path}")
    events = strict_records(path)
    tags = [v.tag for ev in events for v in ev.summary.value]
    want = [f"{kind}/{s}" + ("/text_summary" if kind == "text" else "") for s in UTF8
            for kind in ("scalar", "hist", "img", "text")]
    expect(tags == want, f"strict read: tags {tags} vs {want}")
    c = load(path)
    t = c.Tags()
    expect(sorted(t["scalars"]) == sorted(f"scalar/{s}" for s in UTF8), f"scalar tags {t['scalars']}")
    expect(sorted(t["histograms"]) == sorted(f"hist/{s}" for s in UTF8), f"histogram tags {t['histograms']}")
    expect(sorted(t["images"]) == sorted(f"img/{s}" for s in UTF8), f"image tags {t['images']}")
    for i, s in enumerate(UTF8):
        (e,) = c.Tensors(f"text/{s}/text_summary")
        expect(e.tensor_proto.string_val[0].decode() == UTF8[(i + 1) % 4], f"text value of {s}")
        expect([(x.step, x.value) for x in c.Scalars(f"scalar/{s}")] == [(i, float(i))], f"scalar {s}")
        expect(c.Histograms(f"hist/{s}")[0].histogram_value.num == 5, f"histogram {s}")
    run = os.path.join(d, "run_\u65e5")
    runs = os.listdir(run)
    expect(len(runs) == 1, f"one event file in the run directory: {runs}")
    strict_records(os.path.join(run, runs[0]))
    hp = hparams_of(load(run))
    exp = hp.get("_hparams_/experiment")
    expect(exp is not None and [h.name for h in exp.experiment.hparam_infos] == UTF8[:2],
           f"hparam names {exp and [h.name for h in exp.experiment.hparam_infos]}")
    expect(exp is not None and [m.name.tag for m in exp.experiment.metric_infos] == [UTF8[3]], "metric names")
    start = hp.get("_hparams_/session_start_info")
    expect(start is not None and start.session_start_info.hparams[UTF8[1]].string_value == UTF8[2], "hparam text value")
    expect([x.value for x in load(run).Scalars(UTF8[3])] == [0.75], "metric scalar")


def close(a, b, rel=1e-12):
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    tb_write = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        mine = os.path.join(tmp, "ctorch")
        path = subprocess.run([tb_write, mine], check=True, text=True, stdout=subprocess.PIPE).stdout.strip()
        expect(os.path.basename(path).startswith("events.out.tfevents.") and path.endswith(".ctorch"),
               f"file name {path}")
        c = load(path)
        ref_dir = torch_side(os.path.join(tmp, "torch"))
        t = load(ref_dir) if ref_dir else None
        tags = c.Tags()
        expect(sorted(tags["scalars"]) == ["big", "train/loss"], f"scalar tags {tags['scalars']}")
        loss = c.Scalars("train/loss")
        expect([(e.step, e.wall_time) for e in loss] == [(i, 1000.0 + i) for i in range(10)], "scalar steps/times")
        expect(all(e.value == struct.unpack("f", struct.pack("f", 1.0 / (e.step + 1)))[0] for e in loss),
               "scalar values (float32)")
        if t:
            for tag in ("train/loss", "big"):
                expect([(e.wall_time, e.step, e.value) for e in c.Scalars(tag)] ==
                       [(e.wall_time, e.step, e.value) for e in t.Scalars(tag)],
                       f"scalars {tag} equal torch's")
            for tag in ("weights", "zero"):
                for a, (step, wt, (mn, mx, num, sm, sq, lim, cnt)) in zip(c.Histograms(tag),
                                                                          EXPECTED_HIST.get(tag, [])):
                    ha = a.histogram_value
                    expect((a.step, a.wall_time, ha.min, ha.max, ha.num) == (step, wt, mn, mx, num),
                           f"histogram {tag}: step/time/min/max/num (torch 2.x's make_histogram)")
                    expect(list(ha.bucket_limit) == lim and list(ha.bucket) == cnt, f"histogram {tag}: buckets")
                    expect(close(ha.sum, sm) and close(ha.sum_squares, sq), f"histogram {tag}: sums")
                if tag in EXPECTED_HIST:
                    expect(len(c.Histograms(tag)) == len(EXPECTED_HIST[tag]), f"histogram {tag}: count")
                    continue
                for a, b in zip(c.Histograms(tag), t.Histograms(tag), strict=True):
                    ha, hb = a.histogram_value, b.histogram_value
                    expect((a.step, a.wall_time) == (b.step, b.wall_time), f"histogram {tag} step/time")
                    expect((ha.min, ha.max, ha.num) == (hb.min, hb.max, hb.num), f"histogram {tag} min/max/num")
                    expect(list(ha.bucket_limit) == list(hb.bucket_limit), f"histogram {tag} limits")
                    expect(list(ha.bucket) == list(hb.bucket), f"histogram {tag} counts")
                    expect(close(ha.sum, hb.sum) and close(ha.sum_squares, hb.sum_squares),
                           f"histogram {tag} sums {ha.sum} {ha.sum_squares} vs {hb.sum} {hb.sum_squares}")
            for tag in ("img/rgb", "img/grey", "img/rgba"):
                (a,), (b,) = c.Images(tag), t.Images(tag)
                expect((a.step, a.wall_time, a.width, a.height) == (b.step, b.wall_time, b.width, b.height),
                       f"image {tag} header")
                pa, pb = png_pixels(a.encoded_image_string), png_pixels(b.encoded_image_string)
                expect(pa == pb, f"image {tag}: pixels {pa[:3]} vs torch {pb[:3]}")
            (a,), (b,) = c.Tensors("notes/text_summary"), t.Tensors("notes/text_summary")
            expect(a.tensor_proto.string_val == b.tensor_proto.string_val and a.step == b.step, "text equal")
            # hparams: the run directory's plugin records (parsed messages) and metric scalars
            ch, th = load(os.path.join(os.path.dirname(path), "run1")), load(os.path.join(ref_dir, "run1"))
            hc, ht = hparams_of(ch), hparams_of(th)
            expect(sorted(hc) == sorted(ht) == ["_hparams_/experiment", "_hparams_/session_end_info",
                                                "_hparams_/session_start_info"], f"hparams tags {sorted(hc)}")
            for tag in ht:
                expect(hc.get(tag) == ht[tag], f"hparams {tag}: {hc.get(tag)} vs torch {ht[tag]}")
            for tag in ("hparam/accuracy", "hparam/loss"):
                expect([(e.step, e.value) for e in ch.Scalars(tag)] == [(e.step, e.value) for e in th.Scalars(tag)],
                       f"hparams metric {tag}")
        else:
            h = c.Histograms("weights")[0].histogram_value
            expect(h.num == 1000 and sum(h.bucket) == 1000, "histogram counts add up")
            (img,) = c.Images("img/rgb")
            expect((img.width, img.height) == (10, 8) and png_pixels(img.encoded_image_string)[2] == 3, "image")
        (txt,) = c.Tensors("notes/text_summary")
        expect(txt.tensor_proto.string_val[0].decode() == "hello **world**: \u00e9t\u00e9", "text value")
        strings_check(tb_write, tmp)
        # killed right after the last add: everything added is there
        killed = subprocess.run([tb_write, "--kill", os.path.join(tmp, "killed"), "25"], text=True,
                                stdout=subprocess.PIPE)
        expect(killed.returncode == -9, f"the writer was killed (rc {killed.returncode})")
        got = load(killed.stdout.strip()).Scalars("loss")
        expect([e.step for e in got] == list(range(25)), f"after SIGKILL: {len(got)} of 25 scalars read back")
    print(f"torch {torch.__version__}, TensorBoard reader: "
          f"{'all records equal' if not failures else f'{len(failures)} checks failed'}"
          f"{'' if ref_dir else ' (no torch writer to compare with)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
