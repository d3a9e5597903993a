//! Shared by the integration tests: a model made of loose named parameters,
//! and the tolerance check of the PyTorch comparisons.

use lingo_tensor::{Module, Param};

/// Named parameters in a fixed order, as the simplest possible [`Module`].
pub struct Params(pub Vec<Param>);

impl Module for Params {
    fn params(&self) -> Vec<&Param> {
        self.0.iter().collect()
    }
    fn params_mut(&mut self) -> Vec<&mut Param> {
        self.0.iter_mut().collect()
    }
}

/// Asserts `|got - want| ≤ tol · (1 + |want|)` element by element, naming
/// the case, the quantity and the first element that is off.
pub fn assert_close(case: &str, what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{case}: {what} length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{case}: {what}[{i}] = {g}, PyTorch {w}");
    }
}
