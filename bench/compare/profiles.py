"""compare.py --profile-behind: which points ctorch is behind ONNX Runtime
at, and the top operators by self time of one profiled call of each side.
A measurement's helper, not a test."""
import json


def behind(ms, precision_of):
    """[(precision, ctorch's fastest way, ONNX Runtime's way)] for each
    precision where ctorch's fastest way takes more than 3% longer than
    ONNX Runtime's way of that precision (its float32 for bf16: ORT's CPU
    provider has no bf16 arithmetic). ms: way -> p50 ms of one point."""
    out = []
    for prec in ("fp32", "bf16", "int8"):
        mine = [w for w in ms if w.startswith("ctorch") and precision_of(w) == prec]
        theirs_prec = "fp32" if prec == "bf16" else prec
        ort = [w for w in ms if w.startswith("ONNX Runtime") and precision_of(w) == theirs_prec]
        if mine and ort:
            best, theirs = min(mine, key=ms.get), min(ort, key=ms.get)
            if ms[best] > 1.03 * ms[theirs]:
                out.append((prec, best, theirs))
    return out


def top_ops(path, top=8):
    """The top operators of one profiled call by self time: [op, self ms,
    calls, share of the call]. ctorch's Chrome trace nests each operator's
    callees inside it on the calling thread (self = its time less its
    children's); ORT's profile has one Node event per kernel (its op type)
    for every run: only the last run's are kept."""
    ev = json.load(open(path))
    agg = {}
    if isinstance(ev, dict):  # ctorch: {"traceEvents": [complete "X" events]}
        xs = sorted((e for e in ev["traceEvents"] if e.get("ph") == "X"), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
        stack, total = [], 0.0
        for e in xs:
            while stack and (stack[-1][0]["tid"] != e["tid"] or stack[-1][0]["ts"] + stack[-1][0]["dur"] <= e["ts"]):
                stack.pop()
            if stack:
                stack[-1][1]["self"] -= e["dur"]
            else:
                total += e["dur"]
            rec = dict(self=e["dur"])
            stack.append((e, rec))
            agg.setdefault(e["name"], []).append(rec)
        sums = {k: (sum(r["self"] for r in v), len(v)) for k, v in agg.items()}
    else:  # ORT: a list of events; the last "model_run" bounds the profiled call
        run = [e for e in ev if e.get("name") == "model_run"][-1]
        sums, total = {}, run["dur"]
        for e in ev:
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and run["ts"] <= e["ts"] <= \
                    run["ts"] + run["dur"]:
                k = e["args"].get("op_name", e["name"])
                us, n = sums.get(k, (0.0, 0))
                sums[k] = (us + e["dur"], n + 1)
    rows = sorted(sums.items(), key=lambda kv: -kv[1][0])[:top]
    return [[k, us / 1e3, n, us / max(total, 1e-9)] for k, (us, n) in rows]


def tables(profiles):
    """The markdown of --profile-behind's entries: per point, the two sides'
    top operators by self time, side by side."""
    out = []
    for p in profiles:
        out += ["", f"### {p['model']} b{p['batch']} t{p['threads']} {p['precision']}: {p['ctorch_way']} "
                f"{p['ctorch_p50']:.1f} ms, {p['ort_way']} {p['ort_p50']:.1f} ms (load {p['load']})", ""]
        if "error" in p:
            out.append(f"Not profiled: {p['error'].strip().splitlines()[-1] if p['error'].strip() else 'failed'}")
            continue
        out += ["| # | ctorch operator | self ms | calls | share | ORT operator | self ms | calls | share |",
                "|" + "---|" * 9]
        for i in range(max(len(p["ctorch_ops"]), len(p["ort_ops"]))):
            cells = [str(i + 1)]
            for side in (p["ctorch_ops"], p["ort_ops"]):
                cells += ([side[i][0], f"{side[i][1]:.2f}", str(side[i][2]), f"{side[i][3]:.0%}"] if i < len(side)
                          else ["", "", "", ""])
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
