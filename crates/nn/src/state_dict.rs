//! A model's weights by name: what a checkpoint stores and loads.

use std::collections::HashSet;

use lingo_tensor::{Module, Param};
use ndarray::{ArrayD, IxDyn};
use serde::{Deserialize, Serialize};

use crate::error::{ParamProblem, Result, config, param};

/// One saved parameter: its name, shape and values in row-major order.
///
/// ```
/// let t = lingo_nn::NamedTensor { name: "out.bias".into(), shape: vec![2], data: vec![0.5, -0.5] };
/// assert_eq!(t.to_array().unwrap()[[1]], -0.5);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedTensor {
    /// The parameter's full name, e.g. `decoder.embedding.weight`.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major.
    pub data: Vec<f32>,
}

impl NamedTensor {
    /// A copy of a parameter's current values.
    ///
    /// ```
    /// let p = lingo_tensor::Param::new("w", ndarray::ArrayD::ones(vec![2, 1]));
    /// let t = lingo_nn::NamedTensor::from_param(&p);
    /// assert_eq!((t.name.as_str(), t.shape.as_slice(), t.data.as_slice()), ("w", &[2, 1][..], &[1.0, 1.0][..]));
    /// ```
    pub fn from_param(p: &Param) -> NamedTensor {
        NamedTensor { name: p.name().to_owned(), shape: p.shape().to_vec(), data: p.tensor().to_vec() }
    }

    /// The values as an array of the stored shape; errors (naming the
    /// parameter) when the number of values does not fit the shape.
    ///
    /// ```
    /// let bad = lingo_nn::NamedTensor { name: "w".into(), shape: vec![3], data: vec![1.0] };
    /// assert_eq!(bad.to_array().unwrap_err().to_string(), "parameter w: 1 values stored for 3 elements");
    /// ```
    pub fn to_array(&self) -> Result<ArrayD<f32>> {
        // Saturating: a shape read from a corrupt file may overflow `usize`
        // (found by fuzzing); no data can then fill it, and ndarray says so.
        let expected = self.shape.iter().fold(1_usize, |n, &d| n.saturating_mul(d));
        ArrayD::from_shape_vec(IxDyn(&self.shape), self.data.clone())
            .map_err(|_| param(&self.name, ParamProblem::Length { expected, found: self.data.len() }))
    }
}

/// Every parameter of a model by name, in the model's order (PyTorch's
/// `state_dict()`): save with [`StateDict::from_module`], restore with
/// [`StateDict::load_into`].
///
/// ```
/// use lingo_nn::{Init, Linear, StateDict};
/// use lingo_tensor::Module;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let a = Linear::new("out", 3, 2, true, Init::PyTorch, &mut rng).unwrap();
/// let mut b = Linear::new("out", 3, 2, true, Init::PyTorch, &mut rng).unwrap();
/// StateDict::from_module(&a).unwrap().load_into(&mut b).unwrap();
/// assert_eq!(a.weight().tensor().to_vec(), b.weight().tensor().to_vec());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateDict {
    tensors: Vec<NamedTensor>,
}

impl StateDict {
    /// A copy of every parameter of `model`; errors when two share a name.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let emb = lingo_nn::Embedding::new("encoder.embedding", 5, 2, Some(0), lingo_nn::Init::default(), &mut rng).unwrap();
    /// let dict = lingo_nn::StateDict::from_module(&emb).unwrap();
    /// assert_eq!(dict.get("encoder.embedding.weight").unwrap().shape, vec![5, 2]);
    /// ```
    pub fn from_module(model: &dyn Module) -> Result<StateDict> {
        let params = model.params();
        check_unique(params.iter().map(|p| p.name()))?;
        Ok(StateDict { tensors: params.into_iter().map(NamedTensor::from_param).collect() })
    }

    /// Builds a dict from saved tensors (kept in the given order).
    ///
    /// ```
    /// let t = lingo_nn::NamedTensor { name: "b".into(), shape: vec![1], data: vec![2.0] };
    /// assert_eq!(lingo_nn::StateDict::from_tensors(vec![t]).len(), 1);
    /// ```
    pub fn from_tensors(tensors: Vec<NamedTensor>) -> StateDict {
        StateDict { tensors }
    }

    /// Copies the saved values into `model`. Strict, like PyTorch's
    /// `load_state_dict(strict=True)`: every parameter of the model must be
    /// present with its shape, and nothing else may be; otherwise the error
    /// names the first offending parameter and the model is left unchanged.
    ///
    /// ```
    /// use lingo_nn::{Error, Init, Linear, ParamProblem, StateDict};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let small = Linear::new("out", 3, 2, true, Init::default(), &mut rng).unwrap();
    /// let mut big = Linear::new("out", 3, 4, true, Init::default(), &mut rng).unwrap();
    /// let err = StateDict::from_module(&small).unwrap().load_into(&mut big).unwrap_err();
    /// assert!(matches!(&err, Error::Param { name, problem: ParamProblem::Shape { .. } } if name == "out.weight"));
    /// assert_eq!(err.to_string(), "parameter out.weight: shape [2, 3] does not fit the model's [4, 3]");
    /// ```
    pub fn load_into(&self, model: &mut dyn Module) -> Result<()> {
        check_unique(self.tensors.iter().map(|t| t.name.as_str()))?;
        let mut params = model.params_mut();
        check_unique(params.iter().map(|p| p.name()))?;
        // Check everything first, so a failed load changes nothing.
        let arrays = params.iter().map(|p| self.array(p.name(), p.shape())).collect::<Result<Vec<_>>>()?;
        self.check_no_extra(params.iter().map(|p| p.name()))?;
        for (p, data) in params.iter_mut().zip(arrays) {
            p.set(data)?;
        }
        Ok(())
    }

    /// The saved tensor `name` as an array, which must be there with `shape`:
    /// otherwise an [`Error::Param`](crate::Error::Param) naming it, missing
    /// or of another shape.
    pub(crate) fn array(&self, name: &str, shape: &[usize]) -> Result<ArrayD<f32>> {
        self.matching(name, shape)?.to_array()
    }

    /// The saved tensor `name`, which must be there with `shape`.
    fn matching(&self, name: &str, shape: &[usize]) -> Result<&NamedTensor> {
        let t = self.get(name).ok_or_else(|| param(name, ParamProblem::Missing))?;
        if t.shape != shape {
            return Err(param(name, ParamProblem::Shape { expected: shape.to_vec(), found: t.shape.clone() }));
        }
        Ok(t)
    }

    /// The element-wise mean of several dicts of one model,
    /// `θ̄ = (1/N) Σᵢ θᵢ`: averaging the weights of a run's last checkpoints
    /// (fairseq's `average_checkpoints.py`, OpenNMT's `average_models.py`).
    /// Each dict must hold exactly the first one's names and shapes; the
    /// error names the first tensor that differs. Sums run in the dicts'
    /// order, so the result is the same bits every time.
    ///
    /// ```
    /// use lingo_nn::{NamedTensor, StateDict};
    /// let dict = |w: Vec<f32>| StateDict::from_tensors(vec![NamedTensor { name: "w".into(), shape: vec![2], data: w }]);
    /// let mean = StateDict::average(&[dict(vec![1.0, 2.0]), dict(vec![3.0, -2.0])]).unwrap();
    /// assert_eq!(mean.get("w").unwrap().data, [2.0, 0.0]);
    /// assert!(StateDict::average(&[]).is_err());
    /// ```
    pub fn average(dicts: &[StateDict]) -> Result<StateDict> {
        let (first, rest) = dicts.split_first().ok_or_else(|| config("average", "needs at least one state dict"))?;
        let n = dicts.len() as f32;
        let tensors = first.tensors.iter().map(|t| {
            let others = rest.iter().map(|dict| dict.matching(&t.name, &t.shape)).collect::<Result<Vec<_>>>()?;
            if let Some(short) = others.iter().find(|o| o.data.len() != t.data.len()) {
                return Err(param(&t.name, ParamProblem::Length { expected: t.data.len(), found: short.data.len() }));
            }
            let data = (0..t.data.len()).map(|i| others.iter().fold(t.data[i], |sum, o| sum + o.data[i]) / n).collect();
            Ok(NamedTensor { name: t.name.clone(), shape: t.shape.clone(), data })
        });
        let tensors = tensors.collect::<Result<Vec<_>>>()?;
        for dict in rest {
            dict.check_no_extra(tensors.iter().map(|t| t.name.as_str()))?;
        }
        Ok(StateDict { tensors })
    }

    /// Strict loading's last check: every saved tensor is one the model
    /// `wanted`; otherwise an error naming the first that is not.
    pub(crate) fn check_no_extra<'a>(&self, wanted: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let wanted: HashSet<&str> = wanted.into_iter().collect();
        match self.tensors.iter().find(|t| !wanted.contains(t.name.as_str())) {
            Some(extra) => Err(param(&extra.name, ParamProblem::Unexpected)),
            None => Ok(()),
        }
    }

    /// The saved tensor called `name`.
    ///
    /// ```
    /// assert!(lingo_nn::StateDict::default().get("out.weight").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<&NamedTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Every saved tensor, in the model's order.
    ///
    /// ```
    /// assert!(lingo_nn::StateDict::default().tensors().is_empty());
    /// ```
    pub fn tensors(&self) -> &[NamedTensor] {
        &self.tensors
    }

    /// How many tensors are saved.
    ///
    /// ```
    /// assert_eq!(lingo_nn::StateDict::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether nothing is saved.
    ///
    /// ```
    /// assert!(lingo_nn::StateDict::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }
}

/// Errors (naming it) on the first name that occurs twice.
pub(crate) fn check_unique<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = HashSet::new();
    match names.into_iter().find(|n| !seen.insert(*n)) {
        Some(dup) => Err(param(dup, ParamProblem::Duplicate)),
        None => Ok(()),
    }
}
