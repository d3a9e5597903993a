//! Ops that move elements without changing them: reshape, permute,
//! concatenate, narrow, stack. Their backward rules move the gradient back
//! the same way (reshape back, permute by the inverse, slice the pieces out,
//! pad the slice with zeros).

use ndarray::{ArrayD, Axis, IxDyn, Slice};

use super::check_axis;
use crate::error::{Result, bad_arg, bad_shape, mismatch};
use crate::tensor::Tensor;

impl Tensor {
    /// The same elements in row-major order under a new shape.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    /// assert_eq!(t.reshape(&[3, 2]).unwrap().shape(), &[3, 2]);
    /// assert!(t.reshape(&[4, 2]).is_err());
    /// ```
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if shape.iter().product::<usize>() != self.len() {
            return Err(mismatch("reshape", self.shape(), shape, "element counts differ"));
        }
        let out = self
            .data()
            .as_standard_layout()
            .into_owned()
            .into_shape_with_order(IxDyn(shape))
            .expect("same element count");
        Ok(Tensor::from_op("reshape", out, vec![self.clone()], |b| {
            vec![Some(
                b.grad
                    .as_standard_layout()
                    .into_owned()
                    .into_shape_with_order(b.input(0).raw_dim())
                    .expect("same element count"),
            )]
        }))
    }

    /// Inserts an axis of size 1 at position `axis` (`0..=ndim`).
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::zeros(&[2, 3]);
    /// assert_eq!(t.unsqueeze(1).unwrap().shape(), &[2, 1, 3]);
    /// ```
    pub fn unsqueeze(&self, axis: usize) -> Result<Tensor> {
        if axis > self.ndim() {
            return Err(bad_shape("unsqueeze", self.shape(), format!("axis {axis} is past the end")));
        }
        let mut shape = self.shape().to_vec();
        shape.insert(axis, 1);
        self.reshape(&shape)
    }

    /// Reorders the axes: output axis `i` is input axis `axes[i]`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::zeros(&[2, 3, 4]);
    /// assert_eq!(t.permute(&[2, 0, 1]).unwrap().shape(), &[4, 2, 3]);
    /// assert!(t.permute(&[0, 0, 1]).is_err());
    /// ```
    pub fn permute(&self, axes: &[usize]) -> Result<Tensor> {
        let mut seen = vec![false; self.ndim()];
        for &a in axes {
            if a >= seen.len() || std::mem::replace(&mut seen[a], true) {
                return Err(bad_shape("permute", self.shape(), format!("{axes:?} is not a permutation of the axes")));
            }
        }
        if axes.len() != self.ndim() {
            return Err(bad_shape("permute", self.shape(), format!("{axes:?} is not a permutation of the axes")));
        }
        let out = self.data().view().permuted_axes(IxDyn(axes)).as_standard_layout().into_owned();
        // The inverse permutation sends the gradient back: inverse[axes[i]] = i.
        let mut inverse = vec![0; axes.len()];
        for (i, &a) in axes.iter().enumerate() {
            inverse[a] = i;
        }
        Ok(Tensor::from_op("permute", out, vec![self.clone()], move |b| {
            vec![Some(b.grad.view().permuted_axes(IxDyn(&inverse)).as_standard_layout().into_owned())]
        }))
    }

    /// Swaps two axes.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    /// assert_eq!(t.transpose(0, 1).unwrap().to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// ```
    pub fn transpose(&self, a: usize, b: usize) -> Result<Tensor> {
        check_axis("transpose", self.shape(), a)?;
        check_axis("transpose", self.shape(), b)?;
        let mut axes: Vec<usize> = (0..self.ndim()).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// Joins tensors along an existing `axis`; all other sizes must agree.
    /// A single tensor is returned as it is (the same tensor: no copy, no
    /// graph node).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::ones(&[2, 1]);
    /// let b = Tensor::zeros(&[2, 2]);
    /// let c = Tensor::cat(&[a.clone(), b], 1).unwrap();
    /// assert_eq!(c.to_vec(), vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    /// assert!(Tensor::cat(&[Tensor::ones(&[2, 1]), Tensor::ones(&[3, 1])], 1).is_err());
    /// assert_eq!(Tensor::cat(&[a.clone()], 1).unwrap().id(), a.id());
    /// ```
    pub fn cat(tensors: &[Tensor], axis: usize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| bad_arg("cat", "needs at least one tensor"))?;
        check_axis("cat", first.shape(), axis)?;
        for t in &tensors[1..] {
            let same_rest =
                t.ndim() == first.ndim() && (0..t.ndim()).all(|i| i == axis || t.shape()[i] == first.shape()[i]);
            if !same_rest {
                return Err(mismatch(
                    "cat",
                    first.shape(),
                    t.shape(),
                    format!("sizes must agree on every axis but {axis}"),
                ));
            }
        }
        if let [only] = tensors {
            return Ok(only.clone()); // nothing to join: the tensor itself, no copy, no graph node
        }
        let sizes: Vec<usize> = tensors.iter().map(|t| t.shape()[axis]).collect();
        // Written piece by piece into a row-major result. (`ndarray::concatenate`
        // lays its result out with `axis` outermost in memory: a later op would
        // read `[emb; context]` or `[out_f; out_b]` against the grain and copy it.)
        // Seen as `(outer, len, inner)` around `axis`, each piece is `outer`
        // contiguous runs of `len·inner` floats, copied as slices.
        let mut shape = first.shape().to_vec();
        shape[axis] = sizes.iter().sum();
        let inner: usize = shape[axis + 1..].iter().product();
        let row = shape[axis] * inner; // one outer index of the result
        let mut out = vec![0.0_f32; shape.iter().product()];
        let mut start = 0;
        for (t, &n) in tensors.iter().zip(&sizes) {
            let piece = t.data().as_standard_layout();
            let piece = piece.as_slice().expect("standard layout");
            if n * inner > 0 {
                for (dst, src) in out.chunks_exact_mut(row).zip(piece.chunks_exact(n * inner)) {
                    dst[start * inner..(start + n) * inner].copy_from_slice(src);
                }
            }
            start += n;
        }
        let out = ArrayD::from_shape_vec(IxDyn(&shape), out).expect("the shape's element count");
        Ok(Tensor::from_op("cat", out, tensors.to_vec(), move |b| {
            let grad = b.grad.as_standard_layout();
            let grad = grad.as_slice().expect("standard layout");
            let mut start = 0;
            sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let piece = b.needs(i).then(|| {
                        let mut piece = Vec::with_capacity(b.input(i).len());
                        if row > 0 {
                            for src in grad.chunks_exact(row) {
                                piece.extend_from_slice(&src[start * inner..(start + n) * inner]);
                            }
                        }
                        ArrayD::from_shape_vec(b.input(i).raw_dim(), piece).expect("the input's element count")
                    });
                    start += n;
                    piece
                })
                .collect()
        }))
    }

    /// Stacks equally shaped tensors along a new `axis`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let s = Tensor::stack(&[Tensor::zeros(&[3]), Tensor::ones(&[3])], 0).unwrap();
    /// assert_eq!(s.shape(), &[2, 3]);
    /// ```
    pub fn stack(tensors: &[Tensor], axis: usize) -> Result<Tensor> {
        let expanded = tensors.iter().map(|t| t.unsqueeze(axis)).collect::<Result<Vec<_>>>()?;
        Tensor::cat(&expanded, axis)
    }

    /// The slice `start..start + len` of `axis`; the whole axis is the
    /// tensor itself (no copy, no graph node).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]).unwrap();
    /// assert_eq!(t.narrow(0, 1, 2).unwrap().to_vec(), vec![2.0, 3.0]);
    /// assert!(t.narrow(0, 3, 2).is_err());
    /// assert_eq!(t.narrow(0, 0, 4).unwrap().id(), t.id());
    /// ```
    pub fn narrow(&self, axis: usize, start: usize, len: usize) -> Result<Tensor> {
        check_axis("narrow", self.shape(), axis)?;
        let size = self.shape()[axis];
        if start + len > size {
            return Err(bad_shape(
                "narrow",
                self.shape(),
                format!("{start}..{} is past the end of axis {axis}", start + len),
            ));
        }
        if start == 0 && len == size {
            return Ok(self.clone()); // the whole axis: the tensor itself, no copy, no graph node
        }
        let range = Slice::from(start..start + len);
        let out = self.data().slice_axis(Axis(axis), range).to_owned();
        Ok(Tensor::from_op("narrow", out, vec![self.clone()], move |b| {
            let mut g = ArrayD::zeros(b.input(0).raw_dim());
            g.slice_axis_mut(Axis(axis), range).assign(b.grad);
            vec![Some(g)]
        }))
    }

    /// Cuts `axis` into consecutive pieces of the given sizes (which must add up to it).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]).unwrap();
    /// let parts = t.split(0, &[1, 2]).unwrap();
    /// assert_eq!(parts[1].to_vec(), vec![2.0, 3.0]);
    /// assert!(t.split(0, &[1, 1]).is_err());
    /// ```
    pub fn split(&self, axis: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
        check_axis("split", self.shape(), axis)?;
        if sizes.iter().sum::<usize>() != self.shape()[axis] {
            return Err(bad_shape("split", self.shape(), format!("sizes {sizes:?} do not add up to axis {axis}")));
        }
        if sizes.len() == 1 {
            return Ok(vec![self.clone()]);
        }
        // One op with a piece per output: the backward writes each piece's
        // gradient into one buffer, instead of one zero-filled input-sized
        // gradient per piece for the tape to add up.
        let ranges: Vec<Slice> = sizes
            .iter()
            .scan(0, |start, &n| {
                *start += n;
                Some(Slice::from(*start - n..*start))
            })
            .collect();
        let pieces = ranges.iter().map(|&r| self.data().slice_axis(Axis(axis), r).to_owned()).collect();
        Ok(Tensor::from_op_multi("split", pieces, vec![self.clone()], move |b| {
            let mut g = ArrayD::zeros(b.input(0).raw_dim());
            for (k, &range) in ranges.iter().enumerate() {
                if let Some(piece) = b.grad(k) {
                    g.slice_axis_mut(Axis(axis), range).assign(piece);
                }
            }
            vec![Some(g)]
        }))
    }
}
