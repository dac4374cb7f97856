//! Conversions between [`Tensor`] and the `ndarray` crate's arrays (feature
//! `ndarray`), for every element type both have: `f32`, `f64`,
//! `i64`, `i32`, `i16`, `i8`, `u8`, `bool`.
//!
//! - `ArrayD::<T>::try_from(&t)` (or `Array2::<T>`, any dimension): a copy of
//!   the elements in the tensor's logical order, whatever its strides or device;
//!   a tensor of another dtype than `T`'s is an error ([`crate::sys::CTORCH_TYPE`]),
//!   never a silent conversion (convert first: `t.to_dtype(DType::FLOAT32)?`).
//! - `Tensor::try_from(array)`: an owned array in standard (C) order becomes the
//!   tensor's memory without a copy (the tensor owns it); `Tensor::try_from(&array)`,
//!   `Tensor::try_from(array.view())` and any other layout (Fortran order,
//!   transposed, sliced with steps, negative strides) copy, in logical order.
//!
//! ```
//! # fn main() -> ctorch::Result<()> {
//! use ctorch::{DType, Tensor};
//! use ndarray::{array, ArrayD, ShapeBuilder};
//!
//! let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
//! let t = Tensor::try_from(&a)?;                       // a copy; `a` stays usable
//! assert_eq!((t.size(), t.dtype()), (vec![2, 3], DType::FLOAT32));
//! let back = ArrayD::<f32>::try_from(&t.t()?)?;        // a transposed (strided) tensor
//! assert_eq!(back, a.t().into_dyn());
//! let f = ndarray::Array::from_shape_vec((2, 3).f(), vec![1i64, 4, 2, 5, 3, 6]).unwrap();
//! assert_eq!(Tensor::try_from(f.view())?.to_vec::<i64>()?, vec![1, 2, 3, 4, 5, 6]); // Fortran order
//! assert!(ArrayD::<f64>::try_from(&t).is_err());       // float32 is not f64: an error, no panic
//! # Ok(()) }
//! ```
use crate::{sys, Element, Error, Result, Tensor};
use ndarray::{Array, ArrayBase, ArrayView, Data, Dimension, IxDyn};

fn shape_i64(shape: &[usize]) -> Result<Vec<i64>> {
    shape
        .iter()
        .map(|&d| i64::try_from(d).map_err(|_| Error::binding(format!("a dimension of {d} does not fit an i64"))))
        .collect()
}

/// A copy of the array's elements in logical (row-major) order: the memory
/// itself when it is in standard order, else element by element.
fn copy_from<T: Element, S: Data<Elem = T>, D: Dimension>(a: &ArrayBase<S, D>) -> Result<Tensor> {
    let shape = shape_i64(a.shape())?;
    match a.as_slice() {
        Some(s) => Tensor::from_slice(s, &shape),
        None => {
            let v: Vec<T> = a.iter().copied().collect();
            Tensor::from_slice(&v, &shape)
        }
    }
}

/// A new CPU tensor holding a copy of the array (any layout), of its shape and
/// element type.
impl<T: Element, S: Data<Elem = T>, D: Dimension> TryFrom<&ArrayBase<S, D>> for Tensor {
    type Error = Error;
    fn try_from(a: &ArrayBase<S, D>) -> Result<Tensor> {
        copy_from(a)
    }
}

/// A new CPU tensor holding a copy of the viewed elements (any layout).
impl<T: Element, D: Dimension> TryFrom<ArrayView<'_, T, D>> for Tensor {
    type Error = Error;
    fn try_from(a: ArrayView<'_, T, D>) -> Result<Tensor> {
        copy_from(&a)
    }
}

/// A new CPU tensor of the array's shape: over the array's own memory, without a
/// copy, when it is in standard (C) order and holds exactly its elements (the
/// tensor then owns it); otherwise a copy in logical order.
impl<T: Element + Send + 'static, D: Dimension> TryFrom<Array<T, D>> for Tensor {
    type Error = Error;
    fn try_from(a: Array<T, D>) -> Result<Tensor> {
        if a.is_empty() || !a.is_standard_layout() {
            return copy_from(&a);
        }
        let (len, shape) = (a.len(), shape_i64(a.shape())?);
        match a.into_raw_vec_and_offset() {
            (v, Some(0)) if v.len() == len => Tensor::from_vec(v, &shape),
            (v, off) => {
                // Standard order but not the whole Vec (a sliced array): copy its part.
                let start = off.unwrap_or(0);
                match v.get(start..start + len) {
                    Some(s) => Tensor::from_slice(s, &shape),
                    None => Err(Error::binding("Tensor::try_from(Array): the array's memory is not one run")),
                }
            }
        }
    }
}

/// A new array holding a copy of the tensor's elements in logical order (any
/// strides, any device); the tensor's dtype must be `T`'s (else a TYPE error).
impl<T: Element, D: Dimension> TryFrom<&Tensor> for Array<T, D> {
    type Error = Error;
    fn try_from(t: &Tensor) -> Result<Array<T, D>> {
        let dt = t.dtype();
        if dt != T::DTYPE {
            return Err(Error {
                status: sys::CTORCH_TYPE,
                message: format!("ndarray from a tensor: the tensor is {dt} ({dt:?}), the array's elements {} ({:?}); \
                                  convert with to_dtype first", T::DTYPE, T::DTYPE),
            });
        }
        let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
        let v = t.to_vec::<T>()?;
        let a = Array::from_shape_vec(IxDyn(&shape), v)
            .map_err(|e| Error::binding(format!("ndarray from a tensor of shape {shape:?}: {e}")))?;
        a.into_dimensionality::<D>().map_err(|e| Error {
            status: sys::CTORCH_VALUE,
            message: format!("ndarray from a tensor of {} dimension(s): {e}", shape.len()),
        })
    }
}

/// As `Array::try_from(&t)`.
impl<T: Element, D: Dimension> TryFrom<Tensor> for Array<T, D> {
    type Error = Error;
    fn try_from(t: Tensor) -> Result<Array<T, D>> {
        Array::try_from(&t)
    }
}
