//! Everyday forms tch-rs users reach for: operators on
//! values and references and with a scalar on the left, compound assignment,
//! `==`, indexing with ranges (`t.i((.., 1..3))?`), and tensors from scalars
//! and nested `Vec`s. Operators panic on failure, as `&a + &b` always has (the
//! `ops::` functions and `Tensor` methods return a `Result`); comparisons that
//! give a tensor are the methods `t.lt(&u)?`, `t.lt_Scalar(0.5.into())?`, ...
//!
//! ```
//! # fn main() -> ctorch::Result<()> {
//! use ctorch::Tensor;
//! let a = Tensor::try_from(vec![vec![1.0f32, 2.0, 3.0], vec![4.0, 5.0, 6.0]])?;
//! let mut b = -&a + 1.0;                 // values and references, a scalar on either side
//! b += &a;                               // in place (add_)
//! let c = 2.0 / (&b * 4) - a.shallow_clone()?;
//! assert!(b == Tensor::try_from(vec![vec![1.0f32; 3]; 2])?);
//! let cols = c.i((.., 1..3))?;           // t[:, 1:3]
//! let last = c.i((-1, ..=1))?;           // t[-1, :2]
//! assert_eq!((cols.size(), last.to_vec::<f32>()?), (vec![2, 2], vec![-3.5, -4.5]));
//! assert!(a.gt_Scalar(2.5.into())? == Tensor::try_from(vec![vec![false, false, true], vec![true; 3]])?);
//! assert_eq!(Tensor::from(1.5).item()?, 1.5);                     // a 0-dim float64 tensor
//! assert!(Tensor::try_from(vec![vec![1i64, 2], vec![3]]).is_err()); // ragged rows: an Err
//! # Ok(()) }
//! ```
use crate::{ops, Element, Error, Result, Scalar, Tensor};
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

fn or_panic<T>(r: Result<T>, op: &str) -> T {
    r.unwrap_or_else(|e| panic!("{op}: {e}"))
}

// Owned operands: the same operators as on references (lib.rs's binop!).
macro_rules! owned_binop {
    ($tr:ident, $m:ident) => {
        impl std::ops::$tr<Tensor> for Tensor {
            type Output = Tensor;
            fn $m(self, o: Tensor) -> Tensor {
                std::ops::$tr::$m(&self, &o)
            }
        }
        impl std::ops::$tr<&Tensor> for Tensor {
            type Output = Tensor;
            fn $m(self, o: &Tensor) -> Tensor {
                std::ops::$tr::$m(&self, o)
            }
        }
        impl std::ops::$tr<Tensor> for &Tensor {
            type Output = Tensor;
            fn $m(self, o: Tensor) -> Tensor {
                std::ops::$tr::$m(self, &o)
            }
        }
        impl<S: Into<Scalar>> std::ops::$tr<S> for Tensor {
            type Output = Tensor;
            fn $m(self, o: S) -> Tensor {
                std::ops::$tr::$m(&self, o)
            }
        }
    };
}
owned_binop!(Add, add);
owned_binop!(Sub, sub);
owned_binop!(Mul, mul);
owned_binop!(Div, div);

impl std::ops::Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        or_panic(ops::neg(self), "neg")
    }
}
impl std::ops::Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        -&self
    }
}

// A scalar on the left, as Python's __radd__, __rsub__ (rsub), __rmul__ and
// __rtruediv__ (reciprocal() * s) compute it.
macro_rules! scalar_left {
    ($($t:ty),*) => {$(
        impl std::ops::Add<&Tensor> for $t {
            type Output = Tensor;
            fn add(self, t: &Tensor) -> Tensor { t + self }
        }
        impl std::ops::Add<Tensor> for $t {
            type Output = Tensor;
            fn add(self, t: Tensor) -> Tensor { &t + self }
        }
        impl std::ops::Sub<&Tensor> for $t {
            type Output = Tensor;
            fn sub(self, t: &Tensor) -> Tensor { or_panic(ops::rsub_Scalar(t, self.into(), Scalar::Int(1)), "rsub") }
        }
        impl std::ops::Sub<Tensor> for $t {
            type Output = Tensor;
            fn sub(self, t: Tensor) -> Tensor { self - &t }
        }
        impl std::ops::Mul<&Tensor> for $t {
            type Output = Tensor;
            fn mul(self, t: &Tensor) -> Tensor { t * self }
        }
        impl std::ops::Mul<Tensor> for $t {
            type Output = Tensor;
            fn mul(self, t: Tensor) -> Tensor { &t * self }
        }
        impl std::ops::Div<&Tensor> for $t {
            type Output = Tensor;
            fn div(self, t: &Tensor) -> Tensor { or_panic(ops::reciprocal(t), "reciprocal") * self }
        }
        impl std::ops::Div<Tensor> for $t {
            type Output = Tensor;
            fn div(self, t: Tensor) -> Tensor { self / &t }
        }
    )*};
}
// f64 and i64 only: with one float and one integer type, `1.0 - &t` and
// `3 * &t` infer their literal's type (with f32 too, `(1.0 - &t).sum()` would
// need an annotation).
scalar_left!(f64, i64);

// a += &b: the in-place operators (add_, sub_, mul_, div_) on a's tensor.
macro_rules! assign_op {
    ($tr:ident, $m:ident, $t:ident, $s:ident $(, $alpha:expr)?) => {
        impl std::ops::$tr<&Tensor> for Tensor {
            fn $m(&mut self, o: &Tensor) {
                or_panic(ops::$t(self, o $(, $alpha)?), stringify!($t))
            }
        }
        impl std::ops::$tr<Tensor> for Tensor {
            fn $m(&mut self, o: Tensor) {
                std::ops::$tr::$m(self, &o)
            }
        }
        impl<S: Into<Scalar>> std::ops::$tr<S> for Tensor {
            fn $m(&mut self, o: S) {
                or_panic(ops::$s(self, o.into() $(, $alpha)?), stringify!($s))
            }
        }
    };
}
assign_op!(AddAssign, add_assign, add__Tensor, add__Scalar, Scalar::Int(1));
assign_op!(SubAssign, sub_assign, sub__Tensor, sub__Scalar, Scalar::Int(1));
assign_op!(MulAssign, mul_assign, mul__Tensor, mul__Scalar);
assign_op!(DivAssign, div_assign, div__Tensor, div__Scalar);

/// `a == b` is `torch.equal(a, b)`: the same size and elements (false if the
/// comparison fails, e.g. across devices). Elementwise: `a.eq(&b)?`.
impl PartialEq for Tensor {
    fn eq(&self, o: &Tensor) -> bool {
        ops::equal(self, o).unwrap_or(false)
    }
}

// ---- indexing ------------------------------------------------------------------

/// One index of [`Tensor::i`]: an integer (selects, removing the dimension)
/// or a range (slices, keeping it); negative values count from the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorIndex {
    /// `t[i]`
    Select(i64),
    /// `t[start:end]` (None: from the start / to the end)
    Slice(Option<i64>, Option<i64>),
}

/// What [`Tensor::i`] takes: an index, or a tuple of up to 6 of them.
pub trait IndexSpec {
    /// The indices, dimension by dimension from the first.
    fn indices(self) -> Vec<TensorIndex>;
}

/// Values that are one index: `i64`, `..`, `a..b`, `a..`, `..b`, `a..=b`, `..=b`.
pub trait IntoIndex {
    /// This index.
    fn into_index(self) -> TensorIndex;
}
impl IntoIndex for i64 {
    fn into_index(self) -> TensorIndex { TensorIndex::Select(self) }
}
impl IntoIndex for RangeFull {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(None, None) }
}
impl IntoIndex for Range<i64> {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(Some(self.start), Some(self.end)) }
}
impl IntoIndex for RangeFrom<i64> {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(Some(self.start), None) }
}
impl IntoIndex for RangeTo<i64> {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(None, Some(self.end)) }
}
// An inclusive end of -1 is the last element: to the end.
fn inclusive_end(e: i64) -> Option<i64> { if e == -1 { None } else { Some(e + 1) } }
impl IntoIndex for RangeInclusive<i64> {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(Some(*self.start()), inclusive_end(*self.end())) }
}
impl IntoIndex for RangeToInclusive<i64> {
    fn into_index(self) -> TensorIndex { TensorIndex::Slice(None, inclusive_end(self.end)) }
}
macro_rules! one_index_spec {
    ($($t:ty),*) => {$(
        impl IndexSpec for $t {
            fn indices(self) -> Vec<TensorIndex> { vec![self.into_index()] }
        }
    )*};
}
one_index_spec!(i64, RangeFull, Range<i64>, RangeFrom<i64>, RangeTo<i64>, RangeInclusive<i64>, RangeToInclusive<i64>);
macro_rules! tuple_index_spec {
    ($($n:ident),*) => {
        impl<$($n: IntoIndex),*> IndexSpec for ($($n,)*) {
            #[allow(non_snake_case)]
            fn indices(self) -> Vec<TensorIndex> {
                let ($($n,)*) = self;
                vec![$($n.into_index()),*]
            }
        }
    };
}
tuple_index_spec!(A);
tuple_index_spec!(A, B);
tuple_index_spec!(A, B, C);
tuple_index_spec!(A, B, C, D);
tuple_index_spec!(A, B, C, D, E);
tuple_index_spec!(A, B, C, D, E, F);

impl Tensor {
    /// Basic indexing as Python's `t[...]` with integers and slices:
    /// `t.i(2)?` is `t[2]`, `t.i((.., 1..3))?` is `t[:, 1:3]`, `t.i((-1, ..=1))?`
    /// is `t[-1, :2]`. A view (select and slice), as in PyTorch.
    pub fn i<S: IndexSpec>(&self, spec: S) -> Result<Tensor> {
        let mut t = self.shallow_clone()?;
        let mut dim = 0i64;
        for ix in spec.indices() {
            match ix {
                TensorIndex::Select(i) => t = ops::select_int(&t, dim, i)?,
                TensorIndex::Slice(None, None) => dim += 1,
                TensorIndex::Slice(s, e) => {
                    t = ops::slice_Tensor(&t, dim, s, e, 1)?;
                    dim += 1;
                }
            }
        }
        Ok(t)
    }
}

// ---- tensors from scalars and nested Vecs ---------------------------------------------

macro_rules! from_scalar {
    ($($t:ty),*) => {$(
        /// A 0-dimensional tensor holding the value (its dtype: the Rust type's).
        impl From<$t> for Tensor {
            fn from(v: $t) -> Tensor {
                or_panic(Tensor::from_slice(&[v], &[]), "Tensor::from")
            }
        }
    )*};
}
from_scalar!(f32, f64, i64, i32, u8, bool);

/// A 1-dimensional tensor of the elements.
impl<T: Element> TryFrom<Vec<T>> for Tensor {
    type Error = Error;
    fn try_from(v: Vec<T>) -> Result<Tensor> {
        Tensor::from_slice(&v, &[v.len() as i64])
    }
}
/// A 1-dimensional tensor of the elements.
impl<T: Element> TryFrom<&[T]> for Tensor {
    type Error = Error;
    fn try_from(v: &[T]) -> Result<Tensor> {
        Tensor::from_slice(v, &[v.len() as i64])
    }
}
/// A 2-dimensional tensor; rows of different lengths are an error.
impl<T: Element> TryFrom<Vec<Vec<T>>> for Tensor {
    type Error = Error;
    fn try_from(v: Vec<Vec<T>>) -> Result<Tensor> {
        let cols = v.first().map_or(0, |r| r.len());
        if v.iter().any(|r| r.len() != cols) {
            return Err(Error::binding("Tensor::try_from: rows of different lengths (a ragged Vec<Vec<_>>)"));
        }
        let flat: Vec<T> = v.into_iter().flatten().collect();
        Tensor::from_slice(&flat, &[if cols == 0 { 0 } else { (flat.len() / cols) as i64 }, cols as i64])
    }
}
/// A 3-dimensional tensor; ragged inner lengths are an error.
impl<T: Element> TryFrom<Vec<Vec<Vec<T>>>> for Tensor {
    type Error = Error;
    fn try_from(v: Vec<Vec<Vec<T>>>) -> Result<Tensor> {
        let (d1, d2) = (v.first().map_or(0, |m| m.len()), v.first().and_then(|m| m.first()).map_or(0, |r| r.len()));
        if v.iter().any(|m| m.len() != d1 || m.iter().any(|r| r.len() != d2)) {
            return Err(Error::binding("Tensor::try_from: ragged Vec<Vec<Vec<_>>>"));
        }
        let d0 = v.len() as i64;
        let flat: Vec<T> = v.into_iter().flatten().flatten().collect();
        Tensor::from_slice(&flat, &[d0, d1 as i64, d2 as i64])
    }
}
