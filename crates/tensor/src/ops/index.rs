//! Gathering by index (embedding lookup) and masking.
//!
//! A gather's backward is a scatter-add: each output row's gradient is added
//! to the input row it was read from; rows read twice get both gradients.

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Zip};

use super::check_axis;
use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::Tensor;

impl Tensor {
    /// Picks the entries `indices` along `axis` (repeats allowed).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
    /// assert_eq!(t.index_select(0, &[2, 0, 2]).unwrap().to_vec(), vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0]);
    /// assert_eq!(t.index_select(1, &[1]).unwrap().to_vec(), vec![2.0, 4.0, 6.0]);
    /// assert_eq!(t.index_select(0, &[]).unwrap().shape(), &[0, 2]);
    /// assert!(t.index_select(0, &[3]).is_err());
    /// ```
    pub fn index_select(&self, axis: usize, indices: &[usize]) -> Result<Tensor> {
        check_axis("index_select", self.shape(), axis)?;
        let size = self.shape()[axis];
        if let Some(&bad) = indices.iter().find(|&&i| i >= size) {
            return Err(bad_arg("index_select", format!("index {bad} is out of range for axis {axis} of size {size}")));
        }
        let out = match self.data().as_slice() {
            // Along the first axis of contiguous data each index is one block: copied whole.
            Some(all) if axis == 0 => {
                let block = all.len() / size.max(1);
                let mut out = Vec::with_capacity(indices.len() * block);
                for &i in indices {
                    out.extend_from_slice(&all[i * block..(i + 1) * block]);
                }
                let mut shape = self.shape().to_vec();
                shape[0] = indices.len();
                ArrayD::from_shape_vec(shape, out).expect("one block per index")
            }
            _ => self.data().select(Axis(axis), indices),
        };
        let indices = indices.to_vec();
        Ok(Tensor::from_op("index_select", out, vec![self.clone()], move |b| {
            let mut g = ArrayD::zeros(b.input(0).raw_dim());
            for (k, &i) in indices.iter().enumerate() {
                let mut row = g.index_axis_mut(Axis(axis), i);
                row += &b.grad.index_axis(Axis(axis), k);
            }
            vec![Some(g)]
        }))
    }

    /// Embedding lookup: `self` is the table `(vocab, dim)`, `ids` any shape;
    /// the result has shape `ids.shape() + [dim]`. The row `padding_idx`, if
    /// given, is read as usual but never receives gradient, so padding stays
    /// whatever it was initialised to (PyTorch's `padding_idx`).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let table = Tensor::variable(ndarray::Array2::from_shape_fn((4, 2), |(i, j)| (2 * i + j) as f32).into_dyn());
    /// let ids = ndarray::arr2(&[[3_usize, 0], [1, 1]]).into_dyn();
    /// let e = table.embedding(ids.view(), Some(0)).unwrap();
    /// assert_eq!(e.shape(), &[2, 2, 2]);
    /// assert_eq!(e.to_vec()[..2], [6.0, 7.0]);
    /// let grads = e.sum_all().backward().unwrap();
    /// let per_row = grads.get(&table).unwrap().sum_axis(ndarray::Axis(1));
    /// assert_eq!(per_row.iter().copied().collect::<Vec<f32>>(), vec![0.0, 4.0, 0.0, 2.0]); // row 0 is padding; row 1 read twice
    /// ```
    pub fn embedding(&self, ids: ArrayViewD<'_, usize>, padding_idx: Option<usize>) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(mismatch("embedding", self.shape(), ids.shape(), "the table must be (vocab, dim)"));
        }
        let (vocab, dim) = (self.shape()[0], self.shape()[1]);
        let flat: Vec<usize> = ids.iter().copied().collect();
        if let Some(&bad) = flat.iter().find(|&&i| i >= vocab) {
            return Err(bad_arg("embedding", format!("token id {bad} is out of range for a vocabulary of {vocab}")));
        }
        let mut shape = ids.shape().to_vec();
        shape.push(dim);
        // Row by row as slices: `select` on a dynamic-rank array copies element by element.
        let table = self.data().as_standard_layout();
        let table = table.as_slice().expect("standard layout");
        let mut out = Vec::with_capacity(flat.len() * dim);
        for &id in &flat {
            out.extend_from_slice(&table[id * dim..(id + 1) * dim]);
        }
        let out = ArrayD::from_shape_vec(IxDyn(&shape), out).expect("same element count");
        Ok(Tensor::from_op("embedding", out, vec![self.clone()], move |b| {
            let mut g = ArrayD::zeros(b.input(0).raw_dim());
            let rows = b.grad.view().into_shape_with_order((flat.len(), dim)).expect("same element count");
            for (row, &id) in rows.outer_iter().zip(&flat) {
                if Some(id) != padding_idx {
                    let mut dst = g.index_axis_mut(Axis(0), id);
                    dst += &row;
                }
            }
            vec![Some(g)]
        }))
    }

    /// Replaces the elements where `mask` is true by `value`; `mask` must
    /// broadcast to this shape. Masked elements get no gradient.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    /// let mask = ndarray::arr1(&[false, true]).into_dyn();        // second column, every row
    /// assert_eq!(t.masked_fill(&mask, -9.0).unwrap().to_vec(), vec![1.0, -9.0, 3.0, -9.0]);
    /// assert!(t.masked_fill(&ndarray::arr1(&[true; 3]).into_dyn(), 0.0).is_err());
    /// ```
    pub fn masked_fill(&self, mask: &ArrayD<bool>, value: f32) -> Result<Tensor> {
        let mask = mask
            .broadcast(self.data().raw_dim())
            .ok_or_else(|| {
                mismatch("masked_fill", self.shape(), mask.shape(), "the mask must broadcast to the tensor")
            })?
            .to_owned();
        let out = Zip::from(self.data()).and(&mask).map_collect(|&x, &m| if m { value } else { x });
        Ok(Tensor::from_op("masked_fill", out, vec![self.clone()], move |b| {
            vec![Some(Zip::from(b.grad).and(&mask).map_collect(|&g, &m| if m { 0.0 } else { g }))]
        }))
    }
}
