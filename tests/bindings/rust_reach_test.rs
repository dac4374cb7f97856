// binding_rust_reach: the hand-written wrappers of ctorch's
// extra.rs (strides, Vec and DLPack tensors, store values, hparams, shape
// checks, the failure log, the CPU counter, batch frees, closures as optimizer
// closures, LambdaLR factors and loader transforms), each called and its
// result asserted; closures that panic or fail give an Err, never an abort.
// Built and run by tests/bindings/run_rust.sh reach.
use ctorch::nn::{Linear, Sequential};
use ctorch::{capi, sys, DataLoader, DeviceType, Error, HParam, LrScheduler, Optimizer, Result, Tensor};

fn ok(what: &str) {
    println!("ok: {what}");
}

fn main() -> Result<()> {
    // The closures below panic on purpose: one line each instead of a backtrace.
    std::panic::set_hook(Box::new(|i| eprintln!("(expected) {i}")));
    // strides, data_ptr, from_vec (zero-copy over a Vec)
    let x = Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    assert_eq!(x.strides()?, vec![3, 1]);
    assert_eq!(x.t()?.strides()?, vec![1, 3]);
    let v = Tensor::from_vec(vec![1.5f64, 2.5, 3.5, 4.5], &[2, 2])?;
    assert_eq!(v.to_vec::<f64>()?, vec![1.5, 2.5, 3.5, 4.5]);
    let p = v.data_ptr()? as *const f64;
    assert_eq!(unsafe { *p.add(3) }, 4.5);
    assert!(Tensor::from_vec(vec![1f32; 5], &[2, 3]).is_err());
    assert!(Tensor::from_vec(vec![1f32; 0], &[-1]).is_err());
    assert_eq!(Tensor::from_vec(Vec::<f32>::new(), &[0, 3])?.size(), vec![0, 3]);
    ok("stride, data_ptr, from_vec");

    // Uint8 bytes 5 and 255 viewed as bool read back as
    // true, never as a bool holding 5 (where `b == true` and `!b` were both
    // true: undefined behaviour in safe code).
    let u = Tensor::from_slice(&[5u8, 0, 255, 1], &[4])?;
    let bools = ctorch::ops::view_dtype(&u, ctorch::DType::BOOL)?.to_vec::<bool>()?;
    assert_eq!(bools, vec![true, false, true, true]);
    assert!(bools.iter().all(|&b| (b as u8) <= 1) && (bools[0] == true) && !(!bools[0]));
    ok("bool bytes read as 0/1");
    // Torch.save and .npy bytes through Write/Read; Display is
    // Python's str(tensor), summarised (one line for 11,000 elements).
    let mut bytes = Vec::new();
    x.save_to(&mut bytes)?;
    assert_eq!(Tensor::load_from(&bytes[..])?.to_vec::<f32>()?, vec![1., 2., 3., 4., 5., 6.]);
    let mut npy = Vec::new();
    x.write_npy(&mut npy)?;
    assert_eq!(&npy[..6], b"\x93NUMPY");
    assert_eq!(Tensor::read_npy(&npy[..])?.size(), vec![2, 3]);
    assert!(Tensor::load_from(&b"PK not a checkpoint"[..]).is_err());
    let big = Tensor::from_vec((0..11000i64).collect(), &[11000])?;
    assert_eq!(format!("{big}"), "tensor([    0,     1,     2,  ..., 10997, 10998, 10999])");
    assert_eq!(x.format(Some(1), None, None, None, None)?, "tensor([[1., 2., 3.],\n        [4., 5., 6.]])");
    ok("save_to/load_from, write_npy/read_npy, Display as Python's str");

    // DLPack: shape read from the capsule, zero-copy round trip, Drop frees an unused one
    let cap = x.to_dlpack()?;
    assert_eq!(cap.shape(), vec![2, 3]);
    let y = Tensor::from_dlpack(cap)?;
    assert_eq!(y.to_vec::<f32>()?, x.to_vec::<f32>()?);
    assert_eq!(y.data_ptr()?, x.data_ptr()?);
    drop(x.to_dlpack()?);
    match x.to_dlpack_versioned() {
        Ok(c) => {
            assert_eq!(c.shape(), vec![2, 3]);
            let z = Tensor::from_dlpack_versioned(c)?;
            assert_eq!(z.data_ptr()?, x.data_ptr()?);
            drop(x.to_dlpack_versioned()?);
            ok("dlpack versioned round trip");
        }
        Err(e) => {
            assert_eq!(e.status, sys::CTORCH_NOT_IMPLEMENTED, "{e}");
            ok("dlpack versioned: NOT_IMPLEMENTED in this build");
        }
    }
    ok("dlpack");

    // the CPU counter and free_many: 3 tensors of 1 MiB each come and go
    let c = ctorch::memory_cpu_counter()?;
    assert_eq!(c.get(), capi::memory_bytes(DeviceType::CPU)?);
    let before = c.get();
    let ts: Vec<Tensor> = (0..3).map(|_| Tensor::from_slice(&vec![0f32; 1 << 18], &[1 << 18])).collect::<Result<_>>()?;
    let mid = c.get();
    assert!(mid - before >= 3 << 20, "counter grew by {}", mid - before);
    ctorch::tensor_free_many(ts);
    assert!(mid - c.get() >= 3 << 20, "free_many freed {}", mid - c.get());
    ok("memory_cpu_counter, tensor_free_many");

    // the failure log
    let a = Tensor::from_slice(&[1f32; 6], &[2, 3])?;
    let e = a.matmul(&a).unwrap_err();
    let id = ctorch::last_error_id();
    assert!(id > 0);
    assert_eq!(ctorch::last_error_copy()?, e.message);
    assert!(ctorch::last_error_backtrace().starts_with(&e.message[..e.message.len().min(40)]));
    let logged = std::thread::spawn(move || ctorch::error_message(id)).join().unwrap()?;
    assert_eq!((logged.status, &logged.message), (e.status, &e.message));
    assert_eq!(ctorch::error_message(id + 1_000_000).unwrap_err().status, sys::CTORCH_INDEX);
    ok("last_error_id, last_error_copy, last_error_backtrace, error_message");

    // store_get
    let dir = std::env::temp_dir().join(format!("ctorch-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = capi::store_file_new(dir.join("store").to_str().unwrap(), 1, 5000)?;
    capi::store_set(&store, "k", Some(b"hello"))?;
    assert_eq!(ctorch::store_get(&store, "k")?, b"hello");
    let long = vec![7u8; 10000];
    capi::store_set(&store, "k", Some(&long))?;
    assert_eq!(ctorch::store_get(&store, "k")?, long);
    capi::store_set(&store, "empty", None)?;
    assert_eq!(ctorch::store_get(&store, "empty")?, b"");
    ok("store_get");

    // add_hparams: a run directory with an event file; no hparams is refused
    let w = capi::summary_writer_new(dir.join("tb").to_str().unwrap(), None)?;
    ctorch::add_hparams(&w, &[("lr", HParam::Num(0.1)), ("opt", HParam::Text("adam"))], &[("acc", 0.9)], Some("run1"))?;
    let run = std::fs::read_dir(dir.join("tb").join("run1")).unwrap().count();
    assert!(run >= 1, "no event file in run1");
    assert!(ctorch::add_hparams(&w, &[], &[], None).is_err());
    ok("add_hparams");

    // capi's arrays that share one C length (api.json length_of) must agree
    let (lx, ly) = (Tensor::from_slice(&[1f32, 2.], &[2])?, Tensor::from_slice(&[3f32, 4., 5.], &[3])?);
    let st = dir.join("t.safetensors");
    let st = st.to_str().unwrap();
    for (i, r) in [
        capi::safetensors_save(st, &["t"], &[&lx], &["k1", "k2"], &["v1"]),
        capi::safetensors_save(st, &["a"], &[&lx, &ly], &[], &[]),
        capi::safetensors_save(st, &["a", "b"], &[&lx], &[], &[]),
        capi::save_dict(dir.join("t.pt").to_str().unwrap(), &["a"], &[&lx, &ly]),
    ]
    .into_iter()
    .enumerate()
    {
        let e = r.expect_err("lengths that differ");
        assert_eq!(e.status, sys::CTORCH_INVALID_ARGUMENT, "case {i}");
        assert!(e.message.ends_with("entries; they share one length"), "case {i}: {}", e.message);
    }
    assert!(!dir.join("t.safetensors").exists() && !dir.join("t.pt").exists());
    capi::safetensors_save(st, &["a", "b"], &[&lx, &ly], &["k"], &["v"])?;
    assert!(dir.join("t.safetensors").exists());
    ok("arrays sharing a length");

    // shape_check, forward_child_n
    let lin = Linear::new(4, 3).build()?;
    let m = Sequential::new(&[&lin])?;
    let text = m.shape_check(&[&[2, 4]])?;
    assert!(text.contains("[2, 3]"), "{text}");
    assert!(m.shape_check(&[&[2, 5]]).is_err());
    let xin = Tensor::from_slice(&[0.5f32; 8], &[2, 4])?;
    let outs = m.forward_child_n("0", &[Some(&xin)], "")?;
    assert_eq!(outs.len(), 1);
    let o = outs[0].as_ref().unwrap();
    assert_eq!(o.to_vec::<f32>()?, lin.forward(&xin)?.to_vec::<f32>()?);
    assert_eq!(m.forward_child_n("nope", &[Some(&xin)], "").unwrap_err().status, sys::CTORCH_INDEX);
    ok("shape_check, forward_child_n");

    // step_closure: the loss is sum(w^2); SGD with lr 0.1 moves w to 0.8 w
    let wt = Tensor::from_slice(&[1f32, -2.], &[2])?.requires_grad_(true)?;
    let opt = Optimizer::sgd(&[wt.shallow_clone()?], 0.1, 0.0)?;
    let loss = opt.step_closure(|| {
        opt.zero_grad(true)?;
        let l = wt.square()?.sum()?;
        l.backward()?;
        l.item()
    })?;
    assert_eq!(loss, 5.0);
    assert_eq!(wt.to_vec::<f32>()?, vec![0.8, -1.6]);
    let e = opt.step_closure(|| panic!("boom")).unwrap_err();
    assert!(e.message.contains("panicked: boom"), "{e}");
    let e = opt.step_closure(|| Err(Error { status: sys::CTORCH_VALUE, message: "mine".into() })).unwrap_err();
    assert!(e.status == sys::CTORCH_VALUE && e.message.contains("mine"), "{e}");
    assert_eq!(wt.to_vec::<f32>()?, vec![0.8, -1.6]);
    ok("step_closure (and a panicking closure is an Err)");

    // LambdaLR: lr = 0.1 * 0.5^epoch; a panic at epoch 2 fails that step, lr kept
    let s = LrScheduler::lambda(&opt, false, |e, _| if e == 2 { panic!("epoch 2") } else { 0.5f64.powi(e as i32) })?;
    assert!((opt.lr(0)? - 0.1).abs() < 1e-12);
    capi::lr_scheduler_step(&s)?;
    assert!((opt.lr(0)? - 0.05).abs() < 1e-12);
    assert!(capi::lr_scheduler_step(&s).is_err());
    assert!((opt.lr(0)? - 0.05).abs() < 1e-12);
    let s2 = LrScheduler::lambda(&opt, true, |_, _| 0.5)?;
    capi::lr_scheduler_step(&s2)?;
    assert!((opt.lr(0)? - 0.025).abs() < 1e-12);
    ok("lr_scheduler_lambda (and a panicking lambda is an Err)");

    // loader transform: data doubled, target replaced by index; then a panicking one
    let data = Tensor::from_slice(&[1f32, 2., 3., 4.], &[4, 1])?;
    let tgt = Tensor::from_slice(&[0i64; 4], &[4])?;
    let mut loader = DataLoader::new(&data, Some(&tgt), 4, false, 0, false)?;
    loader.set_transform_fn(|i, d, t| {
        assert!(t.is_some());
        Ok((d.mul_Scalar(2.0.into())?, Some(Tensor::from_slice(&[i], &[])?)))
    })?;
    let (d, t) = loader.epoch(0)?.next().unwrap()?;
    assert_eq!(d.to_vec::<f32>()?, vec![2., 4., 6., 8.]);
    assert_eq!(t.to_vec::<i64>()?, vec![0, 1, 2, 3]);
    loader.set_transform_fn(|_, _, _| panic!("transform"))?;
    assert!(loader.epoch(1)?.next().unwrap().is_err());
    loader.clear_transform_fn()?;
    let (d, _) = loader.epoch(2)?.next().unwrap()?;
    assert_eq!(d.to_vec::<f32>()?, vec![1., 2., 3., 4.]);
    ok("data_loader_set_transform_fn (and a panicking transform is an Err)");

    // a dataset from closures, batched by a loader; a panicking get_item fails the batch
    let ds = ctorch::Dataset::from_fn(|| Ok(4), |i| {
        Ok((Tensor::from_slice(&[i as f32], &[1])?, Some(Tensor::from_slice(&[i * 10], &[])?)))
    })?;
    assert_eq!(capi::dataset_len(&ds)?, 4);
    let mut dl = capi::data_loader_from_dataset(&ds, 4, false, 0, false)?;
    drop(ds);
    let (d, t) = dl.epoch(0)?.next().unwrap()?;
    assert_eq!((d.to_vec::<f32>()?, t.to_vec::<i64>()?), (vec![0., 1., 2., 3.], vec![0, 10, 20, 30]));
    drop(dl);
    let bad = ctorch::Dataset::from_fn(|| Ok(2), |i| if i == 1 { panic!("item 1") } else { Err(Error { status: sys::CTORCH_VALUE, message: "x".into() }) })?;
    let mut dl = capi::data_loader_from_dataset(&bad, 2, false, 0, false)?;
    assert!(dl.epoch(0)?.next().unwrap().is_err());
    let nolen = ctorch::Dataset::from_fn(|| panic!("len"), |_| unreachable!())?;
    assert!(capi::dataset_len(&nolen).is_err());
    ok("dataset_from_callbacks (and panicking callbacks are Errs)");

    // a module whose forward is a closure: every input times 3, kwargs checked
    let m = ctorch::nn::Module::custom("Scale", |_m, ins, kw| {
        if !kw.is_empty() { return Err(Error { status: sys::CTORCH_INVALID_ARGUMENT, message: format!("kwargs {kw}") }) }
        ins.iter().map(|t| t.map(|t| t.mul_Scalar(3.0.into())).transpose()).collect()
    })?;
    assert!(m.repr()?.contains("Scale"));
    let a2 = Tensor::from_slice(&[1f32, 2.], &[2])?;
    assert_eq!(m.forward(&a2)?.to_vec::<f32>()?, vec![3., 6.]);
    let outs = m.forward_n(&[Some(&a2), None, Some(&a2)], "")?;
    assert_eq!(outs.len(), 3);
    assert!(outs[1].is_none());
    assert_eq!(outs[2].as_ref().unwrap().to_vec::<f32>()?, vec![3., 6.]);
    assert!(m.forward_n(&[Some(&a2)], "k=1").is_err());
    let seq = Sequential::new(&[&m, &m])?;
    assert_eq!(seq.forward(&a2)?.to_vec::<f32>()?, vec![9., 18.]);
    let boom = ctorch::nn::Module::custom("Boom", |_, _, _| panic!("forward"))?;
    assert!(boom.forward(&a2).is_err());
    let many = ctorch::nn::Module::custom("Many", |_, _, _| Ok((0..20).map(|_| None).collect()))?;
    assert!(many.forward_n(&[Some(&a2)], "").is_err());
    ok("nn_custom_new (and a panicking forward is an Err)");

    // a custom autograd function: y = x * x, dy/dx = 2 x from the saved x
    let xg = Tensor::from_slice(&[1f32, 3.], &[2])?.requires_grad_(true)?;
    let y = ctorch::autograd_function_apply(&[&xg], 1, |ctx, ins| {
        let x = ins[0].unwrap();
        capi::autograd_ctx_save_for_backward(ctx, &[x])?;
        Ok(vec![x.mul(x)?])
    }, |ctx, gs| {
        let saved = capi::autograd_ctx_saved_tensors(ctx)?;
        Ok(vec![Some(gs[0].unwrap().mul(&saved[0].mul_Scalar(2.0.into())?)?)])
    })?;
    assert_eq!(y[0].to_vec::<f32>()?, vec![1., 9.]);
    y[0].sum()?.backward()?;
    assert_eq!(xg.grad()?.unwrap().to_vec::<f32>()?, vec![2., 6.]);
    let e = ctorch::autograd_function_apply(&[&xg], 1, |_, _| panic!("fwd"), |_, _| Ok(vec![None])).unwrap_err();
    assert!(e.message.contains("panicked: fwd"), "{e}");
    let e = ctorch::autograd_function_apply(&[&xg], 2, |_, ins| Ok(vec![ins[0].unwrap().mul_Scalar(1.0.into())?]),
                                            |_, _| Ok(vec![None])).unwrap_err();
    assert!(e.message.contains("not 2"), "{e}");
    let y = ctorch::autograd_function_apply(&[&xg], 1, |_, ins| Ok(vec![ins[0].unwrap().mul_Scalar(1.0.into())?]),
        |_, _| Err(Error { status: sys::CTORCH_VALUE, message: "bwd says no".into() }))?;
    let e = y[0].sum()?.backward().unwrap_err();
    assert!(e.message.contains("bwd says no"), "{e}");
    let y = ctorch::autograd_function_apply(&[&xg], 1, |_, ins| Ok(vec![ins[0].unwrap().mul_Scalar(1.0.into())?]),
        |_, _| panic!("bwd"))?;
    assert!(y[0].sum()?.backward().unwrap_err().message.contains("panicked: bwd"));
    ok("autograd_function_apply (and panicking callbacks are Errs)");

    // Operators on values and references, a scalar on the
    // left, compound assignment, ==, indexing with ranges, From/TryFrom, module
    // sub-trees (get, freezing) and param groups added with their own options.
    let a = Tensor::try_from(vec![vec![1.0f32, 2.0, 3.0], vec![4.0, 5.0, 6.0]])?;
    assert_eq!((a.size(), a.to_vec::<f32>()?), (vec![2, 3], vec![1., 2., 3., 4., 5., 6.]));
    let mut b = -&a + 1.0;
    assert_eq!(b.to_vec::<f32>()?, vec![0., -1., -2., -3., -4., -5.]);
    b += &a;
    assert!(b == Tensor::try_from(vec![vec![1.0f32; 3]; 2])?);
    assert!(b != a);
    b *= 2;
    b -= Tensor::from(0.5f32);
    assert_eq!(b.to_vec::<f32>()?, vec![1.5; 6]);
    assert_eq!((1.0 - &a).to_vec::<f32>()?, vec![0., -1., -2., -3., -4., -5.]);
    assert_eq!((2.0 / (&a * 2)).to_vec::<f32>()?, vec![1., 0.5, 1. / 3., 0.25, 0.2, 1. / 6.]);
    assert_eq!((a.shallow_clone()? + a.shallow_clone()? - &a).to_vec::<f32>()?, a.to_vec::<f32>()?);
    assert_eq!((3 * -a.shallow_clone()?).to_vec::<f32>()?, vec![-3., -6., -9., -12., -15., -18.]);
    assert_eq!(a.i((.., 1..3))?.to_vec::<f32>()?, vec![2., 3., 5., 6.]);
    assert_eq!(a.i((-1, ..=1))?.to_vec::<f32>()?, vec![4., 5.]);
    assert_eq!(a.i(1)?.i(2)?.to_vec::<f32>()?, vec![6.]);
    assert_eq!(a.i((.., -2..))?.size(), vec![2, 2]);
    assert_eq!(Tensor::from(7i64).to_vec::<i64>()?, vec![7]);
    assert_eq!(Tensor::from(true).dtype(), ctorch::DType::BOOL);
    assert!(Tensor::try_from(vec![vec![1i64, 2], vec![3]]).is_err());
    assert_eq!(Tensor::try_from(vec![vec![vec![1u8, 2], vec![3, 4]]])?.size(), vec![1, 2, 2]);
    ok("operators on values, scalars on the left, +=, ==, i((.., 1..3)), From/TryFrom");
    let net = Sequential::named(&[("features", "Linear", "3, 4"), ("head", "Linear", "4, 2")])?;
    let names: Vec<String> = net.named_parameters()?.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["features.weight", "features.bias", "head.weight", "head.bias"]);
    net.get("features")?.set_requires_grad(false)?;
    let frozen: Vec<bool> = net.parameters()?.iter().map(|p| p.requires_grad()).collect();
    assert_eq!(frozen, [false, false, true, true]);
    assert!(net.get("nope").is_err());
    let opt = Optimizer::sgd(&net.get("head")?.parameters()?, 0.1, 0.0)?;
    opt.add_param_group(&net.get("features")?.parameters()?,
                        ctorch::optim::OptimOptions::new(ctorch::OptimizerKind::SGD).lr(0.01))?;
    assert_eq!((opt.num_param_groups()?, opt.lr(0)?, opt.lr(1)?), (2, 0.1, 0.01));
    ok("module sub-trees (named paths, get, freezing) and param groups with their own options");
    // A module's state dict and an optimizer's state through
    // Write/Read; a module of other shapes refuses the bytes.
    let mut bytes = Vec::new();
    net.save_to(&mut bytes)?;
    let twin = Sequential::named(&[("features", "Linear", "3, 4"), ("head", "Linear", "4, 2")])?;
    assert!(twin.parameters()?[0] != net.parameters()?[0]);
    twin.load_from(&bytes[..])?;
    assert!(twin.state_dict()?.iter().zip(net.state_dict()?.iter()).all(|((n, t), (m, u))| n == m && t == u));
    assert!(Sequential::named(&[("features", "Linear", "3, 5")])?.load_from(&bytes[..]).is_err());
    let w = Tensor::from_slice(&[1f32, -2.0], &[2])?.requires_grad_(true)?;
    let adam = Optimizer::adam(&[w.shallow_clone()?], 0.1)?;
    adam.backward_step(&(&w * &w).sum()?)?;
    let mut ob = Vec::new();
    adam.save_to(&mut ob)?;
    let adam2 = Optimizer::adam(&[w.shallow_clone()?], 0.1)?;
    adam2.load_from(&ob[..])?;
    let mut ob2 = Vec::new();
    adam2.save_to(&mut ob2)?;
    assert_eq!(ob, ob2);
    assert!(adam2.load_from(&b"not a checkpoint"[..]).is_err());
    ok("nn::Module and Optimizer save_to/load_from (Write/Read)");

    // Debug of the enum newtypes names the value (the
    // constant's name); a value outside the header's set still prints.
    use ctorch::{DType, Device, Layout, Reduction};
    assert_eq!(format!("{:?}", DType(10)), "FLOAT64");
    assert_eq!(format!("{:?} {:?}", DType::BOOL, Reduction::MEAN), "BOOL MEAN");
    assert_eq!(format!("{:?}", DType(99)), "DType(99)");
    assert_eq!(format!("{:?}", Reduction(-3)), "Reduction(-3)");
    assert_eq!(format!("{} {} {}", DType::FLOAT32, Layout::SPARSE_COO, DeviceType::CUDA), "float32 sparse_coo cuda");
    assert_eq!(format!("{} {}", Device::CPU, Device::cuda(1)), "cpu cuda:1");
    assert_eq!(format!("{:?}", Device::CPU), "Device { kind: CPU, index: -1 }");
    assert_eq!(format!("{:?}", a), "Tensor([2, 3], FLOAT32)");
    ok("Debug/Display of the enums name the value");

    // Ndarray (feature `ndarray`) both ways, every shared dtype.
    ndarray_both_ways()?;
    ok("ndarray <-> Tensor: every shared dtype, C/Fortran/strided layouts, dtype mismatch an Err");

    std::fs::remove_dir_all(&dir).ok();
    println!("reach: all wrappers behave");
    Ok(())
}

// Each element type of the ndarray feature: an array in C order, its
// transpose (Fortran order) and a stepped, reversed slice go to tensors with
// the same values in logical order, and back; a tensor of another dtype is an
// error naming both; non-contiguous tensors (a transpose, a strided slice)
// come back in their logical order.
fn ndarray_both_ways() -> Result<()> {
    use ndarray::{s, Array, Array2, ArrayD, ShapeBuilder};
    fn one<T: ctorch::Element + Send + 'static + PartialEq + std::fmt::Debug>(vals: [T; 6], other: ctorch::DType)
        -> Result<()> {
        let a = Array::from_shape_vec((2, 3), vals.to_vec()).unwrap();
        let dims = |t: &Tensor| t.size();
        // by reference (a copy), by view, owned (zero-copy), Fortran order, strided
        let t = Tensor::try_from(&a)?;
        assert_eq!((dims(&t), t.dtype(), t.to_vec::<T>()?), (vec![2, 3], T::DTYPE, vals.to_vec()));
        assert_eq!(Tensor::try_from(a.view())?.to_vec::<T>()?, vals.to_vec());
        assert_eq!(Tensor::try_from(a.clone())?.to_vec::<T>()?, vals.to_vec());
        let at = a.t();
        assert!(!at.is_standard_layout());
        let tt = Tensor::try_from(at)?;
        assert_eq!(dims(&tt), vec![3, 2]);
        assert_eq!(tt.to_vec::<T>()?, at.iter().copied().collect::<Vec<T>>());
        let f = Array::from_shape_vec((2, 3).f(), vals.to_vec()).unwrap(); // column-major memory
        assert_eq!(Tensor::try_from(f.clone())?.to_vec::<T>()?, f.iter().copied().collect::<Vec<T>>());
        let st = a.slice(s![.., ..;-2]);
        assert_eq!(Tensor::try_from(st)?.to_vec::<T>()?, st.iter().copied().collect::<Vec<T>>());
        let mut sliced = a.clone();
        sliced.slice_collapse(s![1.., ..]); // an owned array that is a part of its Vec
        assert_eq!(Tensor::try_from(sliced.clone())?.to_vec::<T>()?, sliced.iter().copied().collect::<Vec<T>>());
        // back: the same values and shape, from contiguous and non-contiguous tensors
        assert_eq!(ArrayD::<T>::try_from(&t)?, a.clone().into_dyn());
        assert_eq!(Array2::<T>::try_from(&t.t()?)?, a.t().to_owned());
        let tt2 = ctorch::ops::slice_Tensor(&t, 1, Some(0), None, 2)?; // columns 0 and 2
        assert_eq!(Array2::<T>::try_from(&tt2)?, a.slice(s![.., ..;2]).to_owned());
        assert!(ndarray::Array1::<T>::try_from(&t).is_err()); // 2 dimensions into Array1: an error
        // another dtype: an Err (TYPE), no conversion, no panic
        let e = ArrayD::<T>::try_from(&t.to_dtype(other)?).unwrap_err();
        assert_eq!(e.status, sys::CTORCH_TYPE, "{e}");
        assert!(e.message.contains(&format!("{}", other)), "{e}");
        Ok(())
    }
    one([1.5f32, -2.0, 3.25, 4.0, 5.0, 6.5], ctorch::DType::FLOAT64)?;
    one([1.5f64, -2.0, 3.25, 4.0, 5.0, 6.5], ctorch::DType::FLOAT32)?;
    one([1i64 << 40, -2, 3, 4, 5, 6], ctorch::DType::INT32)?;
    one([1i32, -2, 3, 4, 5, i32::MAX], ctorch::DType::INT64)?;
    one([1i16, -2, 3, 4, 5, i16::MIN], ctorch::DType::INT32)?;
    one([1i8, -2, 3, 4, 5, 127], ctorch::DType::UINT8)?;
    one([1u8, 2, 3, 4, 5, 255], ctorch::DType::INT8)?;
    one([true, false, true, true, false, false], ctorch::DType::UINT8)?;
    // 0-dimensional and empty arrays
    let z = Tensor::try_from(ndarray::arr0(2.5f64))?;
    assert_eq!((z.size(), z.item()?), (vec![], 2.5));
    assert_eq!(ndarray::Array0::<f64>::try_from(&z)?.into_scalar(), 2.5);
    let e = Tensor::try_from(Array2::<f32>::zeros((0, 4)))?;
    assert_eq!(e.size(), vec![0, 4]);
    assert_eq!(ArrayD::<f32>::try_from(&e)?.shape(), &[0, 4]);
    Ok(())
}
