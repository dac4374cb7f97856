//! Safe Rust cannot lose updates through aliasing handles (include/ctorch.h,
//! "Threads": tensor writes are exclusive per storage). Two threads each add
//! 1.0 in place 200,000 times, each through its own handle to one storage: a
//! `shallow_clone`, then `ops::alias` and a view. Every add returns Ok or a
//! BUSY error (the other thread was writing the storage); the final value
//! must equal the number of Ok adds, which fails on a lost update. Threads
//! writing tensors of their own never get BUSY.
use ctorch::{ops, sys, Scalar, Tensor};
use std::thread;

const ADDS: u64 = 200_000;

fn adds(x: Tensor, what: &'static str) -> thread::JoinHandle<(u64, u64)> {
    thread::spawn(move || {
        let (mut ok, mut busy) = (0u64, 0u64);
        for _ in 0..ADDS {
            match ops::add__Scalar(&x, Scalar::Float(1.0), Scalar::Int(1)) {
                Ok(()) => ok += 1,
                Err(e) if e.status == sys::CTORCH_BUSY => {
                    assert!(e.message.contains("'self'") && e.message.contains("another thread"),
                            "{what}: the BUSY error names the argument: {}", e.message);
                    busy += 1
                }
                Err(e) => panic!("{what}: {e}"),
            }
        }
        (ok, busy)
    })
}

fn hammer(what: &'static str, make: fn(&Tensor) -> ctorch::Result<Tensor>) -> (u64, u64) {
    let t = Tensor::from_slice(&[0f32], &[1]).unwrap();
    let (a, b) = (make(&t).unwrap(), make(&t).unwrap());
    let (ha, hb) = (adds(a, what), adds(b, what));
    let ((oa, ba), (ob, bb)) = (ha.join().unwrap(), hb.join().unwrap());
    let v = t.to_vec::<f32>().unwrap()[0] as u64;
    assert_eq!(v, oa + ob, "{what}: value {v} after {oa} + {ob} successful adds ({ba} + {bb} BUSY): lost updates");
    println!("{what}: {v} = {oa} + {ob} successful adds, {} BUSY", ba + bb);
    (oa + ob, ba + bb)
}

fn main() {
    hammer("shallow_clone", |t| t.shallow_clone());
    hammer("ops::alias", |t| ops::alias(t));
    hammer("view", |t| t.view(&[1]));
    // Storages of their own: never BUSY.
    let own: Vec<_> = (0..2)
        .map(|_| {
            let t = Tensor::from_slice(&[0f32], &[1]).unwrap();
            let keep = t.shallow_clone().unwrap();
            (adds(t, "own"), keep)
        })
        .collect();
    for (h, t) in own {
        let (ok, busy) = h.join().unwrap();
        assert_eq!((ok, busy), (ADDS, 0), "a thread writing its own tensor got BUSY");
        assert_eq!(t.to_vec::<f32>().unwrap()[0] as u64, ADDS);
    }
    println!("ok: no lost update through aliasing handles; no BUSY on storages of their own");
}
