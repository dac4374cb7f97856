// The Rust binding's side of the module equality harness: tests/nn/nn_dump.c
// ported to the `ctorch` crate, same arguments and same files, so
// tests/nn/nn_vs_torch.py judges it against torch.nn exactly as it judges C.
// The modules are made by the generated builders (cases_gen.rs, written from
// the case files by rust_cases.py: `nn::Conv2d::new(4, 8, [3, 2]).stride([2, 1])`),
// so the test covers the builders' names, types and defaults, not only the library.
//   nn_dump run  CASES OUTDIR   /   nn_dump load CASES OUTDIR
use ctorch::nn::Module;
use ctorch::{ops, DType, Layout, Result, Scalar, Tensor};

mod cases_gen;

struct Out {
    tensors: Vec<(String, Tensor)>,
    state_keys: String,
    param_names: String,
    outputs: String,
    repr: String,
    error: String,
}

impl Out {
    fn fail(&mut self, stage: &str, e: impl std::fmt::Display) {
        if self.error.is_empty() {
            self.error = format!("{stage}: {e}");
        }
    }
}

fn is_floating(t: &Tensor) -> bool {
    t.is_floating_point()
}

fn inputs(spec: &str) -> Result<Vec<Option<Tensor>>> {
    let mut v = Vec::new();
    for tok in spec.split(';').map(str::trim) {
        if tok == "none" {
            v.push(None);
            continue;
        }
        if let Some(lit) = tok.strip_prefix("lit:") {
            let xs: Vec<i64> = lit.split(',').map(|s| s.trim().parse().unwrap()).collect();
            v.push(Some(Tensor::from_slice(&xs, &[xs.len() as i64])?));
            continue;
        }
        let (typ, rest) = tok.split_once(':').expect("input spec");
        let (dims, high) = match rest.split_once('<') {
            Some((d, h)) => (d, h.parse::<i64>().unwrap()),
            None => (rest, 0),
        };
        let size: Vec<i64> = dims.split('x').map(|s| s.parse().unwrap()).collect();
        let t = match typ {
            "f32" | "f64" => {
                let dt = if typ == "f32" { DType::FLOAT32 } else { DType::FLOAT64 };
                ops::randn(&size, Some(dt), None, None, None)?.requires_grad_(true)?
            }
            "i64" => ops::randint_low(0, high, &size, Some(DType::INT64), None, None, None)?,
            "b" => ops::gt_Scalar(&ops::randn(&size, None, None, None, None)?, Scalar::Float(0.0))?,
            _ => panic!("unknown input type {typ}"),
        };
        v.push(Some(t));
    }
    Ok(v)
}

fn add_state(out: &mut Out, m: &Module, prefix: &str, keys: bool) -> Result<()> {
    for (k, t) in m.state_dict()? {
        if keys {
            out.state_keys.push_str(&k);
            out.state_keys.push('\n');
        }
        out.tensors.push((format!("{prefix}{k}"), ops::clone(&t, None)?));
    }
    Ok(())
}

fn dense(g: Tensor) -> Result<Tensor> {
    if g.layout() == Layout::STRIDED {
        return Ok(g);
    }
    let z = ops::zeros_like(&g, None, Some(Layout::STRIDED), None, None, None)?;
    ops::add_Tensor(&z, &g, Scalar::Int(1))
}

fn run_case(f: &[&str], load: Option<&str>, out: &mut Out) {
    if let Err(e) = run_case_inner(f, load, out) {
        out.fail("case", e);
    }
}

fn run_case_inner(f: &[&str], load: Option<&str>, out: &mut Out) -> Result<()> {
    let (id, args, spec, mode) = (f[0], f[2], f[3], f[5]);
    let kwargs = if f[4] == "-" { "" } else { f[4] };
    let full = load.is_none();
    ctorch::manual_seed(1234);
    let m = match cases_gen::build(id) {
        Some(Ok(m)) => m,
        Some(Err(e)) => {
            out.fail("new", e);
            return Ok(());
        }
        None => {
            out.fail("new", format!("no builder generated for case {id}"));
            return Ok(());
        }
    };
    if let Err(e) = m.train(mode == "train") {
        out.fail("train", e);
    }
    if full {
        match m.repr() {
            Ok(r) => out.repr = r,
            Err(e) => out.fail("repr", e),
        }
        if let Err(e) = add_state(out, &m, "init.", true) {
            out.fail("state_dict", e);
        }
        match m.named_parameters() {
            Ok(np) => np.iter().for_each(|(k, _)| {
                out.param_names.push_str(k);
                out.param_names.push('\n');
            }),
            Err(e) => out.fail("named_parameters", e),
        }
    } else {
        match ctorch::safetensors_load(load.unwrap()) {
            Err(e) => out.fail("load file", e),
            Ok(sd) => {
                if let Err(e) = m.load_state_dict(&sd, true) {
                    out.fail("load_state_dict", e);
                }
            }
        }
    }
    if !out.error.is_empty() {
        return Ok(());
    }
    ctorch::manual_seed(4321);
    let xs = match inputs(spec) {
        Ok(x) => x,
        Err(e) => {
            out.fail("inputs", e);
            return Ok(());
        }
    };
    // An in-place module gets a clone of each floating input (autograd refuses writes into leaves).
    let inplace = args.contains("inplace=True");
    let mut clones = Vec::new();
    for x in &xs {
        clones.push(match x {
            Some(t) if inplace && is_floating(t) => Some(ops::clone(t, None)?),
            _ => None,
        });
    }
    let call: Vec<Option<&Tensor>> =
        xs.iter().zip(&clones).map(|(x, c)| c.as_ref().or(x.as_ref())).collect();
    if full {
        for (i, x) in xs.iter().enumerate() {
            if let Some(t) = x {
                out.tensors.push((format!("in.{i}"), t.detach()?));
            }
        }
    }
    let outs = match m.forward_n(&call, kwargs) {
        Ok(o) => o,
        Err(e) => {
            out.fail("forward", e);
            return Ok(());
        }
    };
    for (i, o) in outs.iter().enumerate() {
        out.outputs.push(if o.is_some() { 'T' } else { 'N' });
        if let Some(t) = o {
            out.tensors.push((format!("out.{i}"), ops::clone(&t.detach()?, None)?));
        }
    }
    if full {
        let mut loss: Option<Tensor> = None;
        for t in outs.iter().flatten().filter(|t| is_floating(t)) {
            let s = ops::sum(&(t * t), None)?;
            loss = Some(match loss {
                None => s,
                Some(l) => &l + &s,
            });
        }
        if let Some(l) = loss {
            if l.requires_grad() {
                if let Err(e) = l.backward() {
                    out.fail("backward", e);
                }
            }
        }
        for (k, p) in m.named_parameters()? {
            if let Some(g) = p.grad()? {
                out.tensors.push((format!("grad.{k}"), dense(g)?));
            }
        }
        for (i, x) in xs.iter().enumerate() {
            if let Some(t) = x {
                if is_floating(t) {
                    if let Some(g) = t.grad()? {
                        out.tensors.push((format!("igrad.{i}"), g));
                    }
                }
            }
        }
    }
    if let Err(e) = add_state(out, &m, "post.", false) {
        out.fail("state_dict", e);
    }
    Ok(())
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 4 || (a[1] != "run" && a[1] != "load") {
        eprintln!("usage: nn_dump run|load CASES OUTDIR");
        std::process::exit(2);
    }
    let full = a[1] == "run";
    let text = std::fs::read_to_string(&a[2]).expect("cases file");
    let mut rc = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(" | ").map(str::trim).collect();
        if f.len() != 7 {
            eprintln!("nn_dump: not 7 fields: {line}");
            rc = 2;
            continue;
        }
        let in_path = format!("{}/{}.py_sd.safetensors", a[3], f[0]);
        let out_path = format!("{}/{}.{}.safetensors", a[3], f[0], if full { "c" } else { "c_load" });
        if !full && !std::path::Path::new(&in_path).exists() {
            continue;
        }
        let mut out = Out {
            tensors: Vec::new(),
            state_keys: String::new(),
            param_names: String::new(),
            outputs: String::new(),
            repr: String::new(),
            error: String::new(),
        };
        run_case(&f, if full { None } else { Some(&in_path) }, &mut out);
        let mut meta = vec![("outputs", out.outputs.as_str()), ("error", out.error.as_str())];
        if full {
            meta.extend([("state_keys", out.state_keys.as_str()), ("param_names", out.param_names.as_str()),
                         ("repr", out.repr.as_str())]);
        }
        if let Err(e) = ctorch::safetensors_save(&out_path, &out.tensors, &meta) {
            eprintln!("nn_dump: {out_path}: {e}");
            rc = 2;
        }
    }
    std::process::exit(rc);
}
